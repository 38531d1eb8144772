"""Configuration from ``LETHE_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
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

    @property
    def key_dir(self) -> Path:
        """Key material lives here, apart from the data: backups of the data never hold keys."""
        return self.data_dir / "keys"

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'lethe.sqlite3').resolve()}"
