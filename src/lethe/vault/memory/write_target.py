"""Where a memory write lands, checked under the write lock: a create's new id, the next
version of the memory an update names, the memory a correction supersedes. Each refuses the
write (``NotFound``, ``VersionConflict``, ``InvalidCommand``) when the rows say it cannot be.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.engine import Connection

from lethe.vault.errors import InvalidCommand, NotFound, VersionConflict
from lethe.vault.memory import repository as repo
from lethe.vault.memory.write_event import Target
from lethe.vault.model import GONE, Caller, Status, WriteCommand


def target(
    conn: Connection,
    caller: Caller,
    agent_id: str,
    subject_ref: str,
    cmd: WriteCommand,
    now: datetime,
) -> Target:
    """Where a create or an update-by-id lands: the memory id, its new version, its creation time."""
    if cmd.id is None:
        if cmd.expected_version != 0:
            raise InvalidCommand("expected_version must be 0 when no id is given")
        return Target(str(uuid.uuid4()), 1, now)
    check_id(cmd.id)
    row = repo.by_id(conn, caller.tenant_id, cmd.id)
    if row is None:
        if cmd.expected_version != 0:
            raise NotFound("memory not found")
        return Target(cmd.id, 1, now)
    if row.agent_id != agent_id or row.purpose != cmd.purpose:
        raise NotFound("memory not found")
    if row.version != cmd.expected_version:
        raise VersionConflict(f"expected version {cmd.expected_version}, current is {row.version}")
    if row.subject_ref != subject_ref:
        raise InvalidCommand("an update cannot change the memory's subject")
    if row.status in (*GONE, Status.SUPERSEDED, Status.EXPIRED):
        raise VersionConflict(f"a {row.status} memory cannot be updated")
    return Target(
        cmd.id,
        row.version + 1,
        row.created_at.replace(tzinfo=now.tzinfo),
        row.expires_at.replace(tzinfo=now.tzinfo),
    )


def supersedable(conn: Connection, caller: Caller, agent_id: str, cmd: WriteCommand):  # type: ignore[no-untyped-def]
    """The memory a correction supersedes, checked (same tenant, agent, purpose; active).

    One outside the caller's scope, a purpose its credential lacks included, is a
    ``NotFound`` like an unknown id: the purpose rule must not confirm that it exists.
    """
    assert cmd.supersedes_id is not None  # only called for a correction
    old = repo.by_id(conn, caller.tenant_id, cmd.supersedes_id)
    if old is None or old.agent_id != agent_id or not caller.may_use(old.purpose):
        raise NotFound("the superseded memory was not found")
    if old.purpose != cmd.purpose:
        raise InvalidCommand("a correction must keep the purpose of the memory it supersedes")
    if old.status != Status.ACTIVE or old.id == cmd.id:
        raise VersionConflict("only an active memory can be superseded")
    return old


def check_id(memory_id: str) -> None:
    try:
        uuid.UUID(memory_id)
    except ValueError:
        raise InvalidCommand("id must be a UUID") from None
