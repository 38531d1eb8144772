"""Deadlines as GDPR Art. 12(3) counts them: calendar months, one extension, a stopped clock.

Pure arithmetic, no storage; ``ErasureDeadlines`` (``erasure.deadline_service``) applies it.

- A request is due one **calendar month** after it was received, at the same time of
  day: 15 March -> 15 April, and a day the later month lacks becomes its last day
  (31 January -> 28 February, or 29 February in a leap year; 29 February + 12 months
  -> 28 February). Regulation 1182/71 would let the period run to the end of that day;
  Lethe keeps the time of receipt because "the end of the day" depends on a time zone
  the request does not carry, and the earlier instant is never late.
- An **extension** adds up to two further months *in total* (``MAX_EXTENSION_MONTHS``),
  counted from receipt like the first (received 31 January, extended by 2 -> 30 April).
- While identity is being verified the **clock stops** (``paused_at``); resuming adds
  the stopped time to the due date. A stopped clock also stops ``days_left``, and a
  request cannot become overdue while paused (one already overdue stays so).

Exceptions: none; callers validate what they pass.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import datetime, timedelta

BASE_MONTHS = 1  # Art. 12(3): "within one month of receipt of the request"
MAX_EXTENSION_MONTHS = 2  # "...may be extended by two further months where necessary"


def add_months(moment: datetime, months: int) -> datetime:
    """``months`` calendar months later at the same time of day; a missing day is the month's last."""
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def due_date(received_at: datetime, extension_months: int = 0, stopped: timedelta = timedelta(0)) -> datetime:
    """When a request received at ``received_at`` is due, given its extension and stopped time."""
    return add_months(received_at, BASE_MONTHS + extension_months) + stopped


def first_month_ends(received_at: datetime, stopped: timedelta = timedelta(0)) -> datetime:
    """The end of the first month: the subject must be told of an extension by then."""
    return due_date(received_at, 0, stopped)


@dataclass(frozen=True)
class Standing:
    """Where a request stands against its deadline at one moment."""

    due_at: datetime  # while paused: when it would be due if the clock restarted now
    days_left: int | None  # whole days before due_at (0: under a day, negative: days late); None if done
    overdue: bool


def standing(
    due_at: datetime, now: datetime, paused_at: datetime | None = None, completed_at: datetime | None = None
) -> Standing:
    """The request's standing at ``now``; a paused clock counts from ``paused_at`` instead."""
    if completed_at is not None:
        return Standing(due_at, None, False)
    left = due_at - (paused_at if paused_at is not None else now)
    shown = now + left if paused_at is not None else due_at
    return Standing(shown, left.days, left < timedelta(0))
