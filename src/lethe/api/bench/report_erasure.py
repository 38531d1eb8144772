"""The erasure sections of ``docs/performance.md``: forgetting a subject step by step, compaction
and replay.
"""

from __future__ import annotations

from typing import Any

from lethe.api.bench.forget import STEPS
from lethe.api.bench.report_text import para, table
from lethe.api.bench.summary import fmt


def forget(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    fg = figs.get("forget_latency", {})
    out = ["## 4. Forget latency by step"]
    if "subjects" not in fg:
        return out
    rows = [
        [
            f"{int(n):,}",
            fmt(r["headline_ms"]),
            *(fmt(r["steps_ms"].get(x)) for x in STEPS),
            fmt(r["baseline_delete_ms"]),
            fmt(r["ratio"]),
        ]
        for n, r in fg["subjects"].items()
    ]
    lg = fg.get("large_store")
    if lg:
        rows.append(
            [f"{lg['memories']:,} in the large store", fmt(lg["headline_ms"])]
            + [fmt(lg["steps_ms"].get(x)) for x in STEPS]
            + ["", ""]
        )
    return [
        *out,
        para(
            "One erasure job (`ErasureService.request`, then `advance`) per subject, in a store that",
            f"holds the forget subjects ({fg['store_events_before']:,} events), and once more for a",
            f"subject of {min(sp['forget_sizes'])} memories added to the large store.",
            "Step durations come",
            "from the job's step timestamps, each from the end of the previous step (`received` from",
            "just before the request). The headline is received -> verified: tombstone, derived purge,",
            "key destruction and verification. Compaction (rewrite, WAL checkpoint, byte scan of the",
            "store files for the dead ciphertext; VACUUM only if the scan still finds a slice) and the",
            "signed report follow and are shown apart.",
            "Baseline: a plain `DELETE` of the same rows from a copy of them, in one durable",
            "transaction.",
            *(
                [
                    "Before the large-store job the generated log is signed once (what a server's",
                    f"periodic checkpoint job does; {fmt(lg['first_checkpoint_ms'])} ms) and the store",
                    "reopened, so its report step runs as after a restart. Its target: from the request",
                    "to `reported` (compaction and report included) <= 5 s, the report step <= 1 s.",
                ]
                if lg and "first_checkpoint_ms" in lg
                else []
            ),
        ),
        table(["memories", "headline ms", *STEPS, "plain DELETE ms", "ratio"], rows),
        para(
            "Headline of the largest subject against the smallest:",
            f"{fmt(fg['ratio_largest_to_smallest'], 2)}x.",
        ),
    ]


def compaction_and_replay(figs: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    cp, rp = figs.get("compaction", {}), figs.get("replay", {})
    out = ["## 5. Compaction and replay"]
    if "rewrite_events_per_s" in cp:
        sec = cp["seconds"]
        out += [
            para(
                f"{cp['events_rewritten']:,} dead events ({sp['compaction_subjects']} subjects of",
                f"{sp['compaction_per_subject']:,} memories, forgotten with the core steps only) in a log of",
                f"{cp['store_events']:,} events. Rewrite: `Compactor.compact(only_forgotten=True,",
                "reclaim=False)`; then reclamation (WAL checkpoint, VACUUM), timed apart. The byte scan of",
                "the files for slices of dead ciphertext costs slices x bytes, so it runs here for a sample",
                f"of {cp['scan_ciphertexts_sampled']} ciphertexts:",
                f"{fmt(cp['scan_ms_per_slice_per_mib'], 4)} ms",
                "per slice per MiB of store (the forget job's compaction step scans for every dead",
                "ciphertext). Baseline: the same rows of a copy of the log nulled by plain `UPDATE`s, 1,000",
                "per transaction.",
            ),
            table(
                ["", "seconds", "events/s"],
                [
                    ["select dead ciphertext", fmt(sec["select_dead"], 3), ""],
                    ["rewrite", fmt(sec["rewrite"], 3), fmt(cp["rewrite_events_per_s"], 0)],
                    ["reclaim (checkpoint, VACUUM)", fmt(sec["reclaim_vacuum"], 3), ""],
                    [
                        "select + rewrite + reclaim",
                        fmt(sec["select_dead"] + sec["rewrite"] + sec["reclaim_vacuum"], 3),
                        fmt(cp["end_to_end_events_per_s"], 0),
                    ],
                    [f"scan files ({cp['scan_slices']} slices, sample)", fmt(sec["scan_files"], 3), ""],
                    ["baseline: plain UPDATE", "", fmt(cp["baseline_update_rows_per_s"], 0)],
                ],
            ),
            para(
                f"Ratio rewrite/baseline {fmt(cp['ratio'], 3)}. Store",
                f"{cp['store_bytes_before_reclaim']:,} ->",
                f"{cp['store_bytes_after_reclaim']:,} bytes; slices of dead ciphertext found by the scan:",
                f"{cp['scan_slices_found']}.",
            ),
        ]
    if "events_per_s" in rp:
        out += [
            para(
                f"`replay.check` (replay into a scratch database, then diff) over {rp['events']:,} events:",
                f"{fmt(rp['events_per_s'], 0)} events/s ({fmt(rp['seconds'], 2)} s,",
                f"{'identical' if rp['identical'] else 'DIFFERENT'}). Baseline: reading the log in order in",
                f"the same batches and parsing every payload, {fmt(rp['baseline_read_events_per_s'], 0)}",
                f"events/s; ratio {fmt(rp['ratio'], 3)}. Target: >= 20,000 events/s.",
            )
        ]
    return out
