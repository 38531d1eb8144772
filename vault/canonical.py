"""Canonical JSON (RFC 8785, JCS): one byte string per value, for hashing and signing.

Audit events and erasure certificates are hashed and signed over these bytes, so any
party (an auditor in another language included) can recompute them from the parsed
JSON. What the canonical form is:
- no whitespace; object members sorted by the UTF-16 code units of their names
  (not by code point, not by locale); strings as UTF-8, never normalised, with only
  ``"``, ``\\`` and controls below U+0020 escaped;
- numbers serialised as ECMAScript does (IEEE 754 double precision).

What callers must therefore keep to:
- Prefer integers and strings. Integers must lie within +/-(2**53 - 1); put larger
  values (nanosecond timestamps, 64-bit ids) in strings.
- Avoid floats. When one is unavoidable it must be finite (NaN and infinities are
  rejected) and it is serialised by its shortest round-trip form, so only values
  that survive a float round trip are stable (encode money, scores and fractions as
  strings or scaled integers instead).
- Keys must be strings; values must be ``None``, ``bool``, ``int``, ``float``,
  ``str``, ``list``/``tuple`` or ``dict``. Strings must be valid Unicode (no lone
  surrogates). Bytes must be encoded first (e.g. base64 or hex).

Exceptions:
- ``CanonicalJsonError`` (a ``ValueError``): the value cannot be canonicalised (an
  out-of-range integer, a non-finite float, a non-string key, an unsupported type
  or a string that is not valid Unicode).
"""

from __future__ import annotations

from typing import Any

import rfc8785

__all__ = ["CanonicalJsonError", "canonical_json"]


class CanonicalJsonError(ValueError):
    """The value has no RFC 8785 canonical form."""


def canonical_json(obj: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 serialisation of ``obj``."""
    try:
        return rfc8785.dumps(obj)
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalJsonError(str(exc)) from exc
    except UnicodeError as exc:
        # rfc8785 lets this escape for an object key holding a lone surrogate.
        raise CanonicalJsonError("a string is not valid Unicode") from exc
    except RecursionError as exc:
        raise CanonicalJsonError("value is nested too deeply") from exc
