"""``VaultTransitKms``: the KMS port on HashiCorp Vault or OpenBao Transit, through hvac.

Each Lethe key is one Transit key (``aes256-gcm96``, never exportable, no plaintext
backup). Data keys come from ``<mount>/datakey/plaintext/<name>``: the plaintext is used
at once and only the Transit ciphertext (``vault:v1:...``, as ASCII bytes) is stored.

Destruction is a hard delete: ``deletion_allowed=true`` then ``DELETE <mount>/keys/<name>``,
which removes the key ring and its archive from the KMS storage. OpenBao 2.x also has
an opt-in *soft* delete (``<mount>/keys/<name>/soft-delete``, undone by
``soft-delete-restore``); Lethe never uses it, and a key an operator soft-deleted is
purged by ``destroy_key`` like any other. Transit forgets a deleted name, so a
tombstone key ``<name>.lethe-destroyed`` is written first: it keeps a destroyed name
from being created again and makes a second destroy report ``already_destroyed``.

Everything hvac, requests, base64 and Vault's JSON stays in this module. Exceptions
raised (``keys.protocol``; messages never carry key material or ciphertext):

- ``KmsUnavailable``: connection refused, timeout, 5xx, 429, sealed or uninitialised
  server, or the Transit mount is missing ("no handler for route"); retry later.
- ``KmsForbidden``: 401/403 - the token is invalid, expired, or its policy lacks a path.
- ``KeyDestroyed``: the key is not there (404, "encryption key not found"), was
  soft-deleted, or its name carries a tombstone.
- ``UnwrapFailed``: the key is live but the wrapped data key does not decrypt under it
  (bad tag, malformed ciphertext) or does not hold a 256-bit key.
- ``KmsError``: any other request Transit rejected (400), or a response Lethe cannot
  read; an operator must look.
- ``ValueError``: a key name Transit cannot hold or that ends in the tombstone suffix,
  or an empty token (programming errors, raised before any call).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Final

import hvac
import requests
from hvac import exceptions as hvac_exc

from lethe.keys.protocol import (
    DataKey,
    DestructionReceipt,
    KeyDestroyed,
    KeyInfo,
    KmsError,
    KmsForbidden,
    KmsUnavailable,
    ProbeResult,
    UnwrapFailed,
)

KEY_TYPE: Final = "aes256-gcm96"
DEK_BYTES: Final = 32
TOMBSTONE_SUFFIX: Final = ".lethe-destroyed"

# Transit's key-name pattern (framework.GenericNameRegex, ASCII \w).
_NAME_RE: Final = re.compile(r"\w(?:[\w.-]*\w)?", re.ASCII)
# Transit answers 400, not 404, when an operation names a missing or soft-deleted key.
_KEY_GONE_RE: Final = re.compile(
    r"encryption key not found|no existing key named|could not delete key; not found"
    r"|soft-deleted key|soft deleted",
    re.IGNORECASE,
)
_NO_ROUTE: Final = "no handler for route"


def _vault_text(exc: hvac_exc.VaultError) -> str:
    return " ".join(str(e) for e in (exc.errors or []))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class VaultTransitKms:
    """The ``keys.KeyManager`` port on a Vault/OpenBao Transit mount.

    ``timeout`` bounds every HTTP call (connect and read), so an unreachable or hung
    KMS surfaces as ``KmsUnavailable`` within it rather than blocking a request.
    ``client`` lets tests inject a prebuilt ``hvac.Client``; ``addr`` and ``token``
    are then only used in messages.
    """

    backend = "vault"

    def __init__(
        self,
        addr: str,
        token: str,
        mount: str = "transit",
        timeout: float = 5.0,
        *,
        verify: bool | str | None = None,
        client: hvac.Client | None = None,
    ) -> None:
        if client is None and not token:
            # hvac would silently fall back to VAULT_TOKEN or ~/.vault-token.
            raise ValueError("a Vault/OpenBao token is required")
        self.addr = addr
        self.mount = mount.strip("/")
        self.timeout = timeout
        # hvac's stubs say an int; hvac hands the timeout to requests, which takes seconds as a float.
        self._client = client or hvac.Client(
            url=addr,
            token=token,
            timeout=timeout,  # type: ignore[arg-type]
            verify=verify,
        )
        self._transit = self._client.secrets.transit

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.adapter.close()

    # -- the port -----------------------------------------------------------------

    def create_key(self, name: str) -> KeyInfo:
        """Create the Transit key, or report the existing one's real flags.

        Read first: a create on an existing name is a no-op in Transit that keeps the
        old flags, so ``KeyInfo`` must describe what OpenBao holds, not what we asked.
        """
        self._check_name(name)
        if self._read(self._tombstone(name)) is not None:
            raise KeyDestroyed(f"key {name} was destroyed; it is never re-created")
        data = self._read(name)
        created = data is None
        if data is None:
            with self._edge("create key", name):
                resp = self._transit.create_key(
                    name,
                    key_type=KEY_TYPE,
                    exportable=False,
                    allow_plaintext_backup=False,
                    mount_point=self.mount,
                )
            if self._read(self._tombstone(name)) is not None:
                # A destroy ran between our check and the create: undo the create.
                self._hard_delete(name)
                raise KeyDestroyed(f"key {name} was destroyed; it is never re-created")
            # OpenBao answers with the key's configuration; older Vaults with 204.
            if isinstance(resp, Mapping) and isinstance(resp.get("data"), dict):
                data = resp["data"]
            else:
                data = self._read(name)
            if data is None:
                raise KmsError(f"key {name} is missing right after its creation")
        if data.get("soft_deleted"):
            raise KeyDestroyed(f"key {name} is soft-deleted")
        if data.get("type") != KEY_TYPE:
            raise KmsError(f"key {name} exists with type {data.get('type')!r}, not {KEY_TYPE}")
        return KeyInfo(
            name=name,
            backend=self.backend,
            exportable=bool(data.get("exportable", True)),
            plaintext_backup_allowed=bool(data.get("allow_plaintext_backup", True)),
            created=created,
        )

    def generate_data_key(self, name: str) -> DataKey:
        """One round trip: Transit returns the DEK and its wrapped form together."""
        self._check_name(name)
        with self._edge("generate data key", name):
            resp = self._transit.generate_data_key(
                name, key_type="plaintext", bits=DEK_BYTES * 8, mount_point=self.mount
            )
        data = self._data(resp, "generate data key", name)
        try:
            plaintext = base64.b64decode(data["plaintext"], validate=True)
            wrapped = str(data["ciphertext"]).encode("ascii")
        except (KeyError, TypeError, binascii.Error, UnicodeEncodeError) as exc:
            raise KmsError(f"generate data key {name}: unreadable response") from exc
        if len(plaintext) != DEK_BYTES:
            raise KmsError(f"generate data key {name}: data key has the wrong length")
        return DataKey(plaintext=plaintext, wrapped=wrapped)

    def unwrap_data_key(self, name: str, wrapped: bytes) -> bytes:
        """Decrypt through Transit; every way a DEK can be wrong is one ``UnwrapFailed``."""
        self._check_name(name)
        try:
            ciphertext = wrapped.decode("ascii")
        except UnicodeDecodeError as exc:
            raise UnwrapFailed(f"wrapped data key for {name} is not a Transit ciphertext") from exc
        with self._edge("unwrap data key", name, decrypting=True):
            resp = self._transit.decrypt_data(name, ciphertext=ciphertext, mount_point=self.mount)
        data = self._data(resp, "unwrap data key", name)
        try:
            plaintext = base64.b64decode(data["plaintext"], validate=True)
        except (KeyError, TypeError, binascii.Error) as exc:
            raise UnwrapFailed(f"wrapped data key for {name} does not hold a data key") from exc
        if len(plaintext) != DEK_BYTES:
            raise UnwrapFailed(f"wrapped data key for {name} does not hold a data key")
        return plaintext

    def destroy_key(self, name: str) -> DestructionReceipt:
        """Tombstone the name, hard-delete the key, then read it back to prove it gone.

        The tombstone is written before the delete so that a crash in between leaves a
        state a retry completes, never a live key under a name reported destroyed.
        """
        self._check_name(name)
        tombstone = self._tombstone(name)
        before = self._read(name)
        tombstone_existed = self._read(tombstone) is not None
        if not tombstone_existed:
            self._write_tombstone(tombstone)
        details: dict[str, Any] = {
            "mount": self.mount,
            "method": "transit hard delete (deletion_allowed=true, DELETE keys/<name>)",
            "soft_delete_used": False,
            "tombstone": tombstone,
            "tombstone_existed": tombstone_existed,
        }
        if before is None:
            details["key_found"] = False
            details["evidence"] = "read keys/<name> -> not found (key ring and archive absent)"
            return DestructionReceipt(
                name=name,
                backend=self.backend,
                destroyed_at=_now(),
                key_unusable=True,
                material_destroyed=True,
                already_destroyed=True,
                details=details,
            )

        exportable = bool(before.get("exportable", True))
        backup_allowed = bool(before.get("allow_plaintext_backup", True))
        details.update(
            key_found=True,
            soft_deleted_before=bool(before.get("soft_deleted", False)),
            latest_version=before.get("latest_version"),
            exportable_at_destruction=exportable,
            plaintext_backup_allowed_at_destruction=backup_allowed,
        )
        self._hard_delete(name)
        destroyed_at = _now()
        gone = self._read(name) is None
        if not gone:
            raise KmsError(f"key {name} is still readable after its deletion")
        details["evidence"] = "read keys/<name> after delete -> not found"
        details["caveat"] = (
            "KMS storage snapshots taken before destroyed_at still hold the key; "
            "they must expire or be destroyed for the material to be gone everywhere"
        )
        # Material that could have been exported or backed up may live on elsewhere.
        return DestructionReceipt(
            name=name,
            backend=self.backend,
            destroyed_at=destroyed_at,
            key_unusable=True,
            material_destroyed=not (exportable or backup_allowed),
            already_destroyed=False,
            details=details,
        )

    def probe(self, name: str, wrapped: bytes) -> ProbeResult:
        """Try the unwrap and read the key; a KMS that cannot be reached proves nothing.

        ``KmsUnavailable`` and ``KmsForbidden`` propagate instead of counting as a
        failed unwrap, so an outage is never mistaken for a destroyed key.
        """
        self._check_name(name)
        details: dict[str, Any] = {"mount": self.mount}
        try:
            self.unwrap_data_key(name, wrapped)
        except KeyDestroyed:
            unwrap_failed, details["unwrap"] = True, "key not found"
        except UnwrapFailed:
            unwrap_failed, details["unwrap"] = True, "ciphertext rejected"
        else:
            unwrap_failed, details["unwrap"] = False, "succeeded"
        data = self._read(name)
        details["read_key"] = "not found" if data is None else "present"
        if data is not None:
            details["soft_deleted"] = bool(data.get("soft_deleted", False))
        details["tombstone_present"] = self._read(self._tombstone(name)) is not None
        return ProbeResult(
            name=name,
            backend=self.backend,
            unwrap_failed=unwrap_failed,
            key_present=data is not None,
            details=details,
        )

    def health(self) -> None:
        """Check the server is up, initialised and unsealed, and the token still valid.

        Raises ``KmsUnavailable`` for the server and ``KmsForbidden`` for the token.
        """
        with self._edge("health", None):
            status = self._client.sys.read_health_status(method="GET", standby_ok=True)
        if not isinstance(status, Mapping):
            code = getattr(status, "status_code", "?")
            raise KmsUnavailable(f"KMS at {self.addr} is not healthy (HTTP {code})")
        if status.get("sealed") or not status.get("initialized", False):
            raise KmsUnavailable(f"KMS at {self.addr} is sealed or not initialised")
        with self._edge("token lookup", None):
            self._client.auth.token.lookup_self()

    # -- helpers ------------------------------------------------------------------

    @staticmethod
    def _check_name(name: str) -> None:
        if not _NAME_RE.fullmatch(name):
            raise ValueError("key name is not a valid Transit key name")
        if name.endswith(TOMBSTONE_SUFFIX):
            raise ValueError(f"key names ending in {TOMBSTONE_SUFFIX!r} are reserved")

    @staticmethod
    def _tombstone(name: str) -> str:
        return name + TOMBSTONE_SUFFIX

    def _read(self, name: str) -> dict[str, Any] | None:
        """The key's configuration, or ``None`` when Transit has no such key."""
        try:
            with self._edge("read key", name):
                resp = self._transit.read_key(name, mount_point=self.mount)
        except KeyDestroyed:
            return None
        return self._data(resp, "read key", name)

    def _write_tombstone(self, tombstone: str) -> None:
        with self._edge("write tombstone", tombstone):
            self._transit.create_key(
                tombstone,
                key_type=KEY_TYPE,
                exportable=False,
                allow_plaintext_backup=False,
                mount_point=self.mount,
            )

    def _hard_delete(self, name: str) -> None:
        try:
            with self._edge("allow deletion", name):
                self._transit.update_key_configuration(name, deletion_allowed=True, mount_point=self.mount)
            with self._edge("delete key", name):
                self._transit.delete_key(name, mount_point=self.mount)
        except KeyDestroyed:
            pass  # deleted concurrently: the read-back decides

    @staticmethod
    def _data(resp: Any, action: str, name: str) -> dict[str, Any]:
        data = resp.get("data") if isinstance(resp, Mapping) else None
        if not isinstance(data, dict):
            raise KmsError(f"{action} {name}: unexpected response from the KMS")
        return data

    @contextmanager
    def _edge(self, action: str, name: str | None, *, decrypting: bool = False) -> Iterator[None]:
        """Translate hvac and requests failures into the port's exceptions."""
        what = f"{action} {name}" if name else action
        try:
            yield
        except (hvac_exc.Forbidden, hvac_exc.Unauthorized) as exc:
            raise KmsForbidden(f"{what}: the KMS refused the token or its policy") from exc
        except hvac_exc.InvalidPath as exc:
            if _NO_ROUTE in _vault_text(exc):
                raise KmsUnavailable(f"{what}: no Transit mount at {self.mount!r}") from exc
            raise KeyDestroyed(f"{what}: key not found") from exc
        except hvac_exc.InvalidRequest as exc:
            if _KEY_GONE_RE.search(_vault_text(exc)):
                raise KeyDestroyed(f"{what}: key not found or soft-deleted") from exc
            if decrypting:
                raise UnwrapFailed(f"{what}: the wrapped data key does not unwrap") from exc
            raise KmsError(f"{what}: the KMS rejected the request") from exc
        except hvac_exc.VaultError as exc:  # 5xx, 429, sealed, unexpected status
            raise KmsUnavailable(f"{what}: the KMS answered with an error") from exc
        except requests.RequestException as exc:  # refused, timeout, TLS, bad JSON
            raise KmsUnavailable(f"{what}: the KMS at {self.addr} cannot be reached") from exc
