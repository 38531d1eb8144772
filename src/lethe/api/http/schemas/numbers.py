"""The API's bounded numbers, and the one way a console form's text becomes one of them.

A JSON body gives these types an integer (strict: ``"5"`` is a 422); a console form gives
their text to ``from_form``, which parses it with the same type's bounds, so the console
refuses exactly what the API refuses, and a value such as ``"²"`` (``str.isdigit`` says
yes, ``int`` fails) or 5,000 digits is a 422 page, never a 500
(tests/api/test_console_numbers.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from lethe.vault.access.tokens import MAX_TOKEN_TTL
from lethe.vault.erasure.deadlines import MAX_EXTENSION_MONTHS
from lethe.vault.errors import InvalidCommand
from lethe.vault.memory.validation import MAX_VERSION

SECONDS_PER_DAY = 86_400

Version = Annotated[int, Field(ge=1, le=MAX_VERSION, strict=True, description="The current version.")]
TokenTtlSeconds = Annotated[int, Field(gt=0, le=int(MAX_TOKEN_TTL.total_seconds()), strict=True)]
ExtensionMonths = Annotated[
    int, Field(ge=1, le=MAX_EXTENSION_MONTHS, strict=True, description="1 or 2, at most 2 in total")
]
# A form's whole number before it is scaled (days to seconds): pydantic's parser, which
# refuses non-ASCII digits and caps the length, not ``int``, which takes "²"-like digits
# only to fail and converts any length.
WholeNumber = Annotated[int, Field(strict=True)]

_ADAPTERS: dict[Any, TypeAdapter[int]] = {}


def _adapter(kind: Any) -> TypeAdapter[int]:
    adapter = _ADAPTERS.get(kind)
    return adapter if adapter is not None else _ADAPTERS.setdefault(kind, TypeAdapter(kind))


def from_form(kind: Any, text: str, refusal: str) -> int:
    """``text`` (a form field) as the bounded integer type ``kind``, or ``InvalidCommand``
    saying ``refusal`` (the value itself is not echoed)."""
    try:
        return _adapter(kind).validate_strings(text)
    except ValidationError:
        raise InvalidCommand(refusal) from None


def days_from_form(text: str, bounded: Any, refusal: str) -> int:
    """A lifetime in whole days from a form, as seconds checked against the API's ``bounded``."""
    days = from_form(WholeNumber, text, refusal)
    try:
        return _adapter(bounded).validate_python(days * SECONDS_PER_DAY)
    except ValidationError:
        raise InvalidCommand(refusal) from None
