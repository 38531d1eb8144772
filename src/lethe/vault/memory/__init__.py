"""Governed memory: the write pipeline, reads, review, retraction (and what derives from what),
search, validation, the policy table, their SQL."""
