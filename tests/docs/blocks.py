"""The fenced code blocks of the README and ``docs/*.md`` that a reader would run.

A block is runnable when its info string names a shell (``sh``, ``bash``, ``shell``,
``console``) or Python (``python``, ``py``). It opts out only with a marker on the nearest
non-blank line above its fence, visible in the Markdown source:

- ``<!-- not-run: REASON -->``: not run, for the reason given (it starts a server, runs the
  whole suite, needs OpenBao/Vault or a second machine, ...); a marker without a reason is
  an error;
- ``<!-- excerpt-of: PATH -->``: a Python block quoted from PATH (a file run by a test of its
  own); not run here, but checked to be statement for statement a part of PATH.

Everything else (``json``, ``hcl``, unlabelled listings) is not code a reader runs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

SHELL = frozenset({"sh", "bash", "shell", "console"})
PYTHON = frozenset({"python", "py"})
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
MARKER = re.compile(r"^<!--\s*(?P<kind>not-run|excerpt-of):(?P<text>.*?)-->\s*$")


class MarkerError(ValueError):
    """A marker that does not say why, or sits above a block that is not runnable."""


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    lang: str  # "shell" or "python"
    code: str
    info: str  # the fence's language as written
    not_run: str | None = None  # the reason, when opted out
    excerpt_of: str | None = None  # the quoted file, repository-relative

    @property
    def where(self) -> str:
        return f"{self.doc.name}:{self.line}"

    def commands(self) -> str:
        """The shell text to run: a ``console`` block's ``$ `` lines (with continuations)."""
        if self.info != "console":
            return self.code
        kept: list[str] = []
        continuing = False
        for line in self.code.splitlines():
            if line.startswith("$ ") or continuing:
                kept.append(line[2:] if line.startswith("$ ") and not continuing else line)
                continuing = line.endswith("\\")
        return "\n".join(kept) + "\n"


def blocks(doc: Path) -> list[Block]:
    """Every runnable block of ``doc``, in order, with its marker if it has one."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip().split(" ")[0].lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        code = "\n".join(lines[i + 1 : end]) + "\n"
        marker = _marker(lines, i)
        runnable = info in SHELL or info in PYTHON
        if marker and not runnable:
            raise MarkerError(f"{doc.name}:{i + 1}: a marker above a {info or 'plain'} block")
        if runnable:
            lang = "shell" if info in SHELL else "python"
            found.append(Block(doc, i + 1, lang, code, info, *_split(marker, doc, i + 1)))
        i = end + 1
    return found


def _marker(lines: list[str], fence_index: int) -> tuple[str, str] | None:
    j = fence_index - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    m = MARKER.match(lines[j].strip()) if j >= 0 else None
    return (m.group("kind"), m.group("text").strip()) if m else None


def _split(marker: tuple[str, str] | None, doc: Path, line: int) -> tuple[str | None, str | None]:
    if marker is None:
        return None, None
    kind, text = marker
    if not text:
        raise MarkerError(f"{doc.name}:{line}: `{kind}:` needs a reason or a path")
    return (text, None) if kind == "not-run" else (None, text)


def is_excerpt(code: str, source: str) -> bool:
    """Whether ``code``'s statements appear, in order and consecutively, in some statement
    list of ``source`` (compared as syntax trees, so formatting may differ)."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    want = [ast.dump(s) for s in compile(code, "<block>", "exec", flags=flags).body]
    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
                continue
            have = [ast.dump(s) for s in body]
            for k in range(len(have) - len(want) + 1):
                if have[k : k + len(want)] == want:
                    return True
    return False
