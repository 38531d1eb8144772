"""The right to be forgotten: the erasure workflow, forgetting, compaction, backups."""
