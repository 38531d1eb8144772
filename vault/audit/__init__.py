"""The audit log: checkpoints, erasure certificates, offline verification, rendering."""
