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

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker starts with ``COLUMNS=80`` and ``LINES=24`` in its environment, which a
    serial run does not have: the CLI's rich consoles, made at import, would keep that width
    for good and ignore the ``COLUMNS`` a test gives a command. A worker drops them."""
    if hasattr(config, "workerinput"):
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)


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


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = shared_scope(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
        if getattr(config.option, "loadgroup", False):
            _name_the_group(item)


def _name_the_group(item: pytest.Item) -> None:
    """Append ``@group`` to the test's id, where xdist's scheduler looks for it.

    xdist 3.8 appends it by assigning ``item._nodeid``; pytest 9.2 keeps the id in ``item._id``
    (a ``NodeId``) and the assignment is lost, so every group would be split up silently
    (pytest-dev/pytest-xdist#1386). On such a pytest the id is rewritten here, as xdist would;
    on an older one xdist's own hook still does it. ``tests/unit/test_parallel.py`` fails if
    neither does.
    """
    from_id = getattr(item, "_id", None)
    if from_id is None or "_nodeid" in vars(item):
        return
    names = sorted(
        {
            str(m.args[0] if m.args else m.kwargs.get("name", "default"))
            for m in item.iter_markers("xdist_group")
        }
    )
    if names and from_id.names:
        # Built from parts, so that the id reads ``...::test[params]@group`` however it is printed.
        *outer, last = from_id.names
        last += "" if from_id.params is None else f"[{from_id.params}]"
        group = "_".join(names)
        item._id = type(from_id)(path=from_id.path, names=(*outer, f"{last}@{group}"))  # type: ignore[attr-defined]
