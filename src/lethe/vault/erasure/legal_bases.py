"""The legal bases an erasure request may cite: codes from a documented list, each with its words.

A request's ``legal_basis`` is signed into its certificate, so it must say something a
reader can check: a code from this list (or one the deployment adds by setting, e.g.
a national law), never free text. Records and certificates keep the code; people are
shown the words (console, CLI, the certificate's HTML/PDF rendering).

Exceptions: ``InvalidCommand`` (422) from ``LegalBases.check`` for a code not in the
vocabulary (the message lists the accepted codes), and from ``LegalBases.__init__`` for
a deployment's code that is malformed or redefines a standard one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lethe.vault.errors import InvalidCommand

_GDPR_17_1 = {
    "a": "no longer necessary for the purposes they were collected or processed for",
    "b": "consent withdrawn and no other legal ground for the processing",
    "c": "objection to the processing (Art. 21) with no overriding legitimate grounds",
    "d": "processed unlawfully",
    "e": "erasure required by a legal obligation",
    "f": "a child's data collected for information society services (Art. 8(1))",
}

STANDARD: dict[str, str] = {
    **{f"gdpr-art17-1{p}": f"GDPR Art. 17(1)({p}): {w}" for p, w in _GDPR_17_1.items()},
    **{f"uk-gdpr-art17-1{p}": f"UK GDPR Art. 17(1)({p}): {w}" for p, w in _GDPR_17_1.items()},
    "ccpa-1798.105": "CCPA § 1798.105: the consumer's request to delete personal information",
    "lgpd-art18-vi": "LGPD Art. 18(VI): deletion of data processed with the data subject's consent",
    "voluntary": "Voluntary: erased at the subject's wish, no statutory right invoked",
}

CODE = re.compile(r"^[a-z0-9][a-z0-9.\-]{0,63}$")
MAX_WORDS = 200


class LegalBases:
    """The vocabulary in force: the standard codes plus a deployment's own (``extra``)."""

    def __init__(self, extra: Mapping[str, str] | None = None) -> None:
        extra = dict(extra or {})
        for code, words in extra.items():
            if not CODE.match(code):
                raise InvalidCommand(f"legal basis code {code!r}: lower-case letters, digits, '.', '-' only")
            if code in STANDARD:
                raise InvalidCommand(f"legal basis code {code!r} is a standard code; it cannot be redefined")
            if not isinstance(words, str) or not words.strip() or len(words) > MAX_WORDS:
                raise InvalidCommand(f"legal basis code {code!r} needs words (1 to {MAX_WORDS} characters)")
        self.codes: dict[str, str] = {**STANDARD, **{c: w.strip() for c, w in extra.items()}}

    def check(self, code: str) -> str:
        """The code itself if it is in the vocabulary; else a 422 that lists every accepted code."""
        if code in self.codes:
            return code
        raise InvalidCommand("legal_basis must be one of: " + ", ".join(self.codes))

    def words(self, code: str | None) -> str:
        """What people read for a code; an unknown one (an older free-text basis) as it was filed."""
        if not code:
            return "-"
        return self.codes.get(code, code)

    def choices(self) -> list[tuple[str, str]]:
        """(code, words) in the documented order, for a form's select list."""
        return list(self.codes.items())


def words(code: str | None) -> str:
    """The standard words for a code (a deployment's own codes read as filed)."""
    return LegalBases().words(code)
