"""Every error the core raises to its callers, in one tree, each with its HTTP status.

The api/ edge renders any ``VaultError`` as an RFC 9457 problem with the class's
``status`` and ``title`` and the instance's ``detail``; the CLI prints title and detail.
Catch ``VaultError`` for "the core refused", or a leaf for one reason. Messages never
contain memory content, subject ids or key material. The tree (status in brackets)::

    VaultError [500]                 base class; never raised itself
    ├── InvalidCommand [422]         the command is malformed; nothing was written
    │   ├── InvalidTtl               expiry in the past, above the kind's maximum, or both forms given
    │   ├── MissingProvenance        no or unknown source type, no source ref, a summary without sources
    │   ├── UnknownSource            a summary cites what is no live memory in the writer's scope
    │   │                            (unknown, another tenant's, agent's or purpose's: one answer)
    │   ├── UnknownKind              kind outside preference, fact, skill, task_summary, working_note
    │   ├── InvalidConfidence        confidence not a number between 0 and 1
    │   ├── InvalidPurpose           purpose not 1-64 characters of a-z 0-9 _ . : -
    │   ├── ForbiddenContent         the text holds a class the data policy forbids (a secret,
    │   │                            a card number, a configured pattern or identifier); its
    │   │                            problem's ``forbidden_class`` names the class, never the text
    │   └── DestinationRefused       a webhook URL the deployment's address rule refuses
    ├── Unauthenticated [401]        no credential, or one unknown, expired or revoked (one error for all)
    ├── ContentTooLarge [413]        content exceeds the configured limit
    ├── PolicyRefused [403]          the policy table has no rule for this role and source type
    │   └── SourceTypeRefused        the credential may not assert this source type (the detail names
    │                                the ones it may)
    ├── OutOfScope [403]             the credential does not cover the purpose or action
    ├── NotFound [404]               unknown, or outside the caller's tenant (indistinguishable)
    ├── KeyUnavailable [404]         a subject's key generation is destroyed or does not unwrap
    ├── VersionConflict [409]        expected version is not the current one (or the state forbids it)
    ├── IdempotencyConflict [409]    an idempotency key was reused with a different body
    ├── SubjectForgotten [409]       the erasure fence refuses writes for a forgotten subject
    ├── LegalHoldActive [409]        a legal hold blocks the erasure of this subject
    ├── DeadlineRefused [409]        the deadline rules (GDPR Art. 12(3)) refuse the change: an
    │                                extension past two months in total or told too late, a
    │                                pause once erasure has begun, a finished request
    ├── LogInconsistent [409]        the audit log contradicts itself or a signed checkpoint; nothing signed
    ├── CheckpointError [422]        a checkpoint or signed note is malformed or does not verify
    │                                (also a ``ValueError``: the pure checkpoint codec raises it)
    ├── BackupError [422]            a backup or restore cannot be made as asked (a missing tool, a
    │                                manifest or file that does not match, the KMS unreachable);
    │                                nothing was changed, and the same command fails again until
    │                                the cause named in the message is fixed
    ├── FeatureUnavailable [501]     a feature whose optional extra is not installed (webhooks)
    ├── StoreUnavailable [503]       the database or the KMS cannot be reached
    ├── StoreNotReady [503]          the store cannot be opened as it is: no data dir, missing key
    │                                files, or a schema another release wrote (the message names
    │                                the command that fixes it)
    └── InvalidRetention [503]       the retention settings contradict themselves (a TTL not
                                     positive or over ten years, a default above its maximum):
                                     raised at start-up, so no server runs with them (also a
                                     ``ValueError``: settings validation reports it)

Outside the tree, on purpose (each one never reaches a caller of the core as it is):

- ``StepFailed`` (``vault.erasure.steps``): control flow inside the erasure runner. A
  step, or a helper only a step calls (``scan_store``, ``ErasureReports.issue``), raises
  it to say "not now"; ``ErasureService.advance`` catches it, records its message as
  the job's ``last_error`` and leaves the job for the next run. A status would mean
  nothing: no request ever fails with it.
- ``CheckFailed`` (``vault.audit.certificate_format``): one failed check of the offline
  verifier, turned into a ``Check(ok=False)``; the verifier never raises.
- The pure codecs' errors, ``CanonicalJsonError`` (``vault.canonical``) and
  ``AuditTreeError`` with ``InvalidTreeRequest`` and ``LeafSourceError``
  (``vault.merkle``): these modules stand alone (the offline verifier ships them) and
  raise plain ``ValueError``-style errors. The core translates them where it uses
  them, as httpx does with httpcore: ``AuditLog`` turns a bad proof request into
  ``InvalidCommand`` and a damaged tree into ``LogInconsistent``; a
  ``CanonicalJsonError`` would be a programming error (every input is validated before
  it is canonicalised), so it stays a 500.
- keys/'s own tree (``KmsError`` and its subclasses, ``DecryptionFailed``,
  ``SigningKeyError``, ``FileScanFailed``): translated at the core's edge, never
  passed on: ``StoreUnavailable`` or ``KeyUnavailable`` (``custody.keyring``),
  ``StepFailed`` (erasure steps, ``scan_store``), ``BackupError`` (restore), and a
  decryption failure leaves the row out of a read (``custody.sealing``).

This module imports nothing outside the standard library, so the offline verifier
(``vault.audit.verify``) can carry it.
"""

from __future__ import annotations


class VaultError(Exception):
    """Base of every error the core raises to a caller; ``status`` is its HTTP status."""

    status = 500
    title = "Internal error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def extensions(self) -> dict[str, str]:
        """Extension members of this error's problem (RFC 9457 §3.2); none unless a leaf adds some."""
        return {}


class InvalidCommand(VaultError):
    status = 422
    title = "Invalid command"


class InvalidTtl(InvalidCommand):
    title = "Invalid expiry"


class MissingProvenance(InvalidCommand):
    title = "Missing provenance"


class UnknownSource(InvalidCommand):
    title = "Unknown source"


class UnknownKind(InvalidCommand):
    title = "Unknown kind"


class InvalidConfidence(InvalidCommand):
    title = "Invalid confidence"


class InvalidPurpose(InvalidCommand):
    title = "Invalid purpose"


class ForbiddenContent(InvalidCommand):
    """A write's text falls in a class the deployment's data policy forbids; nothing was stored.

    Built with ``of``; the plain constructor keeps every error's one-argument shape.
    """

    title = "Forbidden content"

    def __init__(self, detail: str, forbidden_class: str = "unclassified") -> None:
        super().__init__(detail)
        self.forbidden_class = forbidden_class

    @classmethod
    def of(cls, forbidden_class: str, field: str = "content") -> ForbiddenContent:
        """The refusal of ``field``'s text for ``forbidden_class``: names the class, never the text."""
        return cls(
            f"the {field} holds what this deployment's data policy forbids ({forbidden_class}); "
            "nothing was stored",
            forbidden_class,
        )

    def extensions(self) -> dict[str, str]:
        return {"forbidden_class": self.forbidden_class}


class Unauthenticated(VaultError):
    status = 401
    title = "Unauthenticated"


class ContentTooLarge(VaultError):
    status = 413
    title = "Content too large"


class PolicyRefused(VaultError):
    status = 403
    title = "Refused by policy"


class SourceTypeRefused(PolicyRefused):
    """Trust comes from the credential: a token asserts only the source types it was minted with."""

    title = "Source type not allowed"


class OutOfScope(VaultError):
    status = 403
    title = "Out of scope"


class NotFound(VaultError):
    status = 404
    title = "Not found"


class KeyUnavailable(VaultError):
    """Reads treat it as "absent" (same status and title as ``NotFound``), never as a leak."""

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


class DeadlineRefused(VaultError):
    """A request's deadline cannot change that way (Art. 12(3) rules, or the request's state)."""

    status = 409
    title = "Deadline change refused"


class LogInconsistent(VaultError):
    """The log contradicts itself or a signed checkpoint; nothing was signed."""

    status = 409
    title = "Audit log inconsistent"


class CheckpointError(VaultError, ValueError):
    """A checkpoint or signed note is malformed, or its signature does not verify."""

    status = 422
    title = "Invalid checkpoint"


class BackupError(VaultError):
    """A backup or restore could not be made; nothing was changed."""

    status = 422
    title = "Backup not possible"


class StoreUnavailable(VaultError):
    status = 503
    title = "Service unavailable"


class DestinationRefused(InvalidCommand):
    """A webhook URL the deployment's rule refuses (``vault.webhooks.guard``): a 422 when an
    admin subscribes it."""


class FeatureUnavailable(VaultError):
    """A feature whose optional extra this installation lacks (e.g. webhooks)."""

    status = 501
    title = "Not available in this installation"


class StoreNotReady(VaultError):
    status = 503
    title = "Store not ready"


class InvalidRetention(VaultError, ValueError):
    status = 503
    title = "Retention misconfigured"
