"""The docs and messages never tell anyone to install ``lethe-vault`` by its bare name: the
name is not Lethe's on the public index, so ``pip install lethe-vault`` (with or without an
extra, or through an extra index) would install whoever holds it there. The one install
command is a direct URL to the server's own wheel (``docs/agents.md``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# ``pip install lethe-vault``, ``'lethe-vault[client]'``, ... not followed by ``@ <url>``
BARE = re.compile(r"""pip install\s+(?:-\S+\s+)*["']?lethe-vault(?:\[[^\]]*\])?(?![\[\w-])["']?(?!\s*@)""")


def install_lines() -> list[tuple[str, str]]:
    docs = ROOT / "docs"
    texts = [ROOT / "README.md", *sorted(docs.rglob("*.md")), *sorted(docs.rglob("*.py"))]
    texts += sorted((ROOT / "src" / "lethe").rglob("*.py"))
    texts += [ROOT / "scripts" / n for n in ("run.sh", "test.sh")]
    return [
        (f"{p.relative_to(ROOT)}:{n}", line)
        for p in texts
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "pip install" in line
    ]


def test_the_pattern_catches_a_bare_install_and_passes_the_url_one() -> None:
    bares = ("pip install lethe-vault", "pip install 'lethe-vault[client]'", 'pip install -U "lethe-vault"')
    for bare in bares:
        assert BARE.search(bare), bare
    url = 'pip install "lethe-vault[client] @ $LETHE/wheels/lethe_vault-0.1.0-py3-none-any.whl"'
    assert not BARE.search(url)


def test_no_doc_or_message_installs_lethe_vault_by_its_bare_name() -> None:
    lines = install_lines()
    assert any("lethe-vault[client] @ $LETHE/wheels/" in line for _, line in lines)  # the docs do say how
    bare = [f"{where}: {line.strip()}" for where, line in lines if BARE.search(line)]
    assert bare == []
    assert not any("--extra-index-url" in line or "--index-url" in line for _, line in lines)


def test_the_documented_wheel_name_is_the_one_the_server_serves() -> None:
    from lethe.api.client_wheel import ROUTE, wheel_name

    assert f"{ROUTE}/{wheel_name()}" in (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
