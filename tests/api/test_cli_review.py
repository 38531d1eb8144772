"""``lethe review`` and ``lethe retract`` refuse bad input readably, exit 1 and write nothing."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from lethe.api.cli import app as cli
from lethe.api.settings import Settings
from lethe.vault.model import SourceType
from tests.api.conftest import Api
from tests.conftest import agent, write_cmd


@pytest.fixture
def lethe_cli(api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LETHE_DATA_DIR", str(settings.data_dir))
    if settings.database_url:
        monkeypatch.setenv("LETHE_DATABASE_URL", settings.database_url)
    else:
        monkeypatch.delenv("LETHE_DATABASE_URL", raising=False)
    return lambda *args: CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("retract", "--tenant", "t1", "--reason", "x"), "exactly one of memory_id and source_ref"),
        (
            (
                "retract",
                "--tenant",
                "t1",
                "--memory-id",
                "00000000-0000-4000-8000-000000000000",
                "--reason",
                "x",
            ),
            "Not found",
        ),
        (("review", "show", "00000000-0000-4000-8000-000000000000", "--tenant", "t1"), "Not found"),
        (("review", "list", "--tenant", "t1", "--cursor", "bm9wZQ"), "cursor is not valid"),
    ],
)
def test_bad_input_exits_1_with_a_readable_message_and_writes_nothing(
    api: Api, lethe_cli, args, says
) -> None:  # type: ignore[no-untyped-def]
    before = api.events()
    result = lethe_cli(*args)
    assert result.exit_code == 1, result.output
    assert says in result.stderr and "Traceback" not in result.output
    assert api.events() == before


def test_promoting_an_active_memory_exits_1_naming_the_rule(api: Api, lethe_cli) -> None:  # type: ignore[no-untyped-def]
    active = api.container.memories.write(agent(), write_cmd("tea")).item
    result = lethe_cli("review", "promote", active.id, "--tenant", "t1", "--expected-version", "1")
    assert result.exit_code == 1 and "only a quarantined memory can be promoted" in result.stderr


def test_the_review_list_shows_content_and_provenance_for_people(api: Api, lethe_cli) -> None:  # type: ignore[no-untyped-def]
    item = api.container.memories.write(agent(), write_cmd("tea [bold]page", source=SourceType.WEB_PAGE)).item
    result = lethe_cli("review", "show", item.id, "--tenant", "t1")
    assert result.exit_code == 0, result.output
    assert "tea [bold]page" in result.stdout and "web_page" in result.stdout and item.id in result.stdout
