"""The client's result classes mirror the server's response models field for field.

The client may not import the server (it installs and runs without it), so its dataclasses
restate the response bodies; this test keeps the two from drifting apart.
"""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from lethe.api.http.schemas import audit, erasure, health, memories, tokens
from lethe.client import models

PAIRS: list[tuple[type, type[BaseModel]]] = [
    (models.Memory, memories.MemoryOut),
    (models.ScoredMemory, memories.ScoredMemoryOut),
    (models.Score, memories.Score),
    (models.SearchResult, memories.SearchOut),
    (models.MemoryPage, memories.MemoryPageOut),
    (models.Provenance, memories.ProvenanceOut),
    (models.Origins, memories.OriginsOut),
    (models.ErasureAccepted, erasure.ErasureAccepted),
    (models.ErasureRequest, erasure.ErasureJobOut),
    (models.ErasureStep, erasure.ErasureStepOut),
    (models.LegalHold, erasure.LegalHoldOut),
    (models.Reinstatement, erasure.ReinstatementOut),
    (models.PublicKey, audit.PublicKeyOut),
    (models.Kpis, audit.KpisOut),
    (models.InclusionProof, audit.InclusionProofOut),
    (models.ConsistencyProof, audit.ConsistencyProofOut),
    (models.AuditFork, audit.AuditForkOut),
    (models.ReappliedErasure, audit.ReappliedErasureOut),
    (models.TokenCreated, tokens.TokenCreated),
    (models.Identity, tokens.Whoami),
    (models.Health, health.Health),
]


@pytest.mark.parametrize(("client_class", "server_model"), PAIRS, ids=lambda c: c.__name__)
def test_a_client_result_has_the_fields_of_its_response_model(client_class: type, server_model: type) -> None:
    client_fields = {f.name for f in dataclasses.fields(client_class)}
    assert client_fields == set(server_model.model_fields)


def test_every_client_result_class_is_checked() -> None:
    results = {
        c for c in vars(models).values() if dataclasses.is_dataclass(c) and c.__module__ == models.__name__
    }
    assert results - {c for c, _ in PAIRS} == {models.ErasureReport}  # raw bytes, no JSON model
