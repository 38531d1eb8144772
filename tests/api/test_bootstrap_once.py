"""The first admin token is minted exactly once, however many nodes start together.

Ten processes, each a node with its own data dir, open one fresh store (a SQLite file, or a
throwaway PostgreSQL database on the shared server) and run the first start's bootstrap at
the same moment. Exactly one admin token exists afterwards; exactly one node wrote its
secret, to a 0600 file, and what the nodes print names the file, never the secret.
"""

from __future__ import annotations

import multiprocessing
import stat
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from lethe.api.bootstrap import build
from lethe.api.first_admin import ADMIN_TOKEN_FILE, mint_first_admin
from lethe.api.settings import Settings
from lethe.vault.access.tokens import TokenService, hash_token
from lethe.vault.store.db import UnitOfWork, make_engine
from lethe.vault.store.events import SqlEventLog
from lethe.vault.store.tables import api_tokens

NODES = 10


def first_start(data_dir: str, db_url: str, barrier: Any, out: Any) -> None:
    """One node's first start: what ``lethe serve`` runs before it serves, on its own engine
    (the rest of the container is left out: ten of them would load ten embedders)."""
    uow = UnitOfWork(make_engine(db_url))
    try:
        barrier.wait(timeout=60)
        first = mint_first_admin(TokenService(uow, log=SqlEventLog()), "default", Path(data_dir))
        out.put(None if first is None else first.lines())
    finally:
        uow.dispose()


def admin_rows(settings: Settings) -> list[Any]:
    c = build(settings)
    try:
        with c.uow.engine.connect() as conn:
            return conn.execute(sa.select(api_tokens).where(api_tokens.c.role == "admin")).all()
    finally:
        c.close()


def test_ten_concurrent_first_starts_mint_exactly_one_admin_token(settings: Settings, tmp_path: Path) -> None:
    build(settings, create=True).close()  # `lethe init`, once
    db_url = settings.db_url
    nodes = []
    for i in range(NODES):
        node = tmp_path / f"node{i}"
        node.mkdir(mode=0o700)
        nodes.append(node)
    spawn = multiprocessing.get_context("fork")  # a fresh interpreter each would take seconds
    barrier, out = spawn.Barrier(NODES), spawn.Queue()
    procs = [spawn.Process(target=first_start, args=(str(n), db_url, barrier, out)) for n in nodes]
    for p in procs:
        p.start()
    printed = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    rows = admin_rows(settings)
    assert len(rows) == 1  # main minted one per node that saw no admin yet: 2 in 1 of 3 trials
    assert sum(lines is not None for lines in printed) == 1
    written = [n / ADMIN_TOKEN_FILE for n in nodes if (n / ADMIN_TOKEN_FILE).exists()]
    assert len(written) == 1
    secret = written[0].read_text().strip()
    assert hash_token(secret) == rows[0].token_hash
    assert stat.S_IMODE(written[0].stat().st_mode) == 0o600
    said = "\n".join(line for lines in printed if lines for line in lines)
    assert str(written[0]) in said and rows[0].id in said and secret not in said
    assert not [p for n in nodes for p in n.iterdir() if p.name.endswith(".tmp")]  # nothing half-written


def test_a_later_start_mints_nothing_and_writes_no_file(settings: Settings, tmp_path: Path) -> None:
    c = build(settings, create=True)
    try:
        first = mint_first_admin(c.tokens, "default", settings.data_dir)
        assert first is not None and (settings.data_dir / ADMIN_TOKEN_FILE).exists()
        (settings.data_dir / ADMIN_TOKEN_FILE).unlink()  # the operator stored it and deleted the file
        assert mint_first_admin(c.tokens, "acme", settings.data_dir) is None
        assert not (settings.data_dir / ADMIN_TOKEN_FILE).exists()
    finally:
        c.close()
    assert len(admin_rows(settings)) == 1
