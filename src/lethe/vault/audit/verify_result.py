"""What the offline verifier answers: each named check, passed or failed with its reason.

Part of the standalone verifier (``vault.audit.verify``): standard library only.

Exceptions: none.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class VerificationResult:
    checks: tuple[Check, ...]
    report_id: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def first_failure(self) -> Check | None:
        return next((c for c in self.checks if not c.ok), None)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.ok]

    def summary(self) -> str:
        if self.ok:
            return f"VERIFIED: all {len(self.checks)} checks passed"
        first = self.first_failure
        assert first is not None
        counts = f"{len(self.failed)} of {len(self.checks)} checks failed"
        return f"FAILED: {first.name}: {first.detail} ({counts})"
