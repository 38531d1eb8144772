"""``python -m lethe.api.bench load|loadgen``: the entry points of the bench's subprocesses."""

import sys

from lethe.api.bench import main

sys.exit(main(sys.argv[1:]))
