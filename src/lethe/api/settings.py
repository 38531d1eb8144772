"""Configuration from ``LETHE_*`` environment variables (pydantic-settings).

Retention is ``LETHE_TTL_<KIND>`` (a memory kind's default TTL), ``LETHE_TTL_<KIND>_MAX``
(its maximum) and ``LETHE_TTL_<SOURCE TYPE>`` (the cap on a write from that source), each
a duration: ``90d``, ``12h``, ``30m``, ``45s``, a number of seconds, or ISO 8601
(``P90D``). Unset ones keep the core's defaults (``vault.policy``). The core
checks the whole set when the settings load (``Limits.check``), so a contradictory one
(a default above its maximum, a TTL over ten years) stops every command at start.

The data policy (``vault.memory.data_policy``) is ``LETHE_DATA_POLICY``, a JSON object, or
``LETHE_DATA_POLICY_FILE``, a JSON file of the same shape (long identifier lists)::

    {"disabled": ["password"],                              # built-in classes turned off
     "patterns": {"national_id": "\\b\\d{3}-\\d{2}-\\d{4}\\b"},  # class -> regex
     "identifiers": {"named_account": ["ACME-0001", "Jane Roe"]}}  # class -> literal strings

Unset, every built-in class is on (secrets and card numbers are refused out of the box). A
policy the core cannot use (an unknown class, a regex that does not compile) stops every
command at start, as retention does.
"""

from __future__ import annotations

import importlib.util
import re
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from limits import parse
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from lethe.vault.erasure.legal_bases import LegalBases
from lethe.vault.errors import InvalidCommand
from lethe.vault.memory.data_policy import DataPolicy
from lethe.vault.memory.embedding import DEFAULT_MODEL, MODELS, NONE
from lethe.vault.model import Kind, SourceType
from lethe.vault.policy import Limits

_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(value: object) -> object:
    """``90d``/``12h``/``30m``/``45s``/``45`` to seconds; anything else goes to pydantic's timedelta."""
    if isinstance(value, str) and (m := _DURATION.match(value.lower())):
        return float(m.group(1)) * _UNIT[m.group(2)]
    return value


Ttl = Annotated[timedelta | None, BeforeValidator(_duration)]


class DataPolicyConfig(BaseModel):
    """The shape of ``LETHE_DATA_POLICY`` (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    disabled: list[str] = []
    patterns: dict[str, str] = {}
    identifiers: dict[str, list[str]] = {}


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
    # Vectors a process keeps opened for searches, bound to their data key's cache entry and
    # TTL (vault.custody.opened_vectors); 0 opens every vector from its ciphertext each time.
    vector_cache_entries: int = Field(default=40_000, ge=0)
    # Semantic recall (vault.memory.embedding): the embedding model, or "none" for lexical only.
    embedding_model: str = DEFAULT_MODEL
    compaction_retention_days: float = Field(default=30.0, ge=0)
    # PostgreSQL's tenant wall (vault.store.tenancy, migration 0024), on by default: the server
    # runs as the application role, which sees only the tenant of its transaction. No effect on
    # SQLite. ``false`` is the opt-out docs/operations.md describes (a connecting user that
    # cannot SET ROLE to lethe_app).
    row_security: bool = True
    backup_dir: Path | None = None
    # HTTP server (api/): request size and read time, rate limits, background work.
    max_body_bytes: int = Field(default=64 * 1024, gt=0)
    body_read_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)  # the whole body, else 408
    # A request's headers, from the connection's start or the previous response; else closed.
    header_read_timeout_seconds: float = Field(default=10.0, gt=0, le=3600)
    rate_limit: str = "600/minute"  # per token; syntax of the `limits` package
    # Searches one server process runs at once (the others wait their turn, holding no
    # thread); unset: ``searches_at_once``, by the database.
    search_concurrency: int | None = Field(default=None, ge=1, le=64)
    # `lethe serve`'s processes on its port; unset: one per core this process may run on
    # (``api.http.listeners.usable_cores``). `--workers` wins over both.
    workers: int | None = Field(default=None, ge=1, le=64)
    auth_failure_rate_limit: str = "30/minute"  # failed authentications per client address
    # Subjects a token (and a tenant) may name that it has not named in the window: writes and
    # exports about new subject ids, the erasure fence's oracle (``api.http.subject_sweeps``).
    subject_sweep_rate_limit: str = "120/minute"
    subject_sweep_tenant_rate_limit: str = "1200/minute"
    # Where rate-limit counts live: per process (memory://) or shared by every node (redis://...).
    rate_limit_storage: str = "memory://"
    sweep_interval_seconds: float = Field(default=30.0, gt=0)
    erasure_interval_seconds: float = Field(default=1.0, gt=0)
    # A KMS that refuses a key's destruction is asked again this long (from when it became
    # due); past it, the request ends in a final certificate whose result is ``partial``.
    erasure_kms_refusal_window_seconds: float = Field(default=7 * 86400.0, ge=0)
    compaction_interval_seconds: float = Field(default=3600.0, gt=0)
    checkpoint_interval_seconds: float = Field(default=60.0, gt=0)  # sign the audit log's head this often
    # Give freed heap pages back to the kernel this often (api.http.allocator.trim; 0: never).
    malloc_trim_interval_seconds: float = Field(default=10.0, ge=0)
    # Signed webhooks (vault.webhooks, api.webhooks): loopback, private, link-local and metadata
    # destinations are refused unless this is true (LETHE_WEBHOOK_ALLOW_PRIVATE; tests set it).
    webhook_allow_private: bool = False
    webhook_interval_seconds: float = Field(default=1.0, gt=0)  # how often each worker sends what is due
    webhook_retry_base_seconds: float = Field(default=10.0, gt=0)  # first retry; doubling after each failure
    webhook_max_attempts: int = Field(default=8, ge=1, le=30)
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    public_url: str | None = None  # how clients reach the server (MCP resource URL); serve: its address
    # The MCP server serves a user channel: its ``remember`` records this source type (the
    # token must be allowed to assert it). Unset: what a model stores is ``agent_inference``.
    mcp_user_channel: SourceType | None = None
    # The web console (api/console): a signed-in session ends after this long idle, or this long at most.
    console_session_idle_seconds: float = Field(default=1800.0, gt=0)
    console_session_max_seconds: float = Field(default=12 * 3600.0, gt=0)
    # An agent's tainted session (vault.memory.agent_sessions) stays tainted this long after its
    # last write or taint; past it, the session id starts afresh, untainted.
    session_ttl_seconds: float = Field(default=4 * 3600.0, gt=0, le=30 * 86400.0)
    bootstrap_tenant: str = "default"  # tenant of the admin token `lethe serve` mints on first run
    log_level: str = "INFO"
    # Legal bases an erasure request may cite beyond the standard list (vault.erasure.legal_bases):
    # JSON {code: words}, e.g. {"de-bdsg-35": "BDSG § 35: erasure under German federal law"}.
    extra_legal_bases: dict[str, str] = Field(default_factory=dict)
    # Audit log signing (api/signing_key.py): checkpoint origin line (default derived once
    # and stored in the key dir) and the signing key's passphrase (default: a 0600 file there).
    log_origin: str | None = None
    signing_key_passphrase: SecretStr | None = None

    # What content is never stored (see the module docstring): the built-in classes by default.
    data_policy: DataPolicyConfig = DataPolicyConfig()
    data_policy_file: Path | None = None

    # Retention (see the module docstring); None keeps the core's default.
    ttl_preference: Ttl = None
    ttl_preference_max: Ttl = None
    ttl_fact: Ttl = None
    ttl_fact_max: Ttl = None
    ttl_skill: Ttl = None
    ttl_skill_max: Ttl = None
    ttl_task_summary: Ttl = None
    ttl_task_summary_max: Ttl = None
    ttl_working_note: Ttl = None
    ttl_working_note_max: Ttl = None
    ttl_user_statement: Ttl = None
    ttl_operator_config: Ttl = None
    ttl_tool_result: Ttl = None
    ttl_web_page: Ttl = None
    ttl_agent_inference: Ttl = None
    ttl_summary: Ttl = None

    @field_validator("extra_legal_bases")
    @classmethod
    def _legal_bases_are_codes(cls, value: dict[str, str]) -> dict[str, str]:
        """A malformed or redefining code stops every command at start, not a request later."""
        try:
            LegalBases(value)
        except InvalidCommand as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _retention_is_consistent(self) -> Settings:
        """Refused at start, with every contradiction named: never discovered by a write."""
        self.limits()
        return self

    @model_validator(mode="after")
    def _data_policy_is_usable(self) -> Settings:
        """A policy that cannot be built stops the start, with the reason named."""
        self.built_data_policy()
        return self

    def data_policy_config(self) -> DataPolicyConfig:
        """``LETHE_DATA_POLICY``, or the file ``LETHE_DATA_POLICY_FILE`` names (not both)."""
        if self.data_policy_file is None:
            return self.data_policy
        if self.data_policy != DataPolicyConfig():
            raise ValueError("set LETHE_DATA_POLICY or LETHE_DATA_POLICY_FILE, not both")
        try:
            text = self.data_policy_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"data_policy_file cannot be read: {exc.strerror}") from None
        return DataPolicyConfig.model_validate_json(text)

    def built_data_policy(self) -> DataPolicy:
        """The data policy these settings declare, built (``ValueError`` if unusable)."""
        c = self.data_policy_config()
        return _built_policy(
            tuple(c.disabled),
            tuple(c.patterns.items()),
            tuple((name, tuple(values)) for name, values in c.identifiers.items()),
        )

    def limits(self) -> Limits:
        """The write pipeline's limits these settings give, checked (``InvalidRetention``)."""
        base = Limits()

        def setting(name: str, default: timedelta) -> timedelta:
            value = getattr(self, f"ttl_{name}")
            return default if value is None else value

        kinds = {}
        for kind in Kind:
            default, maximum = base.ttl_for(kind)
            kinds[kind] = (setting(kind.value, default), setting(f"{kind.value}_max", maximum))
        sources = {source: setting(source.value, base.source_cap(source)) for source in SourceType}
        return Limits(max_content_bytes=self.max_content_bytes, ttls=kinds, source_ttls=sources).check()

    @field_validator("embedding_model")
    @classmethod
    def _known_model(cls, model: str) -> str:
        """An embedding model this release does not know is a start-up error."""
        if model not in (*MODELS, NONE):
            raise ValueError(f"unknown embedding model {model!r}; known: {', '.join((*MODELS, NONE))}")
        return model

    @field_validator(
        "rate_limit", "auth_failure_rate_limit", "subject_sweep_rate_limit", "subject_sweep_tenant_rate_limit"
    )
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
            raise ValueError("a Redis URI needs the Redis client: install the redis extra")
        return uri

    @property
    def key_dir(self) -> Path:
        """Key material lives here, apart from the data: backups of the data never hold keys."""
        return self.data_dir / "keys"

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'lethe.sqlite3').resolve()}"

    @property
    def searches_at_once(self) -> int:
        """``search_concurrency``, or by default 1 on SQLite and 2 on PostgreSQL.

        On SQLite a search is CPU from start to end (it steps SQLite through a scope's rows),
        and threads doing that together only hand Python's lock back and forth: 16 at once
        served half the searches per second of one at a time; scale with ``--workers``. On
        PostgreSQL a search also waits on its two round trips, which one at a time left the
        CPU 9 % idle under figure 6d's load; two at once use that time: 477 searches/s against
        416 on two nodes (5 paired runs, the second never slower, idle 2 %).
        """
        if self.search_concurrency is not None:
            return self.search_concurrency
        return 1 if self.db_url.startswith("sqlite") else 2


@lru_cache(maxsize=8)
def _built_policy(
    disabled: tuple[str, ...],
    patterns: tuple[tuple[str, str], ...],
    identifiers: tuple[tuple[str, tuple[str, ...]], ...],
) -> DataPolicy:
    """Built once per declaration: validating the settings and the composition root share it."""
    return DataPolicy.build(disabled=disabled, patterns=dict(patterns), identifiers=dict(identifiers))
