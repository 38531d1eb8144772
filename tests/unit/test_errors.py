"""Every error of the core is a ``VaultError`` with a decided HTTP status, and the API renders it so.

``STATUSES`` is written out by hand on purpose: a new error class fails this test until
someone decides (here, and in ``vault/errors.py``'s tree) which status it answers with.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import lethe.vault
from lethe.api.http import problems
from lethe.api.http.metrics import Metrics
from lethe.vault import errors
from lethe.vault.errors import VaultError

STATUSES = {
    "VaultError": 500,
    "InvalidCommand": 422,
    "InvalidTtl": 422,
    "MissingProvenance": 422,
    "UnknownSource": 422,
    "UnknownKind": 422,
    "InvalidConfidence": 422,
    "InvalidPurpose": 422,
    "ForbiddenContent": 422,
    "DestinationRefused": 422,
    "FeatureUnavailable": 501,
    "Unauthenticated": 401,
    "ContentTooLarge": 413,
    "PolicyRefused": 403,
    "SourceTypeRefused": 403,
    "OutOfScope": 403,
    "NotFound": 404,
    "KeyUnavailable": 404,
    "VersionConflict": 409,
    "IdempotencyConflict": 409,
    "SubjectForgotten": 409,
    "LegalHoldActive": 409,
    "DeadlineRefused": 409,
    "LogInconsistent": 409,
    "CheckpointError": 422,
    "BackupError": 422,
    "StoreUnavailable": 503,
    "StoreNotReady": 503,
    "InvalidRetention": 503,
}


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def core_errors() -> list[type[VaultError]]:
    """``VaultError`` and every subclass defined anywhere in ``lethe.vault`` (every module imported)."""
    for mod in pkgutil.walk_packages(lethe.vault.__path__, "lethe.vault."):
        if ".migrations" not in mod.name:
            importlib.import_module(mod.name)
    return [VaultError, *(c for c in _subclasses(VaultError) if c.__module__.startswith("lethe.vault"))]


def test_every_core_error_has_the_status_decided_for_it():
    assert {c.__name__: c.status for c in core_errors()} == STATUSES


def test_every_core_error_lives_in_the_one_errors_module_and_its_tree_names_it():
    found = core_errors()
    assert {c.__module__ for c in found} == {"lethe.vault.errors"}
    assert errors.__doc__ is not None
    assert [c.__name__ for c in found if c.__name__ not in errors.__doc__] == []


def test_the_pure_codec_errors_stay_value_errors():
    assert issubclass(errors.CheckpointError, ValueError)


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    problems.install(app, Metrics())
    by_name = {c.__name__: c for c in core_errors()}

    @app.get("/raise/{name}")
    def _raise(name: str) -> None:
        raise by_name[name]("what went wrong")

    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize("name, status", sorted(STATUSES.items()))
def test_the_problem_handler_answers_with_the_errors_status(client: TestClient, name: str, status: int):
    response = client.get(f"/raise/{name}")
    assert response.status_code == status
    assert response.headers["content-type"] == problems.PROBLEM_JSON
    body = response.json()
    assert body["status"] == status and body["detail"] == "what went wrong"
    assert body["title"] == getattr(errors, name).title
