"""Figure 2, ``vault_envelope``: envelope encryption against Transit per record, on OpenBao.

On a real OpenBao dev server: Lethe's design (a subject's data key comes from Transit once,
is cached, and every record is sealed locally) against the naive design that calls
Transit ``encrypt`` for every record (through hvac). Per-record encryption is the
headline ratio; whole durable writes are measured beside it.
"""

from __future__ import annotations

import base64
import json
import math
import random
import time
from collections.abc import Callable
from typing import Any

import hvac

from lethe.api.bench.context import RunContext
from lethe.api.bench.openbao import find_bao_binary
from lethe.api.bench.scales import TARGETS
from lethe.api.bench.stats import percentiles, rate, ratio
from lethe.api.bench.workload import agent_caller, warm_subjects, write_command
from lethe.api.bootstrap import Container
from lethe.vault.custody.sealing import seal
from lethe.vault.model import Caller

TRANSIT_KEY = "lethe-bench-naive"


class CountingKms:
    """A ``KeyManager`` proxy that counts calls (to show none sit on the per-record path)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kwargs)

        return counted

    def total(self) -> int:
        return sum(self.calls.values())


def measure(ctx: RunContext) -> dict[str, Any]:
    """Skipped without OpenBao (unless ``--kms vault``, where the runner requires it)."""
    if find_bao_binary() is None:
        return {"skipped": "no OpenBao", "met": None, "target": TARGETS["vault_envelope"]}
    bao = ctx.ensure_openbao()
    assert bao is not None
    c = ctx.build("vault-writes", kms="vault")
    client = hvac.Client(url=bao.addr, token=bao.token, timeout=10)
    try:
        counting = CountingKms(c.keyring.kms)
        c.keyring.kms = counting
        caller = agent_caller("bench-vault")
        rng = random.Random(12)
        subjects = warm_subjects(c.memories, caller, rng)  # creates the Transit and data keys: not timed
        warm_calls = dict(counting.calls)
        counting.calls.clear()
        client.secrets.transit.create_key(TRANSIT_KEY, key_type="aes256-gcm96")

        def transit_encrypt(subject: str, content: str) -> None:
            body = json.dumps({"s": subject, "c": content}, separators=(",", ":")).encode()
            client.secrets.transit.encrypt_data(TRANSIT_KEY, plaintext=base64.b64encode(body).decode())

        ours, naive, calls_during_writes = _durable_writes(
            ctx, c, caller, subjects, rng, counting, transit_encrypt
        )
        env_t, lookup_t, naive_t = _per_record(ctx, c, caller, subjects[0], rng, transit_encrypt)
    finally:
        client.adapter.close()
        c.close()
    env_rate, naive_rate, lookup_rate = rate(env_t), rate(naive_t), rate(lookup_t)
    ours_rate, naive_w_rate = rate(ours), rate(naive)
    r = ratio(env_rate, naive_rate)
    local = ctx.results["figures"].get("write_throughput", {}).get("ours_per_s")
    return {
        "openbao": ctx.results["machine"].get("openbao"),
        "encryptions": len(env_t),
        "envelope_per_s": round(env_rate, 1),
        "transit_per_record_per_s": round(naive_rate, 1),
        "ratio": r,
        "target": TARGETS["vault_envelope"],
        "met": r >= 20,
        "envelope_latency": percentiles(env_t),
        "lookup_seal_per_s": round(lookup_rate, 1),
        "lookup_seal_latency": percentiles(lookup_t),
        "lookup_seal_ratio": ratio(lookup_rate, naive_rate),
        "transit_latency": percentiles(naive_t),
        "writes": len(ours),
        "ours_writes_per_s": round(ours_rate, 1),
        "naive_writes_per_s": round(naive_w_rate, 1),
        "writes_ratio": ratio(ours_rate, naive_w_rate),
        "ours_write_latency": percentiles(ours),
        "naive_write_latency": percentiles(naive),
        "kms_calls_warmup": warm_calls,
        "kms_calls_during_timed_writes": calls_during_writes,
        "vault_vs_local_writes_ratio": ratio(ours_rate, local) if local else None,
    }


def _durable_writes(
    ctx: RunContext,
    c: Container,
    caller: Caller,
    subjects: list[str],
    rng: random.Random,
    counting: CountingKms,
    transit_encrypt: Callable[[str, str], None],
) -> tuple[list[float], list[float], int]:
    """Identical durable writes in rounds; the naive side also pays Transit per record."""
    s = ctx.scale
    ours: list[float] = []
    naive: list[float] = []
    calls_during_writes = 0
    per_round = math.ceil(s.vault_writes / s.write_rounds)
    for r in range(s.write_rounds):
        for i in range(per_round):
            cmd = write_command(rng, subjects[i % len(subjects)], f"v/{r}/{i}")
            t = time.perf_counter()
            c.memories.write(caller, cmd)
            ours.append(time.perf_counter() - t)
        calls_during_writes = counting.total()
        for i in range(per_round):
            cmd = write_command(rng, subjects[i % len(subjects)], f"n/{r}/{i}")
            t = time.perf_counter()
            transit_encrypt(cmd.subject_id, cmd.content)
            c.memories.write(caller, cmd)
            naive.append(time.perf_counter() - t)
    return ours, naive, calls_during_writes


def _per_record(
    ctx: RunContext,
    c: Container,
    caller: Caller,
    subject: str,
    rng: random.Random,
    transit_encrypt: Callable[[str, str], None],
) -> tuple[list[float], list[float], list[float]]:
    """The per-record encryption alone: the cached data key and a local seal, Lethe's write
    path as it is (the key lookup asks the DEK cache for the subject's newest generation; the
    write's own transaction checks it), and one Transit round trip."""
    tenant = caller.tenant_id
    ref = c.pseudonyms.subject_ref(tenant, subject)
    generation = c.keyring.key_for_write(tenant, ref).generation
    contents = [write_command(rng, subject, f"c/{i}").content for i in range(ctx.scale.crypto_ops)]
    env_t: list[float] = []
    lookup_t: list[float] = []
    naive_t: list[float] = []
    for i, content in enumerate(contents):
        t = time.perf_counter()
        dek = c.keyring.cache.get((tenant, ref, generation))
        if dek is None:  # evicted: fetch it the normal way
            dek = c.keyring.key_for_write(tenant, ref).data_key
        seal(dek, tenant, ref, str(i), 1, subject, content)
        env_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        key = c.keyring.key_for_write(tenant, ref, cached=True)
        seal(key.data_key, tenant, ref, str(i), 1, subject, content)
        lookup_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        transit_encrypt(subject, content)
        naive_t.append(time.perf_counter() - t)
    return env_t, lookup_t, naive_t
