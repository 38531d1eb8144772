"""The HTML certificate shows each step's evidence as labelled rows in words, the exact JSON
beside it (SQLite and PostgreSQL)."""

from __future__ import annotations

import html
import json
import re

from lethe.api.bootstrap import Container
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.oversight.render import render_html
from tests.conftest import agent, officer, write_cmd


def test_the_html_certificate_renders_every_steps_evidence_in_words(lethe: Container) -> None:
    c = lethe
    c.memories.write(agent(), write_cmd("ines drinks tea", subject="ines"))
    filed = c.erasure.request(officer(), "ines", "gdpr-art17-1a", "DSR-CERT")
    c.erasure.run_pending()
    job = c.erasure.get(officer(), filed.id)
    assert job.report_id is not None, job.last_error
    report = c.reports.load(job.report_id)
    page = render_html(
        report.document, verify_certificate(report.document, c.audit.public_key().pem.encode())
    )
    steps = json.loads(report.document)["steps"]
    tables = re.findall(r'<table class="ev">(.*?)</table>', page, re.S)
    assert len(tables) == sum(1 for s in steps if s.get("evidence"))
    words = html.unescape(" ".join(tables))
    assert "{" not in words and "True" not in words and "None" not in words
    for label in (
        "Memories forgotten",
        "Key generations destroyed",
        "Copies of the key material",
        "Erasure fence up",
    ):
        assert f"<th>{label}</th>" in page, label
    exact = [
        json.loads(html.unescape(e))
        for e in re.findall(
            r'<details class="exact"><summary>Exact JSON</summary><pre>(.*?)</pre>', page, re.S
        )
    ]
    assert exact == [s.get("evidence") for s in steps]
