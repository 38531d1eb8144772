"""Erasure certificates for people: self-contained HTML and PDF renderings.

Page one of both is a plain-language summary (``render_summary``): the result, whose
request, what was erased, by which method, when, what remains and how to verify. The
appendix shows the same facts as the signed JSON (report id, request, subject commitment,
steps with times and evidence, what remains and why, backup coverage, the checkpoint),
the result of verifying the certificate, and the exact command an auditor runs to
verify it independently. A rendering is a convenience, not evidence: only the JSON is
signed, and the verification result shown is the renderer's (the issuer's) own; both
renderings say so.

The HTML escapes every value and loads nothing, and the PDF uses the core fonts with
visible escapes for what Latin-1 lacks: the style and the page kit are shared with the
subject access export in ``render_kit``.

Exceptions: ``ValueError`` if the document is not a JSON object.
"""

from __future__ import annotations

import json
from typing import Any

from fpdf.enums import XPos, YPos

from lethe.vault.audit.verify import VerificationResult
from lethe.vault.erasure.legal_bases import words as legal_basis_words
from lethe.vault.oversight.evidence_rows import evidence_rows
from lethe.vault.oversight.render_kit import DocumentPdf, as_list, as_object, html_head
from lethe.vault.oversight.render_kit import esc as _e
from lethe.vault.oversight.render_kit import latin1 as _latin1
from lethe.vault.oversight.render_kit import text as _text
from lethe.vault.oversight.render_summary import (
    ERASED,
    NOTHING_HELD_OUTCOME,
    PARTIAL_OUTCOME,
    Summary,
    summarise,
)

__all__ = ["render_html", "render_pdf", "verify_command"]

RENDERING_NOTE = (
    "This rendering is for reading. Only the JSON certificate is signed; the verification "
    "result shown was computed by the issuer when rendering. Verify the JSON yourself, "
    "offline, with the command under 'How to verify' and a public key you obtained independently."
)


def verify_command(report_id: str) -> str:
    """The exact command an auditor runs on the downloaded JSON."""
    return (
        f"lethe verify erasure-certificate-{report_id}.json --public-key lethe-public.pem "
        "--subject-id '<subject id>' --verification-code '<code given when the request was filed>'"
    )


def _load(document: bytes | dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(document) if isinstance(document, bytes | str) else document
    if not isinstance(doc, dict):
        raise ValueError("the certificate is not a JSON object")
    return doc


def _facts(doc: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """The certificate's facts, grouped, as (label, text) pairs: one source for both formats."""
    issuer = doc.get("issuer") or {}
    request = doc.get("request") or {}
    subject = doc.get("subject") or {}
    return {
        "Certificate": [
            ("Report id", _text(doc.get("report_id"))),
            ("Format", _text(doc.get("format"))),
            *([("Result", _text(doc.get("result")))] if "result" in doc else []),
            ("Issued at", _text(doc.get("issued_at"))),
            ("Issuer (log origin)", _text(issuer.get("origin"))),
            ("Key id", _text(issuer.get("key_id"))),
            ("Public key SHA-256", _text(issuer.get("public_key_sha256"))),
            ("Covers", _text(doc.get("covers"))),
        ],
        "Request": [
            ("Tenant", _text(doc.get("tenant_id"))),
            ("Request id", _text(request.get("id"))),
            ("Reference", _text(request.get("reference"))),
            ("Legal basis", legal_basis_words(_text(request.get("legal_basis")))),
            ("Requested by", _text(request.get("requested_by"))),
            ("Received at", _text(request.get("received_at"))),
            ("Completed at", _text(request.get("completed_at"))),
            ("Due at", _text(request.get("due_at"))),
        ],
        "Subject": [
            ("Subject commitment", _text(subject.get("commitment"))),
            *([("Commitment salt", _text(subject.get("salt")))] if "salt" in subject else []),
            ("Keyed by", _text(subject.get("commitment_scheme", "salt (v1)"))),
            ("Scheme", _text(subject.get("scheme"))),
            *(
                [("Subject reference (this request only)", _text(subject.get("request_subject_ref")))]
                if "request_subject_ref" in subject
                else [("Subject ref (pseudonym)", _text(subject.get("subject_ref")))]
            ),
        ],
    }


def _steps(doc: dict[str, Any]) -> list[dict[str, str]]:
    steps = as_list(doc.get("steps"))
    return [
        {
            "name": _text(s.get("name")),
            "time": _text(s.get("completed_at")),
            "leaf": _text(s.get("leaf_index")),
            "proof": str(len(s.get("inclusion_proof") or [])),
            "evidence": json.dumps(s.get("evidence"), ensure_ascii=False, sort_keys=True, indent=1),
            "rows": _evidence_rows_html(s.get("evidence")),
        }
        for s in steps
        if isinstance(s, dict)
    ]


# The steps' evidence as labelled rows, indented by depth, at an A4 width (794 px at 96 dpi).
_EVIDENCE_CSS = (
    "table.ev{font-size:.85rem;margin:.2rem 0 .4rem}table.ev th{width:45%;font-weight:500}"
    "table.ev th,table.ev td{padding:.05rem .5rem;line-height:1.3}"
    "table.ev td{overflow-wrap:anywhere}table.ev tr.d1 th{padding-left:1.5rem}"
    "table.ev tr.d2 th{padding-left:2.5rem}table.ev tr.d3 th{padding-left:3.5rem}"
    "table.ev tr.group th{color:#555}h3.step{font-size:1rem;margin:1.2rem 0 .2rem}"
    "details.exact pre{font-size:.75rem}"
)


def _evidence_rows_html(evidence: Any) -> str:
    """A step's evidence in words (``evidence_rows``), one table row per label."""
    if not isinstance(evidence, dict) or not evidence:
        return ""
    rows = []
    for r in evidence_rows(evidence):
        kind = f"d{r.depth}" if r.value else f"d{r.depth} group"
        rows.append(f'<tr class="{kind}"><th>{_e(r.label)}</th><td>{_e(r.value)}</td></tr>')
    return "".join(rows)


def _remains(doc: dict[str, Any]) -> list[tuple[str, str]]:
    items = as_list(doc.get("what_remains"))
    return [(_text(i.get("item")), _text(i.get("why"))) for i in items if isinstance(i, dict)]


def _backups(doc: dict[str, Any]) -> tuple[str, list[str]]:
    cov = as_object(doc.get("backup_coverage"))
    listed = as_list(cov.get("backups_before_forget"))
    lines = [
        f"{_text(b.get('id'))}  created {_text(b.get('created_at'))}  log size {_text(b.get('tree_size'))}: "
        f"{_text(b.get('subject_content'))}"
        for b in listed
        if isinstance(b, dict)
    ]
    return _text(cov.get("statement")), lines


def _verdict(result: VerificationResult) -> str:
    return result.summary()


# -- HTML ------------------------------------------------------------------------------------


def _good(s: Summary) -> bool:
    return s.outcome in (ERASED, NOTHING_HELD_OUTCOME)


def _label(s: Summary) -> str:
    """How each qualifier of the outcome is introduced: a missing part, or an exception."""
    return "Not done" if s.outcome == PARTIAL_OUTCOME else "Exception"


def _summary_html(s: Summary) -> list[str]:
    parts = [
        f'<section id="summary"><p class="verdict {"ok" if _good(s) else "bad"}" id="outcome">'
        f"Result: {_e(s.outcome)}</p>",
        *(f'<p class="verdict bad">{_label(s)}: {_e(x)}</p>' for x in s.exceptions),
        f"<p>{_e(s.intro)}</p><h2>The request</h2><table>",
        *(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in s.request),
        f"</table><h2>{_e(s.erased_title)}</h2><table>",
        *(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in s.erased),
        f"</table><h2>How</h2><p>{_e(s.method)}</p><h2>When</h2><table>",
        *(f'<tr><th class="mono">{_e(t)}</th><td>{_e(what)}</td></tr>' for t, what in s.timeline),
        "</table><h2>What remains, and why</h2><table>",
        *(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in s.remains),
        f"</table><h2>Backups</h2><p>{_e(s.backups)}</p><h2>How to verify</h2><p>{_e(s.verify[0])}</p>",
        *(f'<pre class="command">{_e(line)}</pre>' for line in s.verify[1:]),
        "</section>",
    ]
    return parts


def render_html(
    document: bytes | dict[str, Any], result: VerificationResult, requested_by_name: str | None = None
) -> str:
    """A self-contained HTML page (UTF-8, escaped, no external resources): the plain-language
    summary first, then the certificate in full as an appendix."""
    doc = _load(document)
    report_id = _text(doc.get("report_id"))
    parts: list[str] = [
        *html_head(f"Erasure certificate {report_id}"),
        "<h1>Erasure certificate</h1>",
        *_summary_html(summarise(doc, result, requested_by_name)),
        '<h1 id="appendix">Appendix: the certificate in full</h1>',
        f'<p class="mono">Report id: {_e(report_id)}</p>',
        f'<p class="verdict {"ok" if result.ok else "bad"}" id="verification-result">'
        f"Verification result: {_e(_verdict(result))}</p>",
    ]
    for title, rows in _facts(doc).items():
        parts.append(f"<h2>{_e(title)}</h2><table>")
        parts.extend(f'<tr><th>{_e(k)}</th><td class="mono">{_e(v)}</td></tr>' for k, v in rows)
        parts.append("</table>")
    parts.append(f"<h2>Steps</h2><style>{_EVIDENCE_CSS}</style>")
    for s in _steps(doc):
        parts.append(
            f'<h3 class="step">{_e(s["name"].replace("_", " "))} <span class="mono note">{_e(s["time"])}, '
            f"audit log leaf {_e(s['leaf'])} ({_e(s['proof'])}-hash proof)</span></h3>"
        )
        if s["rows"]:
            parts.append(f'<table class="ev">{s["rows"]}</table>')
        parts.append(
            f'<details class="exact"><summary>Exact JSON</summary><pre>{_e(s["evidence"])}</pre></details>'
        )
    parts.append("<h2>What remains, and why</h2><table>")
    parts.extend(f"<tr><th>{_e(item)}</th><td>{_e(why)}</td></tr>" for item, why in _remains(doc))
    statement, lines = _backups(doc)
    parts.append(f"</table><h2>Backup coverage</h2><p>{_e(statement)}</p>")
    parts.append(
        "<ul>" + "".join(f'<li class="mono">{_e(line)}</li>' for line in lines) + "</ul>"
        if lines
        else "<p>No recorded backup predates the forget event.</p>"
    )
    checkpoint = (doc.get("checkpoint") or {}).get("note")
    proofs = as_list(doc.get("consistency_proofs"))
    parts.append(f"<h2>Signed checkpoint of the audit log</h2><pre>{_e(checkpoint)}</pre>")
    parts.append(
        f"<p>Consistency proofs from {len(proofs)} earlier checkpoint(s) are embedded in the JSON.</p>"
    )
    parts.append("<h2>Verification checks</h2><table><tr><th>Check</th><th>Result</th><th>Detail</th></tr>")
    parts.extend(
        f'<tr><td class="mono">{_e(c.name)}</td><td>{"pass" if c.ok else "FAIL"}</td>'
        f"<td>{_e(c.detail)}</td></tr>"
        for c in result.checks
    )
    parts.append("</table><h2>The verify command</h2>")
    parts.append(f'<pre id="verify-command">{_e(verify_command(report_id))}</pre>')
    parts.append(f'<p class="note">{_e(RENDERING_NOTE)}</p></body></html>')
    return "\n".join(parts)


# -- PDF -------------------------------------------------------------------------------------


class _Pdf(DocumentPdf):
    def __init__(self, report_id: str) -> None:
        super().__init__(f"Erasure certificate {report_id}")
        self.report_id = report_id


def _summary_pdf(pdf: _Pdf, s: Summary) -> None:
    """Page one: the verdict, then the request, what, how, when, what remains, how to verify."""
    pdf.set_font("Helvetica", "B", 13)
    pdf.set_text_color(11, 90, 34) if _good(s) else pdf.set_text_color(138, 16, 32)
    pdf.cell(0, 8, _latin1(f"Result: {s.outcome}"), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    for exception in s.exceptions:
        pdf.para(f"{_label(s)}: {exception}", size=8.5)
    pdf.set_text_color(0, 0, 0)
    pdf.para(s.intro, size=9)
    pdf.heading("The request")
    for label, value in s.request:
        pdf.row(label, value, prose=True)
    pdf.heading(s.erased_title)
    pdf.para("   ".join(f"{label}: {value}" for label, value in s.erased), size=9)
    pdf.heading("How")
    pdf.para(s.method, size=8.5)
    pdf.heading("When")
    for when, what in s.timeline:
        pdf.row(when, what, prose=True)
    pdf.heading("What remains, and why")
    for item, why in s.remains:
        pdf.row(item, why, prose=True, size=7.5)
    pdf.heading("Backups")
    pdf.para(s.backups, size=8.5)
    pdf.heading("How to verify")
    pdf.para(s.verify[0], size=8.5)
    for line in s.verify[1:]:
        pdf.command(line)


def render_pdf(
    document: bytes | dict[str, Any], result: VerificationResult, requested_by_name: str | None = None
) -> bytes:
    """A PDF of the certificate (fpdf2, core fonts, no external resources): page one is the
    plain-language summary; the certificate in full follows as an appendix."""
    doc = _load(document)
    report_id = _text(doc.get("report_id"))
    pdf = _Pdf(report_id)
    pdf.set_title(f"Erasure certificate {report_id}")
    pdf.set_creator("Lethe")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.cell(0, 10, "Erasure certificate", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    _summary_pdf(pdf, summarise(doc, result, requested_by_name))
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 15)
    pdf.cell(0, 9, "Appendix: the certificate in full", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.para(f"Report id: {report_id}", size=10, mono=True)
    pdf.ln(2)
    pdf.set_text_color(11, 90, 34) if result.ok else pdf.set_text_color(138, 16, 32)
    pdf.para(f"Verification result: {_verdict(result)}", size=10)
    pdf.set_text_color(0, 0, 0)
    for title, rows in _facts(doc).items():
        pdf.heading(title)
        for label, value in rows:
            pdf.row(label, value)
    pdf.heading("Steps")
    for s in _steps(doc):
        pdf.set_font("Helvetica", "B", 9)
        pdf.cell(
            0,
            5,
            _latin1(f"{s['name']}  at {s['time']}  (leaf {s['leaf']}, {s['proof']}-hash proof)"),
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
        )
        pdf.para(s["evidence"], size=7.5, mono=True)
    pdf.heading("What remains, and why")
    for item, why in _remains(doc):
        pdf.set_font("Helvetica", "B", 9)
        pdf.multi_cell(0, 4.5, _latin1(item), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.para(why, size=8.5)
    pdf.heading("Backup coverage")
    statement, lines = _backups(doc)
    pdf.para(statement, size=8.5)
    for line in lines or ["No recorded backup predates the forget event."]:
        pdf.para(line, size=8, mono=True)
    pdf.heading("Signed checkpoint of the audit log")
    pdf.para(_text((doc.get("checkpoint") or {}).get("note")), size=8, mono=True)
    pdf.heading("Verification checks")
    for c in result.checks:
        pdf.para(f"[{'pass' if c.ok else 'FAIL'}] {c.name}: {c.detail}", size=8)
    pdf.heading("The verify command")
    pdf.command(verify_command(report_id))
    pdf.para(RENDERING_NOTE, size=8)
    return bytes(pdf.output())
