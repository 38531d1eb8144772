"""A pytest plugin: which tests share a pytest-xdist worker (``scripts/test.sh`` runs the suite
with ``--dist loadgroup``).

A test that uses a module- or package-scoped fixture (a ``lethe serve``, a private PostgreSQL,
the browser and its console server) runs on the same worker as the rest of that module or
package: split over workers, each worker would start its own copy and the suite would pay
for the fixture once per worker instead of once. Such tests are given the ``xdist_group``
of their module (or package); a test marked with a group of its own keeps it. Other tests go
one by one to whichever worker is free. Serial runs are unaffected (the mark is then unused).
"""

from __future__ import annotations

import pytest

_SHARED = {"module", "package"}


def shared_scope(item: pytest.Item) -> str | None:
    """The group of the widest module- or package-scoped fixture ``item`` uses, if any."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    package: str | None = None
    module: str | None = None
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if fixturedef.scope == "package":
                package = fixturedef.baseid or "package"
            elif fixturedef.scope == "module":
                module = item.nodeid.split("::", 1)[0]
    return package or module


@pytest.hookimpl(tryfirst=True)  # before xdist adds the group to the test's id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        group = shared_scope(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
