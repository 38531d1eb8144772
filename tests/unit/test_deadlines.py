"""Deadline arithmetic as GDPR Art. 12(3) counts it: calendar months, not 30 days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lethe.vault.erasure.deadlines import add_months, due_date, first_month_ends, standing


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("received", "months", "due"),
    [
        ("2026-01-31T10:00:00", 1, "2026-02-28T10:00:00"),  # the last day of February
        ("2024-01-31T10:00:00", 1, "2024-02-29T10:00:00"),  # ... in a leap year
        ("2024-01-30T23:59:59", 1, "2024-02-29T23:59:59"),
        ("2024-02-29T08:00:00", 1, "2024-03-29T08:00:00"),  # 29 February is a day like any other
        ("2024-02-29T08:00:00", 12, "2025-02-28T08:00:00"),  # ... that the next year lacks
        ("2026-03-31T00:00:00", 1, "2026-04-30T00:00:00"),
        ("2026-12-31T12:00:00", 1, "2027-01-31T12:00:00"),  # across the year end
        ("2026-11-30T12:00:00", 3, "2027-02-28T12:00:00"),
        ("2026-03-15T09:30:00", 1, "2026-04-15T09:30:00"),
        ("2026-01-31T10:00:00", 3, "2026-04-30T10:00:00"),  # one month plus a two-month extension
    ],
)
def test_calendar_months_keep_the_day_or_fall_back_to_the_months_last_day(received, months, due):
    assert add_months(at(received), months) == at(due)


def test_the_due_date_is_one_month_plus_extension_plus_stopped_time():
    received = at("2026-01-31T10:00:00")
    assert due_date(received) == at("2026-02-28T10:00:00")
    assert due_date(received, 2) == at("2026-04-30T10:00:00")
    assert due_date(received, 1, timedelta(days=3)) == at("2026-04-03T10:00:00")
    assert first_month_ends(received, timedelta(hours=5)) == at("2026-02-28T15:00:00")


def test_days_left_counts_whole_days_and_goes_negative_once_overdue():
    due = at("2026-02-28T10:00:00")
    assert standing(due, at("2026-02-01T10:00:00")).days_left == 27
    assert standing(due, at("2026-02-28T09:00:00")).days_left == 0
    late = standing(due, at("2026-03-02T11:00:00"))
    assert late.overdue and late.days_left == -3
    done = standing(due, at("2026-03-02T11:00:00"), completed_at=at("2026-03-01T00:00:00"))
    assert done.days_left is None and not done.overdue


def test_a_stopped_clock_freezes_days_left_and_moves_the_shown_due_date():
    due, paused_at = at("2026-02-28T10:00:00"), at("2026-02-20T10:00:00")
    later = standing(due, at("2026-03-10T10:00:00"), paused_at=paused_at)
    assert later.days_left == 8 and not later.overdue
    assert later.due_at == at("2026-03-18T10:00:00")  # if the clock restarted now
    already_late = standing(due, at("2026-03-10T10:00:00"), paused_at=at("2026-03-01T10:00:00"))
    assert already_late.overdue
