"""The console's request page shows every step's evidence in words, with the exact JSON one
click away (SQLite and PostgreSQL)."""

from __future__ import annotations

import html
import json
import re

from lethe.vault.model import Role
from tests.api.conftest import Api
from tests.api.test_console import minted, sign_in
from tests.conftest import agent, officer, write_cmd


def test_the_request_page_shows_each_steps_evidence_as_labelled_rows_and_no_python_reprs(api: Api) -> None:
    c = api.container
    c.memories.write(agent(), write_cmd("hana drinks tea", subject="hana"))
    job = c.erasure.request(officer(), "hana", "gdpr-art17-1a", "DSR-EV")
    c.erasure.run_pending()
    done = c.erasure.get(officer(), job.id)
    assert done.completed_at is not None
    sign_in(api.client, minted(api, Role.PRIVACY_OFFICER))
    text = api.client.get(f"/console/requests/{job.id}").text
    for repr_text in ("{'", "': True", "': False", "None", "[{"):
        assert repr_text not in html.unescape(text), repr_text
    for step in done.steps:
        table = re.search(
            rf'<table class="evidence" aria-label="Evidence of {step.step.replace("_", " ")}">(.*?)</table>',
            text,
            re.S,
        )
        assert table is not None, step.step
        assert len(re.findall(r'<th scope="row">[^<]+</th>', table.group(1))) >= 1, step.step
    for label in (
        "Memories forgotten",
        "Key generations destroyed",
        "Copies of the key material",
        "Erasure fence up",
        "Rows still holding them",
        "Certificate SHA-256",
    ):
        assert f'<th scope="row">{label}</th>' in text, label
    assert re.search(r'<th scope="row">Search index entries</th><td>1 → 0</td>', text)
    exact = re.findall(r"<pre>(.*?)</pre>", text, re.S)
    assert [json.loads(html.unescape(e)) for e in exact] == [s.evidence for s in done.steps]
