"""The names of an erasure job's steps: one vocabulary for the steps, the certificate and
the offline verifier.

``Step`` is a ``StrEnum``: each member is its stored name, so the rows of ``erasure_steps``,
the ``erasure.step`` events and the certificates read and write exactly the strings they
always did (a certificate issued before this type existed verifies after it). Code that
writes a name into JSON or a row writes ``step.value``, a plain ``str``.

Part of the standalone verifier (``vault.audit.verify``): standard library only.

Exceptions: ``ValueError`` from ``Step(name)`` for a name that is no step.
"""

from __future__ import annotations

from enum import StrEnum


class Step(StrEnum):
    """Every step an erasure job can record, in the order a job records them."""

    RECEIVED = "received"
    TOMBSTONED = "tombstoned"
    DERIVED_PURGED = "derived_purged"
    KEY_DESTROYED = "key_destroyed"
    VERIFIED = "verified"
    RESIDUE_HUNTED = "residue_hunted"  # only for requests with identifiers attached
    COMPACTED = "compacted"
    REPORTED = "reported"  # issues the first certificate
    KEY_IRRECOVERABLE = "key_irrecoverable"  # logged when a KMS's waiting window closed


# The steps every certificate begins with, in this order (the verifier's ``step_order``).
CORE_STEP_ORDER: tuple[str, ...] = (
    Step.RECEIVED.value,
    Step.TOMBSTONED.value,
    Step.DERIVED_PURGED.value,
    Step.KEY_DESTROYED.value,
    Step.VERIFIED.value,
)
