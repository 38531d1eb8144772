"""Governed memory: the write pipeline, reads, review, search, validation, the policy table, their SQL."""
