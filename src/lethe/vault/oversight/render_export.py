"""Subject access exports for people: HTML and PDF a privacy officer can hand to the subject.

The first page speaks plainly: who holds what about you, by category, by state and by
assistant, and what was erased before; then every item with its content, where it came
from, how far it is trusted and what it is linked to; then how to check the document.
Only the JSON is signed; a rendering shows the issuer's own verification result and the
command that checks the JSON independently. Style and page kit: ``render_kit``, shared
with the erasure certificate.

Exceptions: ``ValueError`` if the document is not a JSON object.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from fpdf.enums import XPos, YPos

from lethe.vault.audit.verify import VerificationResult
from lethe.vault.oversight.render_kit import DocumentPdf, as_object, esc, html_head, text

__all__ = [
    "export_file_name",
    "readable_content",
    "render_export_html",
    "render_export_pdf",
    "verify_export_command",
]

KINDS = {
    "preference": "Your preferences",
    "fact": "Facts about you",
    "skill": "Skills and ways of doing things learnt with you",
    "task_summary": "Summaries of tasks",
    "working_note": "Working notes",
}
STATES = {  # status -> (a short name, what it means for the subject)
    "active": ("In use", "the assistant may recall these"),
    "quarantined": ("Awaiting review", "kept, but never used until a reviewer approves them"),
    "superseded": ("Replaced", "a newer version replaced these; kept as history of the correction"),
    "expired": ("Expired", "past their retention period: no longer used, and removed later"),
    "forgotten": ("Erased", "erased at an earlier request: unreadable by anyone, so not listed"),
}
SOURCES = {
    "user_statement": "something you said",
    "operator_config": "set up by the operator",
    "tool_result": "the result of a tool",
    "web_page": "a web page",
    "agent_inference": "the assistant's own inference",
    "summary": "a summary of other memories",
}
NOTE = (
    "This rendering is for reading. Only the JSON export is signed; the verification result "
    "above was computed by the issuer. Check the JSON yourself, offline, with the command "
    "below and the issuer's public key obtained independently."
)


def export_file_name(export_id: str) -> str:
    """The name the signed JSON goes by: the file the rendering carries, and its command checks."""
    return f"subject-export-{export_id}.json"


def verify_export_command(export_id: str) -> str:
    """The command that checks this export's JSON, on two lines at an argument (a shell's
    continuation), so neither a page's width nor a PDF line breaks it inside a word."""
    return f"lethe verify-export {export_file_name(export_id)} \\\n    --public-key lethe-public.pem"


def readable_content(content: Any) -> str:
    """A memory's content for a person: a LangGraph store's value (its JSON envelope
    ``{"lethe_store": 1, "key", "value"}``, ``integrations.langgraph.mapping``) as its key
    and the value's fields in words, anything else as it is."""
    try:
        body = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get("lethe_store") != 1 or not isinstance(body.get("key"), str):
        return text(content)
    value = body.get("value")
    if not isinstance(value, dict):
        return f"{body['key']}: (deleted)" if body.get("deleted") else f"{body['key']}: {text(value)}"
    if set(value) == {"text"}:
        return f"{body['key']}: {text(value['text'])}"
    return f"{body['key']}: " + "; ".join(f"{k}: {text(v)}" for k, v in value.items())


def _load(document: bytes | dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(document) if isinstance(document, bytes | str) else document
    if not isinstance(doc, dict):
        raise ValueError("the export is not a JSON object")
    return doc


def _parts(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    manifest = as_object(doc.get("manifest"))
    counts = as_object(manifest.get("counts"))
    items = [i for i in doc.get("items") or [] if isinstance(i, dict)]
    return manifest, counts, items


def _summary(manifest: dict[str, Any], counts: dict[str, Any]) -> list[str]:
    """The plain-language opening, one paragraph a line."""
    subject = (manifest.get("subject") or {}).get("subject_id")
    lines = [
        "This document lists everything the AI assistants of the organisation that gave it to you "
        f"hold about you ({text(subject)}) as of {text(manifest.get('generated_at'))}. It answers your "
        "request under Article 15 (right of access) and Article 20 (data portability) of the GDPR.",
        f"In total we hold {text(counts.get('items', 0))} memories about you; each is listed below "
        "with where it came from and how it is used.",
    ]
    if counts.get("forgotten"):
        lines.append(
            f"{counts['forgotten']} further memories were erased at an earlier request: their "
            "content cannot be read by anyone, including us, so only their number is given."
        )
    if counts.get("derived_elsewhere"):
        lines.append(
            f"{counts['derived_elsewhere']} summaries recorded about other people were built partly "
            "from your data; their content is withheld because it also concerns others (Art. 15(4))."
        )
    if counts.get("unreadable"):
        lines.append(f"{counts['unreadable']} memories could not be opened and are counted only.")
    return lines


def _tables(counts: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    kinds = as_object(counts.get("by_kind"))
    states = as_object(counts.get("by_status"))
    agents = as_object(counts.get("by_agent"))
    named = [(s, *STATES.get(s, (s, ""))) for s, n in states.items() if n]
    return [
        ("What we hold, by category", [(KINDS.get(k, k), text(n)) for k, n in kinds.items()]),
        (
            "What state it is in",
            [(name, f"{states[s]}: {meaning}") for s, name, meaning in named],
        ),
        ("Which assistant holds it", [(a, text(n)) for a, n in agents.items()]),
    ]


def _item_rows(item: dict[str, Any]) -> list[tuple[str, str]]:
    prov = as_object(item.get("provenance"))
    source = SOURCES.get(str(prov.get("source_type")), text(prov.get("source_type")))
    rows = [
        ("What it says", readable_content(item.get("content"))),
        ("Where it came from", f"{source} ({text(prov.get('source_ref'))})"),
        ("Recorded", text(item.get("created_at"))),
        ("Last changed", text(item.get("updated_at"))),
        ("Kept until", text(item.get("expires_at"))),
        ("Assistant and purpose", f"{text(item.get('agent_id'))} for {text(item.get('purpose'))}"),
        ("Authority and trust", f"{text(item.get('authority'))}, {text(item.get('trust'))}"),
        ("Confidence", text(item.get("confidence"))),
        ("Memory id, version", f"{text(item.get('id'))} v{text(item.get('version'))}"),
    ]
    if prov.get("sources"):
        rows.append(("Built from", ", ".join(map(text, prov["sources"]))))
    if item.get("supersedes_id"):
        rows.append(("Replaces", text(item["supersedes_id"])))
    if item.get("superseded_by"):
        rows.append(("Replaced by", text(item["superseded_by"])))
    if item.get("cited_by"):
        rows.append(("Used in summaries", ", ".join(map(text, item["cited_by"]))))
    return rows


def _title(item: dict[str, Any]) -> str:
    return f"{KINDS.get(str(item.get('kind')), text(item.get('kind')))} - {text(item.get('status'))}"


def _requester(manifest: dict[str, Any], name: str | None) -> str:
    """Who asked for the export, in words: the token's display name when the caller knows
    it, and the role every exporter has (the token id, shortened, tells tokens apart)."""
    token = str(manifest.get("requested_by") or "")
    short = f" (token {token[:8]})" if token else ""
    return f"{name}, privacy officer{short}" if name else f"a privacy officer{short}"


def _facts(manifest: dict[str, Any], requested_by_name: str | None) -> list[tuple[str, str]]:
    issuer = as_object(manifest.get("issuer"))
    return [
        ("Export id", text(manifest.get("export_id"))),
        ("Generated at", text(manifest.get("generated_at"))),
        ("Requested by", _requester(manifest, requested_by_name)),
        ("Issuer (log origin)", text(issuer.get("origin"))),
        ("Signing key id", text(manifest.get("signing_key_id"))),
        ("SHA-256 of the items", text(manifest.get("body_sha256"))),
    ]


def render_export_html(
    document: bytes | dict[str, Any], result: VerificationResult, requested_by_name: str | None = None
) -> str:
    """A self-contained page (UTF-8, escaped, loads nothing) that carries its signed JSON as
    a download (``document`` as bytes: the very bytes signed), the file its command checks."""
    manifest, counts, items = _parts(_load(document))
    export_id = text(manifest.get("export_id"))
    parts = [*html_head(f"Your data: export {export_id}"), "<h1>What we hold about you</h1>"]
    parts += [f"<p>{esc(line)}</p>" for line in _summary(manifest, counts)]
    for title, rows in _tables(counts):
        parts.append(f"<h2>{esc(title)}</h2><table>")
        parts += [f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows]
        parts.append("</table>")
    parts.append("<h2>Every memory</h2>")
    for n, item in enumerate(items, 1):
        parts.append(f'<h3 id="item-{n}">{n}. {esc(_title(item))}</h3><table>')
        parts += [f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in _item_rows(item)]
        parts.append("</table>")
    parts.append("<h2>About this document</h2><table>")
    facts = _facts(manifest, requested_by_name)
    parts += [f'<tr><th>{esc(k)}</th><td class="mono">{esc(v)}</td></tr>' for k, v in facts]
    parts.append("</table>")
    parts.append(
        f'<p class="verdict {"ok" if result.ok else "bad"}" id="verification-result">'
        f"Verification result: {esc(result.summary())}</p>"
    )
    if isinstance(document, bytes):
        data, name = base64.b64encode(document).decode("ascii"), esc(export_file_name(export_id))
        parts.append(
            f'<p>The signed JSON of this export: <a id="signed-json" download="{name}" '
            f'href="data:application/json;base64,{data}">{name}</a></p>'
        )
    parts.append(f'<pre class="command" id="verify-command">{esc(verify_export_command(export_id))}</pre>')
    parts.append(f'<p class="note">{esc(NOTE)}</p></body></html>')
    return "\n".join(parts)


def render_export_pdf(
    document: bytes | dict[str, Any], result: VerificationResult, requested_by_name: str | None = None
) -> bytes:
    """A PDF: the plain-language first page, then every item, then how to check it; the
    signed JSON (``document`` as bytes) attached, under the name its command checks."""
    manifest, counts, items = _parts(_load(document))
    export_id = text(manifest.get("export_id"))
    pdf = DocumentPdf(f"Your data, export {export_id}")
    pdf.set_title(f"Your data: export {export_id}")
    pdf.set_creator("Lethe")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.cell(0, 10, "What we hold about you", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    for line in _summary(manifest, counts):
        pdf.para(line, size=10)
        pdf.ln(1)
    for title, rows in _tables(counts):
        pdf.heading(title)
        for label, value in rows:
            pdf.row(label, value)
    pdf.add_page()
    pdf.heading("Every memory")
    for n, item in enumerate(items, 1):
        pdf.heading(f"{n}. {_title(item)}")
        for label, value in _item_rows(item):
            pdf.row(label, value)
    pdf.heading("About this document")
    for label, value in _facts(manifest, requested_by_name):
        pdf.row(label, value)
    pdf.para(f"Verification result: {result.summary()}", size=9)
    if isinstance(document, bytes):
        name = export_file_name(export_id)
        pdf.embed_file(bytes=document, basename=name, desc="the signed JSON of this export")
        pdf.para(f"The signed JSON of this export is attached to this PDF as {name}.", size=9)
    for line in verify_export_command(export_id).splitlines():  # each line fits: never broken
        pdf.para(line, size=8.5, mono=True)
    pdf.para(NOTE, size=8)
    return bytes(pdf.output())
