"""The subject access export's renderings for people, as its reader meets them: the
organisation is not named by its tenant id, the requester is a person and a role rather
than a token id, the verify command names the very JSON the rendering carries (the same
export id) and is never broken inside a word, and a LangGraph store's value reads as words."""

from __future__ import annotations

import base64
import io
import json
import re

from pypdf import PdfReader

from lethe.vault.audit.verify_export import verify_export
from lethe.vault.model import Role
from tests.api.conftest import Api, bearer
from tests.conftest import agent, write_cmd

ALICE = "alice-render@example.com"
STORE_VALUE = json.dumps(  # as LetheStore writes it (integrations.langgraph.mapping.envelope)
    {"key": "language", "lethe_store": 1, "updated_at": "2026-12-01T10:00:00+00:00", "value": {"text": "es"}}
)


def officer_named(api: Api, name: str) -> dict[str, str]:
    token, _ = api.tokens.create(Role.PRIVACY_OFFICER, "t1", None, (), None, display_name=name)
    return bearer(token)


def exported(api: Api, fmt: str) -> bytes:
    api.container.memories.write(agent(), write_cmd(STORE_VALUE, subject=ALICE))
    r = api.client.post(
        f"/v1/subject-access-requests?format={fmt}",
        json={"subject_id": ALICE},
        headers=officer_named(api, "Dana Officer"),
    )
    assert r.status_code == 200, r.text
    return r.content


def test_the_html_names_no_tenant_id_and_the_requester_by_name_and_role(api: Api) -> None:
    page = exported(api, "html").decode()
    assert "of t1" not in page and "the organisation that gave it to you" in page
    requested = re.search(r"<th>Requested by</th><td[^>]*>([^<]*)</td>", page)
    assert requested is not None and requested.group(1).startswith("Dana Officer, privacy officer (token ")


def test_the_html_carries_the_signed_json_its_command_checks(api: Api) -> None:
    page = exported(api, "html").decode()
    link = re.search(
        r'download="(subject-export-([0-9a-f-]{36})\.json)" href="data:application/json;base64,([^"]+)"', page
    )
    assert link is not None
    name, export_id, data = link.groups()
    signed = base64.b64decode(data)
    assert json.loads(signed)["manifest"]["export_id"] == export_id  # the same export, not another
    pem = api.container.audit.public_key().pem.encode()
    assert verify_export(signed, pem, tenant="t1").ok
    command = re.search(r'<pre class="command" id="verify-command">([^<]*)</pre>', page)
    assert command is not None
    assert command.group(1) == f"lethe verify-export {name} \\\n    --public-key lethe-public.pem"


def test_the_pdf_attaches_its_json_and_prints_the_command_whole(api: Api) -> None:
    reader = PdfReader(io.BytesIO(exported(api, "pdf")))
    ((name, (signed,)),) = reader.attachments.items()
    export_id = json.loads(signed)["manifest"]["export_id"]
    assert name == f"subject-export-{export_id}.json"
    lines = [line.strip() for page in reader.pages for line in page.extract_text().splitlines()]
    assert f"lethe verify-export {name} \\" in lines  # one line: not broken inside a word
    assert "--public-key lethe-public.pem" in lines
    text = " ".join(lines)
    assert "language: es" in text and '"lethe_store"' not in text
    assert "Dana Officer, privacy officer" in text


def test_a_langgraph_store_value_reads_as_its_key_and_fields() -> None:
    from lethe.vault.oversight.render_export import readable_content

    assert readable_content(STORE_VALUE) == "language: es"
    two = json.dumps({"lethe_store": 1, "key": "diet", "value": {"avoid": "nuts", "since": 2024}})
    assert readable_content(two) == "diet: avoid: nuts; since: 2024"
    assert readable_content("Prefers green tea") == "Prefers green tea"
    assert readable_content('{"not": "ours"}') == '{"not": "ours"}'
