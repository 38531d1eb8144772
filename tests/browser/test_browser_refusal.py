"""The browser verifier reads a KMS's refusal as ``lethe verify`` does.

A real OpenBao whose policy denies key deletion, with a refusal window of zero: the first
refusal is final and the request ends in a ``partial`` certificate naming the refused
generation. The genuine certificate passes in both verifiers with the same details; one
claiming ``erased``, one saying the refused part will come later, and one whose probe says
"refused" with no refusal logged fail the same checks in both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.oversight.certificate import sign_certificate
from tests.browser.conftest import Visit
from tests.browser.test_browser_verifier import failed, in_browser, offline  # noqa: F401 (fixture)
from tests.conftest import agent, officer, write_cmd
from tests.integration.test_kms_refusal import refusing_policy
from tests.integration.test_vault_transit import token_with_policies
from tests.openbao import OpenBaoDevServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def refused(
    tmp_path_factory: pytest.TempPathFactory, openbao: OpenBaoDevServer
) -> Iterator[tuple[Container, bytes]]:
    root = openbao.client(openbao.token)
    root.sys.create_or_update_policy("lethe-no-delete", refusing_policy())
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("refused") / "data",
        kms="vault",
        vault_addr=openbao.addr,
        vault_token=SecretStr(token_with_policies(root, "lethe-no-delete")),
        erasure_kms_refusal_window_seconds=0,
    )
    c = build(settings, create=True)
    try:
        c.memories.write(agent(), write_cmd("alice likes tea"))
        filed = c.erasure.request(officer(), "alice@example.com", "gdpr-art17-1a", "DSR-5")
        c.erasure.run_pending()
        job = c.erasure.get(officer(), filed.id)
        assert job.report_id is not None, job.last_error
        yield c, c.reports.load(job.report_id).document
    finally:
        c.close()


def erased(d: dict[str, Any]) -> None:
    d.update(result="erased", missing=[])


def later(d: dict[str, Any]) -> None:
    d["missing"][0]["final"] = False


def unlogged(d: dict[str, Any]) -> None:
    del next(s for s in d["steps"] if s["name"] == "key_destroyed")["evidence"]["refused"]


def test_the_browser_reads_a_refusal_as_lethe_verify_does(
    offline: Visit,  # noqa: F811
    refused: tuple[Container, bytes],
) -> None:
    c, genuine = refused
    pem = c.audit.public_key().pem.encode()
    assert (json.loads(genuine)["result"], json.loads(genuine)["missing"][0]["final"]) == ("partial", True)
    python, browser = verify_certificate(genuine, pem), in_browser(offline.page, genuine, pem)
    assert python.ok and browser["ok"], browser["summary"]
    assert [(ch["name"], ch["detail"]) for ch in browser["checks"]] == [
        (ch.name, ch.detail) for ch in python.checks
    ]
    tampers: list[Callable[[dict[str, Any]], None]] = [erased, later, unlogged]
    for tamper in tampers:
        doc = json.loads(genuine)
        tamper(doc)
        forged = sign_certificate(doc, c.reports.signer, c.audit.origin)
        python, browser = verify_certificate(forged, pem), in_browser(offline.page, forged, pem)
        assert failed(python.checks) == failed(browser["checks"]) != [], tamper.__name__
        assert browser["summary"] == python.summary(), tamper.__name__
