"""Configuration from ``LETHE_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from limits import parse
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LETHE_", extra="ignore")

    data_dir: Path = Path("./lethe-data")
    database_url: str | None = None
    kms: Literal["local", "vault"] = "local"
    vault_addr: str | None = None
    vault_token: SecretStr | None = None
    vault_transit_mount: str = "transit"
    kms_timeout_seconds: float = 5.0
    max_content_bytes: int = Field(default=16 * 1024, gt=0)
    dek_cache_ttl_seconds: float = Field(default=300.0, gt=0)
    dek_cache_entries: int = Field(default=10_000, gt=0)
    compaction_retention_days: float = Field(default=30.0, ge=0)
    backup_dir: Path | None = None
    # HTTP server (api/): request size and read time, rate limits, background work.
    max_body_bytes: int = Field(default=64 * 1024, gt=0)
    body_read_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)  # the whole body, else 408
    rate_limit: str = "600/minute"  # per token; syntax of the `limits` package
    auth_failure_rate_limit: str = "30/minute"  # failed authentications per client address
    # Where rate-limit counts live: per process (memory://) or shared by every node (redis://...).
    rate_limit_storage: str = "memory://"
    sweep_interval_seconds: float = Field(default=30.0, gt=0)
    erasure_interval_seconds: float = Field(default=1.0, gt=0)
    compaction_interval_seconds: float = Field(default=3600.0, gt=0)
    checkpoint_interval_seconds: float = Field(default=60.0, gt=0)  # sign the audit log's head this often
    public_url: str | None = None  # how clients reach the server (MCP resource URL); serve: its address
    # The web console (api/console): a signed-in session ends after this long idle, or this long at most.
    console_session_idle_seconds: float = Field(default=1800.0, gt=0)
    console_session_max_seconds: float = Field(default=12 * 3600.0, gt=0)
    bootstrap_tenant: str = "default"  # tenant of the admin token `lethe serve` mints on first run
    log_level: str = "INFO"
    # Audit log signing (api/signing_key.py): checkpoint origin line (default derived once
    # and stored in the key dir) and the signing key's passphrase (default: a 0600 file there).
    log_origin: str | None = None
    signing_key_passphrase: SecretStr | None = None

    @field_validator("rate_limit", "auth_failure_rate_limit")
    @classmethod
    def _rate_limit_parses(cls, spec: str) -> str:
        """A limit the `limits` package cannot read is a start-up error, not a surprise later."""
        parse(spec)
        return spec

    @field_validator("rate_limit_storage")
    @classmethod
    def _rate_limit_storage_is_usable(cls, uri: str) -> str:
        """memory:// or a Redis URI, with the Redis client installed: refused at start otherwise."""
        if uri == "memory://":
            return uri
        if not uri.startswith(("redis://", "rediss://", "redis+sentinel://", "redis+cluster://")):
            raise ValueError("must be memory:// or a redis:// URI")
        if importlib.util.find_spec("redis") is None:
            raise ValueError("a Redis URI needs the Redis client: pip install 'lethe-vault[redis]'")
        return uri

    @property
    def key_dir(self) -> Path:
        """Key material lives here, apart from the data: backups of the data never hold keys."""
        return self.data_dir / "keys"

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'lethe.sqlite3').resolve()}"
