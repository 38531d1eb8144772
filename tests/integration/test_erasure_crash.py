"""Crash safety: the erasure job survives SIGKILL between any two steps (real subprocesses)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest
import sqlalchemy as sa

from lethe.vault import errors
from lethe.vault.store.tables import erasure_steps, events, subject_keys
from tests.conftest import agent, officer, write_cmd

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from lethe.api.bootstrap import build
    from lethe.api.settings import Settings
    from lethe.vault.model import Caller, Role

    data_dir, url, job_id, crash_at = sys.argv[1], sys.argv[2] or None, sys.argv[3], sys.argv[4]
    c = build(Settings(data_dir=data_dir, database_url=url))

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if crash_at == "inside-key-destruction":
        real = c.kms.destroy_key
        def destroy_then_die(name):
            real(name)
            die()
        c.kms.destroy_key = destroy_then_die
    else:
        real_run = c.erasure._run_step
        def run_then_die(job, spec, *rest):
            ran = real_run(job, spec, *rest)
            if spec.name == crash_at:
                die()
            return ran
        c.erasure._run_step = run_then_die
    c.erasure.advance(job_id)
    sys.exit(0)
""")

STEPS = ["tombstoned", "derived_purged", "key_destroyed", "verified", "compacted", "inside-key-destruction"]


@pytest.mark.parametrize("crash_at", STEPS)
def test_a_job_killed_between_steps_resumes_and_completes_once(lethe, settings, crash_at):
    c = lethe
    items = [c.memories.write(agent(), write_cmd(f"alice {i}", subject="alice")).item for i in range(5)]
    bob = c.memories.write(agent(), write_cmd("bob", subject="bob")).item
    job = c.erasure.request(officer(), "alice", "gdpr-art17-1a", None)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(settings.data_dir), settings.database_url or "", job.id, crash_at],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    interrupted = c.erasure.get(officer(), job.id)
    assert interrupted.completed_at is None
    # A fresh process (this one, with new engines) resumes every unfinished job on start.
    from lethe.api.bootstrap import build

    fresh = build(settings)
    try:
        assert fresh.erasure.run_pending() == 1
        done = fresh.erasure.get(officer(), job.id)
        assert done.status == fresh.erasure.final_status and done.completed_at is not None
        with fresh.uow.maintenance("test: inspect every tenant's rows"), fresh.uow.read() as conn:
            steps = conn.execute(
                sa.select(erasure_steps.c.step).where(erasure_steps.c.job_id == job.id)
            ).scalars()
            steps = list(steps)
            step_events = conn.execute(
                sa.select(sa.func.count()).select_from(events).where(events.c.type == "erasure.step")
            ).scalar_one()
            forgotten_events = conn.execute(
                sa.select(sa.func.count()).select_from(events).where(events.c.type == "subject.forgotten")
            ).scalar_one()
            keys = conn.execute(sa.select(subject_keys.c.state)).scalars().all()
        # every step that applies (the residue hunt does not: the request carries no identifiers)
        applying = {s.name for s in fresh.erasure.steps if s.applies_to(fresh.uow, done)}
        assert sorted(steps) == sorted(applying | {"received"})
        assert step_events == len(steps) - 1  # one audit event per step, none twice
        assert forgotten_events == 1
        assert sorted(keys) == ["active", "destroyed"]
        for item in items:
            with pytest.raises(errors.NotFound):
                fresh.memories.get(agent(), item.id)
        assert fresh.memories.get(agent(), bob.id).content == "bob"
    finally:
        fresh.close()
