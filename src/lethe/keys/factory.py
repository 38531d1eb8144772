"""Chooses a KMS backend from an allowlist; never imports a class named in config."""

from __future__ import annotations

from pathlib import Path

from lethe.keys.protocol import KeyManager

BACKENDS = ("local", "vault")


def build_kms(
    kind: str,
    *,
    key_dir: Path,
    vault_addr: str | None = None,
    vault_token: str | None = None,
    vault_mount: str = "transit",
    timeout: float = 5.0,
) -> KeyManager:
    if kind == "local":
        from lethe.keys.local import LocalKms

        return LocalKms.open_in(key_dir)
    if kind == "vault":
        if not vault_addr or not vault_token:
            raise ValueError("LETHE_VAULT_ADDR and LETHE_VAULT_TOKEN are required when LETHE_KMS=vault")
        from lethe.keys.vault_transit import VaultTransitKms

        return VaultTransitKms(vault_addr, vault_token, mount=vault_mount, timeout=timeout)
    raise ValueError(f"unknown KMS backend {kind!r}; expected one of {', '.join(BACKENDS)}")
