"""``lethe-verify``: the offline certificate verifier as a command of its own.

The entry point of the small ``lethe-verify`` wheel (``api.verifier_wheel``), which holds
only ``verify`` and the pure modules it needs, and depends on ``cryptography`` and
``rfc8785`` alone. It takes the same arguments as ``lethe verify`` and exits 0 only if
every check passes, 1 naming the failed checks, 2 when an input file cannot be read.

Exceptions: none escape; errors become exit codes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lethe.vault.audit.verify import verify_certificate


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        print(f"error: cannot read the {what} {path}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="lethe-verify", description="Verify a Lethe erasure certificate offline."
    )
    parser.add_argument("report", help="the erasure certificate (JSON)")
    parser.add_argument("--public-key", required=True, help="the issuer's Ed25519 public key (PEM)")
    parser.add_argument("--subject-id", help="check the certificate is about this subject ('-': stdin)")
    parser.add_argument("--verification-code", help="the code given when the request was filed ('-': stdin)")
    parser.add_argument("--tenant", help="check the certificate is for this tenant")
    parser.add_argument(
        "--checkpoint", help="an older signed checkpoint (note text, or an older certificate)"
    )
    parser.add_argument("--consistency-proof", help="JSON {first, second, proof} from the server")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    args = parser.parse_args(argv)
    subject, code = args.subject_id, args.verification_code
    if subject == "-":
        subject = sys.stdin.readline().rstrip("\n")
    if code == "-":
        code = sys.stdin.readline().rstrip("\n")
    result = verify_certificate(
        _read(args.report, "certificate"),
        _read(args.public_key, "public key"),
        subject_id=subject,
        tenant=args.tenant,
        older_checkpoint=_read(args.checkpoint, "checkpoint") if args.checkpoint else None,
        consistency_proof=_read(args.consistency_proof, "consistency proof")
        if args.consistency_proof
        else None,
        verification_code=code,
    )
    if args.json:
        checks = [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in result.checks]
        first = result.first_failure.name if result.first_failure else None
        print(
            json.dumps(
                {"ok": result.ok, "report_id": result.report_id, "first_failure": first, "checks": checks}
            )
        )
    else:
        width = max(len(c.name) for c in result.checks)
        for c in result.checks:
            print(f"{c.name.ljust(width)}  {'pass' if c.ok else 'FAIL'}  {c.detail}")
        print(result.summary())
    raise SystemExit(0 if result.ok else 1)


if __name__ == "__main__":
    main()
