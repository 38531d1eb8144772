"""Every error the core raises, each with the HTTP-style status it maps to.

- ``InvalidCommand`` (422) and its subclasses ``InvalidTtl``, ``MissingProvenance``,
  ``UnknownKind``, ``InvalidConfidence``, ``InvalidPurpose``: the command is malformed;
  nothing was written.
- ``Unauthenticated`` (401): no credential, or one that is unknown, expired or revoked
  (one error for all, so a caller learns nothing about which).
- ``ContentTooLarge`` (413): content exceeds the configured limit.
- ``PolicyRefused`` (403): the policy table has no rule for this role and source.
- ``OutOfScope`` (403): the caller's credential does not cover the purpose or action.
- ``NotFound`` (404): unknown, or outside the caller's tenant (indistinguishable).
- ``VersionConflict`` (409): expected version is not the current one.
- ``IdempotencyConflict`` (409): an idempotency key was reused with a different body.
- ``SubjectForgotten`` (409): the erasure fence refuses writes for a forgotten subject.
- ``LegalHoldActive`` (409): a legal hold blocks the erasure of this subject.
- ``StoreUnavailable`` (503): the database or the KMS cannot be reached.
- ``StoreNotReady`` (503): the store cannot be opened as it is: no data dir, missing key
  files, or a schema another release wrote (the message names the command that fixes it).

Messages never contain memory content, subject ids or key material.
"""

from __future__ import annotations


class VaultError(Exception):
    status = 500
    title = "Internal error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidCommand(VaultError):
    status = 422
    title = "Invalid command"


class InvalidTtl(InvalidCommand):
    title = "Invalid expiry"


class MissingProvenance(InvalidCommand):
    title = "Missing provenance"


class UnknownKind(InvalidCommand):
    title = "Unknown kind"


class InvalidConfidence(InvalidCommand):
    title = "Invalid confidence"


class InvalidPurpose(InvalidCommand):
    title = "Invalid purpose"


class Unauthenticated(VaultError):
    status = 401
    title = "Unauthenticated"


class ContentTooLarge(VaultError):
    status = 413
    title = "Content too large"


class PolicyRefused(VaultError):
    status = 403
    title = "Refused by policy"


class OutOfScope(VaultError):
    status = 403
    title = "Out of scope"


class NotFound(VaultError):
    status = 404
    title = "Not found"


class VersionConflict(VaultError):
    status = 409
    title = "Version conflict"


class IdempotencyConflict(VaultError):
    status = 409
    title = "Idempotency key reused"


class SubjectForgotten(VaultError):
    status = 409
    title = "Subject forgotten"


class LegalHoldActive(VaultError):
    status = 409
    title = "Legal hold active"


class StoreUnavailable(VaultError):
    status = 503
    title = "Service unavailable"


class StoreNotReady(VaultError):
    status = 503
    title = "Store not ready"


class KeyUnavailable(VaultError):
    status = 404
    title = "Not found"


class LogInconsistent(VaultError):
    """The log contradicts itself or a signed checkpoint; nothing was signed."""

    status = 409
    title = "Audit log inconsistent"
