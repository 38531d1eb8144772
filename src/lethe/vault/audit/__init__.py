"""The audit log: leaves, checkpoints, erasure certificates, offline verification, rendering."""
