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

from pathlib import Path

import lethe.keys
import lethe.vault
from lethe.api.wheel_pack import pack_wheel

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
        "audit/step_evidence.py",
        "audit/step_names.py",
        "audit/verify.py",
        "audit/verify_checkpoint.py",
        "audit/verify_evidence.py",
        "audit/verify_result.py",
        "audit/verify_main.py",
    ),
}
_DIST = f"lethe_verify-{VERSION}.dist-info"


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
    files[f"{_DIST}/entry_points.txt"] = (
        b"[console_scripts]\nlethe-verify = lethe.vault.audit.verify_main:main\n"
    )
    return pack_wheel(_DIST, files)
