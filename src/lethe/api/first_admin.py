"""The first admin token: minted once per store, its secret written to a file, never printed.

``lethe serve`` calls ``mint_first_admin`` on every start. The store mints at most one
admin token across any number of concurrent first starts (the check and the insert are
one write transaction under the store's write lock, ``TokenService.create_first_admin``),
and the node that minted it writes the secret to ``ADMIN_TOKEN_FILE`` in its data dir
(mode 0600, written whole or not at all). Standard output only says where: supervisors
(systemd, Docker) keep stdout, and a secret there outlives its first use.

Exceptions: ``OSError`` when the file cannot be written; the message names the token id
to revoke and how to mint another (the token exists, its secret is lost).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lethe.vault.access.tokens import TokenInfo, TokenService

ADMIN_TOKEN_FILE = "admin-token"  # noqa: S105 (a file name, not a secret)
DESCRIPTION = "minted by the first `lethe serve`"


@dataclass(frozen=True)
class FirstAdmin:
    """The admin token this start minted: where its secret is, and what may be printed."""

    info: TokenInfo
    path: Path

    def lines(self) -> list[str]:
        """What the server prints: the file and the token id, never the secret."""
        return [
            f"admin token for tenant {self.info.tenant_id} written to {self.path} (mode 0600): "
            "read it once, keep it in your secret store, then delete the file",
            f"token id: {self.info.id}",
        ]


def mint_first_admin(tokens: TokenService, tenant_id: str, data_dir: Path) -> FirstAdmin | None:
    """Mint the store's first admin token and write its secret to the data dir; None when the
    store already has an admin token (this or another node minted it)."""
    minted = tokens.create_first_admin(tenant_id, DESCRIPTION)
    if minted is None:
        return None
    token, info = minted
    path = data_dir / ADMIN_TOKEN_FILE
    try:
        write_secret(path, token + "\n")
    except OSError as exc:
        raise OSError(
            f"could not write the first admin token to {path} ({exc.strerror or exc}): revoke token "
            f"{info.id} with `lethe token revoke` and mint another with `lethe token create --role admin`"
        ) from None
    return FirstAdmin(info, path)


def write_secret(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a 0600 file, whole or not at all (a temporary file renamed)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
