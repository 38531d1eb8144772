"""The relational schema (SQLAlchemy Core). Alembic migrations create and evolve it.

``events`` is the source of truth and append-only; ``memories``, ``search_index`` (with
its postings, ``search_postings``, and sealed vectors, ``memory_vectors``),
``idempotency_keys``, ``forgotten_subjects``, ``review_decisions`` and ``retractions``
are projections that ``replay`` rebuilds from it.
``subject_keys`` holds only *wrapped* data keys.

A memory is identified by (``tenant_id``, ``id``), never by its id alone: ids a client
chose must not tell one tenant which ids another tenant uses. Every lookup, join,
update and delete by memory id carries the tenant too.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

events = sa.Table(
    "events",
    metadata,
    sa.Column(
        "seq", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=False
    ),
    sa.Column("event_id", sa.String(36), nullable=False, unique=True),
    sa.Column("type", sa.String(40), nullable=False),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("memory_id", sa.String(36)),
    sa.Column("subject_ref", sa.String(64)),
    sa.Column("occurred_at", sa.String(32), nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("ciphertext", sa.LargeBinary),
    sa.Column("ciphertext_digest", sa.String(64)),
    sa.Column("leaf_hash", sa.LargeBinary(32), nullable=False),
    sa.Index("ix_events_subject", "tenant_id", "subject_ref"),
    sa.Index("ix_events_memory", "memory_id"),
)

memories = sa.Table(
    "memories",
    metadata,
    sa.Column("id", sa.String(36), nullable=False),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("agent_id", sa.String(128), nullable=False),
    sa.Column("subject_ref", sa.String(64), nullable=False),
    sa.Column("purpose", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("ciphertext", sa.LargeBinary),
    sa.Column("sealed_version", sa.Integer, nullable=False),
    sa.Column("key_generation", sa.Integer, nullable=False),
    sa.Column("content_hmac", sa.String(64), nullable=False),
    sa.Column("token_estimate", sa.Integer, nullable=False),
    sa.Column("provenance", sa.Text, nullable=False),
    sa.Column("authority", sa.String(16), nullable=False),
    sa.Column("trust", sa.String(16), nullable=False),
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("supersedes_id", sa.String(36)),
    sa.Column("superseded_by", sa.String(36)),
    sa.Column("idempotency_key", sa.String(128)),
    # The seq of the event that created the memory: the review queue's stable, gap-free order.
    sa.Column("created_seq", sa.BigInteger, nullable=False),
    # Why a tainted session's write was quarantined (``memory.agent_sessions``): a JSON cause
    # code, the tainting memory's id or the caller's bounded reason, and when; never content.
    sa.Column("session_taint", sa.Text),
    sa.PrimaryKeyConstraint("tenant_id", "id"),
    # A search's scope: the key, then every column ``memory.ranked_scope`` reads (covering).
    sa.Index(
        "ix_memories_scope",
        *("tenant_id", "agent_id", "purpose", "status", "expires_at"),
        *("id", "token_estimate", "authority", "trust", "created_at", "confidence"),
        *("subject_ref", "key_generation", "sealed_version", "kind"),
    ),
    sa.Index("ix_memories_subject", "tenant_id", "subject_ref"),
    sa.Index("ix_memories_review", "tenant_id", "status", "created_seq"),
    # An agent's own memories, newest first (``memory.own_records``: keyset pages).
    sa.Index("ix_memories_owner", "tenant_id", "agent_id", "created_seq"),
    # Operator memories join every agent's search of their purpose (``memory.visibility``).
    sa.Index("ix_memories_authority", "tenant_id", "authority", "purpose", "status", "expires_at"),
)

search_index = sa.Table(
    "search_index",
    metadata,
    sa.Column("memory_id", sa.String(36), nullable=False),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("subject_ref", sa.String(64), nullable=False),
    sa.Column("terms", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "memory_id"),
    sa.Index("ix_search_index_subject", "tenant_id", "subject_ref"),
)

# The inverted index a query reads: one posting per (memory, keyed term hash), written and
# dropped with the memory's ``search_index`` row. Its primary key is the only B-tree: it
# serves "postings of these terms" for one tenant, and "does this memory have a posting of
# these terms" (one seek per term); a memory's postings are dropped by key, from the term
# hashes its ``search_index`` row lists. On SQLite the table is that key alone (WITHOUT
# ROWID): a write touches one B-tree page per term instead of three B-trees, and the
# postings, over a quarter of a store, take a third of the space (migration 0018).
search_postings = sa.Table(
    "search_postings",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("term_hash", sa.String(64), nullable=False),
    sa.Column("memory_id", sa.String(36), nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "term_hash", "memory_id"),
    sqlite_with_rowid=False,
)

# A memory's embedding, sealed under its subject's data key (``custody.sealing``): derived
# like the search index, written and dropped with it, never a plaintext vector. ``model``
# is the embedder's id (``memory.embedding.model_id``); ``version`` the memory version the
# AAD binds.
memory_vectors = sa.Table(
    "memory_vectors",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("memory_id", sa.String(36), nullable=False),
    sa.Column("subject_ref", sa.String(64), nullable=False),
    sa.Column("key_generation", sa.Integer, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("model", sa.String(128), nullable=False),
    sa.Column("sealed", sa.LargeBinary, nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "memory_id"),
    sa.Index("ix_memory_vectors_subject", "tenant_id", "subject_ref"),
)

# The change token of each agent's scope (tenant, agent, purpose): a fresh value in the
# same transaction as every change to the scope's memories or their vectors
# (``store.scope_changes``), so a process may keep a scope's ranking columns and opened
# vectors while the token it read them under is still the one in the store.
scope_changes = sa.Table(
    "scope_changes",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("agent_id", sa.String(128), nullable=False),
    sa.Column("purpose", sa.String(64), nullable=False),
    sa.Column("token", sa.String(36), nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "agent_id", "purpose"),
)

idempotency_keys = sa.Table(
    "idempotency_keys",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("agent_id", sa.String(128), primary_key=True),
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("request_hash", sa.String(64), nullable=False),
    sa.Column("memory_id", sa.String(36), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
)

forgotten_subjects = sa.Table(
    "forgotten_subjects",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("subject_ref", sa.String(64), primary_key=True),
    sa.Column("forgotten_at", sa.String(32), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.Column("request_id", sa.String(36)),
    # The subjects whose erasure is accepted and not yet tombstoned (generation 0), read
    # by every scope read (``custody.read_fence.pending``).
    sa.Index("ix_forgotten_subjects_pending", "tenant_id", "generation"),
)

subject_keys = sa.Table(
    "subject_keys",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("subject_ref", sa.String(64), primary_key=True),
    sa.Column("generation", sa.Integer, primary_key=True),
    sa.Column("key_name", sa.String(200), nullable=False, unique=True),
    sa.Column("backend", sa.String(16), nullable=False),
    sa.Column("wrapped_dek", sa.LargeBinary, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("destroyed_at", sa.DateTime),
)

# The refs a subject was stored under before its id was folded (``custody.subject_aliases``):
# "alice\u200b-x" written by an earlier release, keyed apart from "alice-x" (migration 0028).
subject_aliases = sa.Table(
    "subject_aliases",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("alias_ref", sa.String(64), nullable=False),
    sa.Column("subject_ref", sa.String(64), nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "alias_ref"),
    sa.Index("ix_subject_aliases_subject", "tenant_id", "subject_ref"),
)

# The first result of a promote or reject sent with an idempotency key (a retry returns it):
# the item's metadata as it was then; its content is opened again from the sealed version.
review_decisions = sa.Table(
    "review_decisions",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("principal", sa.String(200), primary_key=True),
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("request_hash", sa.String(64), nullable=False),
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("memory_id", sa.String(36), nullable=False),
    sa.Column("result", sa.Text, nullable=False),
    sa.Column("sealed_version", sa.Integer, nullable=False),
    sa.Column("key_generation", sa.Integer, nullable=False),
    sa.Column("decided_at", sa.String(32), nullable=False),
)

# The retraction ledger: what each retraction removed (ids and counts, never content or a source ref).
retractions = sa.Table(
    "retractions",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("requested_by", sa.String(200), nullable=False),
    sa.Column("reason", sa.String(500), nullable=False),
    sa.Column("memory_id", sa.String(36)),
    sa.Column("source_ref", sa.String(512)),  # a retraction recorded before sources were hashed
    sa.Column("memory_ids", sa.Text, nullable=False),
    sa.Column("derived_ids", sa.Text, nullable=False),
    sa.Column("retracted_at", sa.String(32), nullable=False),
    sa.Column("event_seq", sa.BigInteger, nullable=False),
    # A retraction by source: the source's keyed hash (``Pseudonymizer.source_hash``), never the ref.
    sa.Column("source_hash", sa.String(64)),
    sa.Index("ix_retractions_tenant", "tenant_id"),
)

# How each derived index was built (``memory.reindex``): a rebuild records its recipe here.
index_recipes = sa.Table(
    "index_recipes",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("tokeniser", sa.String(64), nullable=False),
    sa.Column("tokeniser_version", sa.Integer, nullable=False),
    sa.Column("term_hash", sa.String(64), nullable=False),
    sa.Column("term_hash_version", sa.Integer, nullable=False),
    sa.Column("entries", sa.BigInteger),
    sa.Column("built_at", sa.String(32)),
    # The embedder whose sealed vectors the rebuild wrote (model id name@version/dims), if any.
    sa.Column("embedding_model", sa.String(128)),
    sa.Column("embedding_dims", sa.Integer),
)

PROJECTION_TABLES = (
    memories,
    search_index,
    search_postings,
    memory_vectors,
    idempotency_keys,
    forgotten_subjects,
    review_decisions,
    retractions,
)

api_tokens = sa.Table(
    "api_tokens",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("role", sa.String(32), nullable=False),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("agent_id", sa.String(128)),
    sa.Column("purposes", sa.Text, nullable=False),
    sa.Column("description", sa.String(200)),
    sa.Column("display_name", sa.String(100)),  # who the token stands for, shown in records
    sa.Column("email", sa.String(254)),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime),
    sa.Column("revoked_at", sa.DateTime),
    # JSON list of the source types it may assert; NULL: its role's default (``vault.policy``)
    sa.Column("source_types", sa.Text),
)

erasure_jobs = sa.Table(
    "erasure_jobs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("subject_ref", sa.String(64), nullable=False),
    sa.Column("subject_commitment", sa.String(64), nullable=False),
    sa.Column("commitment_salt", sa.String(64), nullable=False),
    sa.Column("legal_basis", sa.String(64), nullable=False),
    sa.Column("reference", sa.String(200)),
    sa.Column("requested_by", sa.String(200), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("received_at", sa.DateTime, nullable=False),
    sa.Column("due_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sa.Column("completed_at", sa.DateTime),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_error", sa.String(500)),
    sa.Column("report_id", sa.String(36)),
    sa.Column("lease_owner", sa.String(100)),  # the runner advancing the job, until lease_until
    sa.Column("lease_until", sa.DateTime),
    # Art. 12(3) deadlines: extension granted, the clock stopped now (paused_at) and before (paused_us)
    sa.Column("extension_months", sa.Integer, nullable=False, server_default="0"),
    sa.Column("paused_at", sa.DateTime),
    sa.Column("paused_us", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("identity_verification_ref", sa.String(200)),  # a reference only, never documents
    sa.Index("ix_erasure_jobs_status", "status"),
    sa.Index("ix_erasure_jobs_subject", "tenant_id", "subject_ref"),
)

# A filing sent with an idempotency key, for 24 hours (vault.erasure.filings): a retry returns
# the same request and its verification code, kept sealed under a key the database never holds.
erasure_filings = sa.Table(
    "erasure_filings",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("idempotency_key", sa.String(128), primary_key=True),
    sa.Column("job_id", sa.String(36), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),  # keyed HMAC of what was asked
    sa.Column("sealed_code", sa.LargeBinary, nullable=False),
    sa.Column("filed_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False),
    sa.Index("ix_erasure_filings_expires", "expires_at"),
)

# Identifiers of a subject attached to an erasure request (names, e-mails, phones, account
# numbers), kept only as the keyed term hashes the search index posts (``erasure.residue``):
# one row per identifier, its hashes space-separated, for the life of the request (deleted
# when it completes). ``residue`` is what the officer chose for other subjects' memories
# that mention them: ``retract`` or ``review``.
erasure_identifiers = sa.Table(
    "erasure_identifiers",
    metadata,
    sa.Column("job_id", sa.String(36), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("term_hashes", sa.Text, nullable=False),
    sa.Column("residue", sa.String(16), nullable=False),
)

erasure_steps = sa.Table(
    "erasure_steps",
    metadata,
    sa.Column("job_id", sa.String(36), primary_key=True),
    sa.Column("step", sa.String(32), primary_key=True),
    sa.Column("completed_at", sa.String(32), nullable=False),
    sa.Column("event_seq", sa.Integer, nullable=False),
    sa.Column("evidence", sa.Text, nullable=False),
)

erasure_extensions = sa.Table(
    "erasure_extensions",
    metadata,
    sa.Column("job_id", sa.String(36), primary_key=True),
    sa.Column("number", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("months", sa.Integer, nullable=False),
    sa.Column("reason", sa.String(500), nullable=False),
    sa.Column("subject_notified_at", sa.DateTime, nullable=False),
    sa.Column("extended_at", sa.DateTime, nullable=False),
    sa.Column("extended_by", sa.String(200), nullable=False),
    sa.Column("event_seq", sa.Integer, nullable=False),
)

legal_holds = sa.Table(
    "legal_holds",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("subject_ref", sa.String(64), nullable=False),
    sa.Column("reason", sa.String(500), nullable=False),
    sa.Column("reference", sa.String(200)),
    sa.Column("placed_by", sa.String(200), nullable=False),
    sa.Column("placed_at", sa.DateTime, nullable=False),
    sa.Column("lifted_at", sa.DateTime),
    sa.Index("ix_legal_holds_subject", "tenant_id", "subject_ref"),
)

checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("tree_size", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("root", sa.LargeBinary(32), nullable=False),
    sa.Column("note", sa.Text, nullable=False),
    sa.Column("signed_at", sa.String(32), nullable=False),
)

# Roots of completed chunks of the audit tree below the latest signed checkpoint: a cache
# that spares a restarted process rehashing every leaf (vault/audit/leaves.py).
merkle_chunk_roots = sa.Table(
    "merkle_chunk_roots",
    metadata,
    sa.Column("chunk_size", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("chunk_index", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("root", sa.LargeBinary(32), nullable=False),
)

erasure_reports = sa.Table(
    "erasure_reports",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("job_id", sa.String(36), nullable=False, unique=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("issued_at", sa.String(32), nullable=False),
    sa.Column("document", sa.Text, nullable=False),
)

erasure_final_reports = sa.Table(  # when a KMS's waiting window closes, chained to erasure_reports
    "erasure_final_reports",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("job_id", sa.String(36), nullable=False, unique=True),
    sa.Column("previous_report_id", sa.String(36), nullable=False),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("issued_at", sa.String(32), nullable=False),
    sa.Column("document", sa.Text, nullable=False),
)

audit_forks = sa.Table(
    "audit_forks",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("backup_id", sa.String(36), nullable=False),
    sa.Column("restored_at", sa.String(32), nullable=False),
    sa.Column("fork_tree_size", sa.Integer, nullable=False),  # the prefix both branches share
    sa.Column("abandoned_tree_size", sa.Integer, nullable=False),
    sa.Column("abandoned_checkpoints", sa.Text, nullable=False),  # JSON list of signed notes
    sa.Column("reapplied", sa.Text, nullable=False),  # JSON list of {tenant_id, request_id}
    sa.Column("event_seq", sa.Integer, nullable=False),  # the backup.restored event on the new branch
)

backups = sa.Table(
    "backups",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("tree_size", sa.Integer, nullable=False),
    sa.Column("location", sa.String(500), nullable=False),
)

# Console sign-ins (api/console): a token exchanged for a session. In the database, not in a
# process, so every node behind a load balancer knows it; only the id's SHA-256 is kept.
console_sessions = sa.Table(
    "console_sessions",
    metadata,
    sa.Column("id_hash", sa.String(64), primary_key=True),
    sa.Column("token_id", sa.String(36), nullable=False),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("last_seen_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False),  # absolute: created_at + the maximum lifetime
    sa.Index("ix_console_sessions_token_id", "token_id"),
)

# Values the console shows once (a filing's verification code, after its redirect): sealed
# under a key derived from the session id, deleted when shown or expired (``access.one_time``).
console_one_time = sa.Table(
    "console_one_time",
    metadata,
    sa.Column("session_hash", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("sealed", sa.LargeBinary, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False),
)

# When each periodic job of the servers last ran, whichever worker or node ran it
# (``store.turns``): a job that reads the whole store runs once per interval, not once per
# worker of every node.
scheduled_turns = sa.Table(
    "scheduled_turns",
    metadata,
    sa.Column("job", sa.String(64), primary_key=True),
    sa.Column("taken_at", sa.DateTime, nullable=False),
)

# Agents' sessions that became tainted (``memory.agent_sessions``): keyed by tenant, agent and
# a keyed hash of the session id (the id itself is not kept). Only tainted sessions have a
# row; it lives until ``expires_at`` (the session's last write or taint plus its TTL).
agent_sessions = sa.Table(
    "agent_sessions",
    metadata,
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("agent_id", sa.String(128), nullable=False),
    sa.Column("session_ref", sa.String(64), nullable=False),
    sa.Column("tainted_at", sa.DateTime, nullable=False),
    sa.Column("taint_cause", sa.Text, nullable=False),
    sa.Column("last_seen_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False),
    sa.PrimaryKeyConstraint("tenant_id", "agent_id", "session_ref"),
)

# Signed webhooks (``vault.webhooks``): a tenant's subscribed endpoints (the signing secret
# sealed under a key derived from the pepper), the outbox of events written in the
# transaction that changed a request's state, one delivery per (event, endpoint) and the
# attempts of each (status code and time, never a response body). Migration 0030.
webhook_endpoints = sa.Table(
    "webhook_endpoints",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("url", sa.String(2048), nullable=False),
    sa.Column("events", sa.Text, nullable=False),  # JSON list of event types
    sa.Column("sealed_secret", sa.LargeBinary, nullable=False),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Index("ix_webhook_endpoints_tenant", "tenant_id"),
)
webhook_events = sa.Table(
    "webhook_events",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),  # the ``webhook-id`` every delivery carries
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("type", sa.String(40), nullable=False),
    sa.Column("payload", sa.Text, nullable=False),  # the signed body: ids and statuses only
    sa.Column("created_at", sa.DateTime, nullable=False),
)
webhook_deliveries = sa.Table(
    "webhook_deliveries",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("event_id", sa.String(40), nullable=False),
    sa.Column("endpoint_id", sa.String(36), nullable=False),
    sa.Column("state", sa.String(12), nullable=False),  # pending, delivered, failed
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_attempt_at", sa.DateTime, nullable=False),
    sa.Column("lease_owner", sa.String(100)),  # the worker sending it, until lease_until
    sa.Column("lease_until", sa.DateTime),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
    sa.Index("ix_webhook_deliveries_endpoint", "tenant_id", "endpoint_id"),
)
webhook_attempts = sa.Table(
    "webhook_attempts",
    metadata,
    sa.Column("delivery_id", sa.String(36), primary_key=True),
    sa.Column("n", sa.Integer, primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("status_code", sa.Integer),  # None: no HTTP answer (refused, timeout, connection)
    sa.Column("outcome", sa.String(20), nullable=False),
)
