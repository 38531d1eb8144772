"""``store.tenancy``: which tenant a transaction acts for, and how it is sent."""

from __future__ import annotations

import pytest

from lethe.vault.store import tenancy
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
