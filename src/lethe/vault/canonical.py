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

import json
from typing import Any

import rfc8785

__all__ = ["CanonicalJsonError", "canonical_json"]


class CanonicalJsonError(ValueError):
    """The value has no RFC 8785 canonical form."""


_MAX_SAFE_INT = 2**53 - 1


def _stdlib_agrees(obj: Any) -> bool:
    """True when ``json.dumps(sort_keys=True)`` is byte-identical to RFC 8785 for ``obj``.

    That holds for ASCII keys (code-point order equals UTF-16 order), safe integers,
    strings without lone surrogates, and non-integral floats whose shortest form Python
    and ECMAScript both write in plain decimal (1e-4 <= |x| < 1e16). The event
    log canonicalises every event, and the pure-Python rfc8785 is ~20x slower, so
    the common case takes this path; everything else goes to rfc8785.
    """
    stack = [obj]
    while stack:
        o = stack.pop()
        t = type(o)
        if t is str:
            if not o.isascii():
                try:
                    o.encode()
                except UnicodeEncodeError:  # a lone surrogate
                    return False
        elif t is dict:
            for k, v in o.items():
                if type(k) is not str or not k.isascii():
                    return False
                stack.append(v)
        elif t is list or t is tuple:
            stack.extend(o)
        elif t is int:
            if not -_MAX_SAFE_INT <= o <= _MAX_SAFE_INT:
                return False
        elif t is float:
            if o.is_integer() or not 1e-4 <= abs(o) < 1e16:
                return False
        elif o is not None and t is not bool:
            return False
        if len(stack) > 100_000:
            return False
    return True


def canonical_json(obj: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 serialisation of ``obj``."""
    if _stdlib_agrees(obj):
        try:
            return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        except RecursionError as exc:
            raise CanonicalJsonError("value is nested too deeply") from exc
    try:
        return rfc8785.dumps(obj)
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalJsonError(str(exc)) from exc
    except UnicodeError as exc:
        # rfc8785 lets this escape for an object key holding a lone surrogate.
        raise CanonicalJsonError("a string is not valid Unicode") from exc
    except RecursionError as exc:
        raise CanonicalJsonError("value is nested too deeply") from exc
