"""The docs do not call missing what the server serves: a paragraph that says something
does not exist (or has no method) names no route the app serves and no method or field
of the client. (docs/agents.md said so of ``GET /v1/audit/kpis`` and ``verification_code``
long after both were built.)"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from fastapi.routing import APIRoute

from lethe.api.http.routes import audit, erasure, health, memories, review, sessions, subject_access, tokens
from lethe.client import models
from lethe.client.calls import operation
from lethe.client.operations import Operations

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MISSING = re.compile(r"\b(?:do|does|did) not exist|\bhave no method|\bnot built yet|\bnot served yet", re.I)
CODE = re.compile(r"`([^`]+)`")


def served_paths() -> set[str]:
    routers = (audit, erasure, health, memories, review, sessions, subject_access, tokens)
    return {r.path for m in routers for r in m.router.routes if isinstance(r, APIRoute)}


def client_names() -> set[str]:
    names = {n for n, v in vars(Operations).items() if isinstance(v, operation)}
    for cls in vars(models).values():
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            names |= {f.name for f in dataclasses.fields(cls)}
    return names


def claims_of_absence() -> list[tuple[str, str]]:
    """(doc, paragraph) of every paragraph that says something is missing, one line each."""
    found = []
    for doc in DOCS:
        for para in re.split(r"\n\s*\n", doc.read_text(encoding="utf-8")):
            flat = " ".join(para.split())
            if MISSING.search(flat):
                found.append((doc.name, flat))
    return found


def test_no_paragraph_calls_a_served_route_or_client_name_missing() -> None:
    paths, names = served_paths(), client_names()
    wrong = []
    for doc, para in claims_of_absence():
        for code in CODE.findall(para):
            words = code.split()
            path = words[-1].split("?")[0] if words else ""
            if path in paths or code in names:
                wrong.append(f"{doc}: calls `{code}` missing, but it is served: {para[:160]}")
    assert wrong == []


def test_the_check_sees_a_false_claim() -> None:
    assert "/v1/audit/kpis" in served_paths() and "verification_code" in client_names()
    para = "these do not exist on the server yet: `GET /v1/audit/kpis` and `verification_code`"
    assert MISSING.search(para) and CODE.findall(para) == ["GET /v1/audit/kpis", "verification_code"]
