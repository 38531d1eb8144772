"""Pack files into a pure-Python wheel: the part the verifier's and the client's wheels share.

Both wheels are built on request from the code the server runs; this writes the
``WHEEL`` file and the ``RECORD`` (each file's SHA-256, as pip checks it) and zips them with
a fixed timestamp, so the same sources give the same wheel, byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

_FIXED_TIME = (2026, 1, 1, 0, 0, 0)
_WHEEL = b"Wheel-Version: 1.0\nGenerator: lethe\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def pack_wheel(dist_info: str, files: dict[str, bytes]) -> bytes:
    """The wheel of ``files`` (paths inside the wheel; ``dist_info``'s ``METADATA`` and any
    ``entry_points.txt`` among them), with its ``WHEEL`` and ``RECORD`` added."""
    files = {**files, f"{dist_info}/WHEEL": _WHEEL}
    record = "".join(f"{path},{_digest(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            entry = zipfile.ZipInfo(path, date_time=_FIXED_TIME)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            wheel.writestr(entry, data)
    return out.getvalue()
