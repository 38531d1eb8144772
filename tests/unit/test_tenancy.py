"""``store.tenancy``: which tenant a transaction acts for, and how it is sent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lethe.vault.store import tenancy
from lethe.vault.store.tables import metadata
from tests.conftest import agent


def test_a_scope_for_one_tenant_cannot_be_opened_inside_anothers() -> None:
    with tenancy.acting_for("t1"):
        with tenancy.acting_for("t1"):  # the same tenant again: fine
            assert tenancy.current() == tenancy.Scope(tenant="t1")
        with pytest.raises(RuntimeError), tenancy.acting_for("t2"):
            pass
        with tenancy.maintenance("a named job"):  # explicit, named: the only way wider
            assert tenancy.current() == tenancy.Scope(maintenance="a named job")
        assert tenancy.current().tenant == "t1"
    assert tenancy.current() == tenancy.UNSCOPED  # the default reaches no tenant and is no maintenance


def test_a_service_method_acts_for_its_callers_tenant() -> None:
    class Service:
        @tenancy.for_caller
        def work(self, caller: object, other: int = 0) -> tenancy.Scope:
            return tenancy.current()

    assert Service().work(agent("t7")).tenant == "t7"
    assert Service().work(caller=agent("t8"), other=1).tenant == "t8"
    assert tenancy.current() == tenancy.UNSCOPED


def test_the_tenant_setting_is_quoted_and_nul_is_refused() -> None:
    assert tenancy.transaction_setting(tenancy.Scope(tenant="a'b")) == "SET LOCAL lethe.tenant TO 'a''b'"
    assert tenancy.session_setting(tenancy.UNSCOPED) == "SET lethe.tenant TO ''"
    with pytest.raises(ValueError):
        tenancy.literal("a\x00b")


def test_every_table_is_walled_or_named_store_wide() -> None:
    """A table a migration adds with a tenant column, and not listed in ``tenancy``, fails
    here: it must be walled (a policy and ``TENANT_TABLES``) or named store-wide, with why."""
    walled, store_wide = set(tenancy.WALLED_TABLES), set(tenancy.STORE_WIDE_TABLES)
    assert not walled & store_wide
    assert set(metadata.tables) == (walled | store_wide) - {"alembic_version"}
    tenant_scoped = {name for name, table in metadata.tables.items() if "tenant_id" in table.c}
    assert tenant_scoped - walled == {"events"}  # the one log over every tenant, named store-wide
    assert {"erasure_filings", "agent_sessions"} <= set(tenancy.TENANT_TABLES)
    by_job = {name for name, table in metadata.tables.items() if "job_id" in table.c and name not in walled}
    assert by_job == set(), by_job


def test_every_maintenance_path_the_code_opens_is_listed_in_the_operations_doc() -> None:
    """The named jobs that may span tenants are exactly those docs/operations.md lists: a new
    ``maintenance("…")`` in the product fails here until it is documented (and a listed name
    the code no longer opens fails too)."""
    root = Path(__file__).resolve().parents[2]
    opened = {
        name
        for path in (root / "src" / "lethe").rglob("*.py")
        for name in re.findall(r'maintenance(?:_job)?\("([^"]+)"\)', path.read_text())
    }
    assert {"erasure runner", "expiry sweep", "compaction", "backup"} <= opened  # the scan finds them
    doc = (root / "docs" / "operations.md").read_text()
    listed = doc.split("These are all the maintenance\nnames the product uses:")[1].split("(and")[0]
    assert set(re.findall(r"`([^`]+)`", listed)) == opened
