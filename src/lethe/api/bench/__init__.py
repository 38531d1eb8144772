"""``lethe bench``: Lethe's performance figures, each set against a baseline that runs in
the same process on the same machine, so the ratios travel and the absolute numbers
only describe this machine. Nothing here asserts a timing: the figures are reported with
the design's targets, and ``met`` says whether each target holds on this run.

One module per figure (the key of ``results["figures"]`` in brackets):

- ``writes``: 1, governed encrypted writes against plain inserts (``write_throughput``);
- ``envelope``: 2, envelope encryption against Transit per record on OpenBao (``vault_envelope``);
- ``search``: 3, scoped search latency in a small and a large store (``search_latency``);
- ``forget``: 4, the erasure job by step against a plain DELETE (``forget_latency``);
- ``compaction``, ``replay``: 5, events/s of compaction and of ``replay.check`` (``compaction``,
  ``replay``);
- ``http_load`` (with ``loadgen``, its load generator subprocess): 6, search over HTTP against
  a real ``lethe serve`` (``http_search``);
- ``rss``: 7, peak resident memory of every phase and subprocess (``peak_rss``).

Around them: ``runner`` (the run, in order), ``context`` (what the figures share),
``scales`` (sizes, figure names, targets), ``workload`` (the memories and callers),
``datagen`` (multi-process bulk loads), ``baselines`` (plain SQLite tables), ``machine``,
``stats``, ``subprocesses``, ``openbao`` (the OpenBao dev server, shared with the tests),
``summary`` and ``report`` (the table, the Markdown and the JSON). ``python -m
lethe.api.bench load|loadgen`` (``__main__``) runs the subprocesses.

This package imports nothing at import time, so that the load generator stays light.
"""
