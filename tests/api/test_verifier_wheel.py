"""Auditors install the verifier alone: the served ``lethe-verify`` wheel installs with pip
and verifies a real certificate with nothing of Lethe's server present.

The wheel is installed with ``pip install --no-deps --target`` (no network needed), then
run by a fresh interpreter started without site-packages (``-S``), given only the wheel's
files and the directory holding ``cryptography`` and ``rfc8785``: the editable Lethe of
this checkout is out of reach, so what runs is the wheel.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import cryptography
import rfc8785
from fastapi.testclient import TestClient

from lethe.api.verifier_wheel import NAME, build_wheel
from tests.api.conftest import Api
from tests.conftest import agent, officer, write_cmd


def test_the_wheel_is_the_same_bytes_each_time_and_lists_only_the_verifier() -> None:
    data = build_wheel()
    assert data == build_wheel()
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        names = wheel.namelist()
    assert not any(n.startswith(("lethe/api", "lethe/vault/store", "lethe/client")) for n in names)
    assert (
        "lethe/vault/audit/verify.py" in names and f"{NAME[: NAME.index('-py3')]}.dist-info/RECORD" in names
    )


def run_alone(target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    deps = {str(Path(m.__file__).resolve().parents[1]) for m in (cryptography, rfc8785)}
    code = (
        "import sys; sys.path[:0] = " + repr([str(target), *sorted(deps)]) + "\n"
        "import lethe.vault.audit.verify_main as m\n"
        "assert m.__file__.startswith(" + repr(str(target)) + "), m.__file__\n"
        "m.main(sys.argv[1:])\n"
    )
    return subprocess.run(
        [sys.executable, "-S", "-c", code, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_served_wheel_installs_and_verifies_a_certificate_on_its_own(api: Api, tmp_path: Path) -> None:
    c = api.container
    for i in range(2):
        c.memories.write(agent(), write_cmd(f"alice likes tea {i}"))
    filed = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "DSR-1")
    c.erasure.run_pending()
    report = c.reports.load(c.erasure.get(officer(), filed.id).report_id)
    client: TestClient = api.client
    r = client.get(f"/verify/{NAME}")
    assert r.status_code == 200 and r.content == build_wheel()
    wheel = tmp_path / NAME
    wheel.write_bytes(r.content)
    target = tmp_path / "site"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        "--target",
        str(target),
    ]
    installed = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    assert (target / "bin" / "lethe-verify").exists()
    cert, key = tmp_path / "certificate.json", tmp_path / "lethe-public.pem"
    cert.write_bytes(report.document)
    key.write_text(c.audit.public_key().pem)
    ok = run_alone(
        target,
        str(cert),
        "--public-key",
        str(key),
        "--subject-id",
        "alice@example.com",
        "--verification-code",
        filed.verification_code,
        "--json",
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ok"] is True
    tampered = tmp_path / "tampered.json"
    tampered.write_bytes(report.document.replace(b"gdpr-art17-1a", b"gdpr-art17-1b"))
    bad = run_alone(target, str(tampered), "--public-key", str(key))
    assert bad.returncode == 1 and "FAILED: signature" in bad.stdout
    missing = run_alone(target, str(tmp_path / "nothing.json"), "--public-key", str(key))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
