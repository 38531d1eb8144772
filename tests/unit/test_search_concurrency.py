"""A server process runs one search at a time on SQLite and two on PostgreSQL, unless
``LETHE_SEARCH_CONCURRENCY`` says otherwise (``Settings.searches_at_once``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lethe.api.server.app import create_app
from lethe.api.settings import Settings

POSTGRES = "postgresql+psycopg://lethe@127.0.0.1:5432/lethe"  # never connected to: no lifespan runs


def limiter_tokens(settings: Settings) -> float:
    return create_app(settings).state.search_limiter.total_tokens


def test_sqlite_runs_one_search_at_a_time(tmp_path: Path) -> None:
    assert limiter_tokens(Settings(data_dir=tmp_path)) == 1


def test_postgres_runs_two_searches_at_a_time(tmp_path: Path) -> None:
    assert limiter_tokens(Settings(data_dir=tmp_path, database_url=POSTGRES)) == 2


@pytest.mark.parametrize("url", [None, POSTGRES])
def test_the_setting_wins_on_either_database(tmp_path: Path, monkeypatch, url: str | None) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LETHE_SEARCH_CONCURRENCY", "3")
    assert limiter_tokens(Settings(data_dir=tmp_path, database_url=url)) == 3


def test_a_concurrency_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="search_concurrency"):
        Settings(data_dir=tmp_path, search_concurrency=0)
