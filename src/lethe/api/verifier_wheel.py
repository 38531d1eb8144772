"""The ``lethe-verify`` wheel: the offline verifier on its own, for auditors to install.

Built on request from the modules installed with this server (so it always matches the
certificates it issues): ``vault.audit.verify`` and the pure modules it imports, with a
``lethe-verify`` command (``vault.audit.verify_main``). It needs only ``cryptography`` and
``rfc8785``; ``tests/unit/test_standalone_verifier.py`` keeps ``verify`` importable with
nothing else. Served at ``/verify/lethe_verify-<version>-py3-none-any.whl``.

The files keep their ``lethe.*`` names: install the wheel where Lethe itself is not.

Exceptions: none of its own; ``OSError`` if an installed module cannot be read.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

import lethe.keys
import lethe.vault

VERSION = "0.1.0"
NAME = f"lethe_verify-{VERSION}-py3-none-any.whl"
MODULES = {
    lethe.keys: ("__init__.py", "signing.py"),
    lethe.vault: (
        "__init__.py",
        "errors.py",
        "canonical.py",
        "merkle.py",
        "audit/__init__.py",
        "audit/checkpoint.py",
        "audit/certificate_format.py",
        "audit/verify.py",
        "audit/verify_main.py",
    ),
}
_DIST = f"lethe_verify-{VERSION}.dist-info"
_FIXED_TIME = (2026, 1, 1, 0, 0, 0)  # the same sources give the same wheel, byte for byte


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel() -> bytes:
    files: dict[str, bytes] = {}
    for package, names in MODULES.items():
        root = Path(package.__path__[0])
        prefix = package.__name__.replace(".", "/")
        for name in names:
            files[f"{prefix}/{name}"] = (root / name).read_bytes()
    files[f"{_DIST}/METADATA"] = (
        "Metadata-Version: 2.1\nName: lethe-verify\n"
        f"Version: {VERSION}\nSummary: Offline verifier of Lethe erasure certificates\n"
        "License: Apache-2.0\nRequires-Python: >=3.11\n"
        "Requires-Dist: cryptography>=42\nRequires-Dist: rfc8785>=0.1.4\n"
    ).encode()
    files[f"{_DIST}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: lethe\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{_DIST}/entry_points.txt"] = (
        b"[console_scripts]\nlethe-verify = lethe.vault.audit.verify_main:main\n"
    )
    record = "".join(f"{path},{_digest(data)},{len(data)}\n" for path, data in files.items())
    files[f"{_DIST}/RECORD"] = (record + f"{_DIST}/RECORD,,\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            wheel.writestr(info, data)
    return out.getvalue()
