"""Erasure certificates for people: self-contained HTML and PDF renderings.

Both show the same facts as the signed JSON (report id, request, subject commitment,
steps with times and evidence, what remains and why, backup coverage, the checkpoint),
the result of verifying the certificate, and the exact command an auditor runs to
verify it independently. A rendering is a convenience, not evidence: only the JSON is
signed, and the verification result shown is the renderer's (the issuer's) own; both
renderings say so.

The HTML escapes every value and loads nothing: no scripts, fonts, images or
stylesheets from anywhere (a Content-Security-Policy forbids them). The PDF uses the
core PDF fonts, which cover Latin-1 only; other characters are written as ``\\u`` escapes with four hex digits
escapes so nothing is silently lost (except the em dash that opens a checkpoint's
signature line, shown as ``-``).

Exceptions: ``ValueError`` if the document is not a JSON object.
"""

from __future__ import annotations

import html
import json
from typing import Any

from fpdf import FPDF
from fpdf.enums import WrapMode, XPos, YPos

from lethe.vault.audit.verify import VerificationResult

__all__ = ["render_html", "render_pdf", "verify_command"]

RENDERING_NOTE = (
    "This rendering is for reading. Only the JSON certificate is signed; the verification "
    "result above was computed by the issuer when rendering. Verify the JSON yourself, "
    "offline, with the command below and a public key you obtained independently."
)


def verify_command(report_id: str) -> str:
    """The exact command an auditor runs on the downloaded JSON."""
    return (
        f"lethe verify erasure-certificate-{report_id}.json --public-key lethe-audit-key.pem "
        "--subject-id '<subject id>'"
    )


def _load(document: bytes | dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(document) if isinstance(document, bytes | str) else document
    if not isinstance(doc, dict):
        raise ValueError("the certificate is not a JSON object")
    return doc


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _facts(doc: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """The certificate's facts, grouped, as (label, text) pairs: one source for both formats."""
    issuer = doc.get("issuer") or {}
    request = doc.get("request") or {}
    subject = doc.get("subject") or {}
    return {
        "Certificate": [
            ("Report id", _text(doc.get("report_id"))),
            ("Format", _text(doc.get("format"))),
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
            ("Legal basis", _text(request.get("legal_basis"))),
            ("Requested by", _text(request.get("requested_by"))),
            ("Received at", _text(request.get("received_at"))),
            ("Completed at", _text(request.get("completed_at"))),
            ("Due at", _text(request.get("due_at"))),
        ],
        "Subject": [
            ("Subject commitment", _text(subject.get("commitment"))),
            ("Commitment salt", _text(subject.get("salt"))),
            ("Scheme", _text(subject.get("scheme"))),
            ("Subject ref (pseudonym)", _text(subject.get("subject_ref"))),
        ],
    }


def _steps(doc: dict[str, Any]) -> list[dict[str, str]]:
    steps = doc.get("steps") if isinstance(doc.get("steps"), list) else []
    return [
        {
            "name": _text(s.get("name")),
            "time": _text(s.get("completed_at")),
            "leaf": _text(s.get("leaf_index")),
            "proof": str(len(s.get("inclusion_proof") or [])),
            "evidence": json.dumps(s.get("evidence"), ensure_ascii=False, sort_keys=True, indent=1),
        }
        for s in steps
        if isinstance(s, dict)
    ]


def _remains(doc: dict[str, Any]) -> list[tuple[str, str]]:
    items = doc.get("what_remains") if isinstance(doc.get("what_remains"), list) else []
    return [(_text(i.get("item")), _text(i.get("why"))) for i in items if isinstance(i, dict)]


def _backups(doc: dict[str, Any]) -> tuple[str, list[str]]:
    cov = doc.get("backup_coverage") if isinstance(doc.get("backup_coverage"), dict) else {}
    listed = cov.get("backups_before_forget") if isinstance(cov.get("backups_before_forget"), list) else []
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

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:60rem;
color:#1b1b1b;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{text-align:left;vertical-align:top;
padding:.3rem .5rem;border-bottom:1px solid #e3e3e3}th{width:14rem;font-weight:600}
code,pre,.mono{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:.85rem;
overflow-wrap:anywhere;white-space:pre-wrap}
.verdict{padding:.8rem 1rem;border-radius:.3rem;font-weight:600}.ok{background:#e6f4ea;color:#0b5a22}
.bad{background:#fde7e9;color:#8a1020}.note{color:#555;font-size:.9rem}
"""


def _e(text: Any) -> str:
    return html.escape(_text(text), quote=True)


def render_html(document: bytes | dict[str, Any], result: VerificationResult) -> str:
    """A self-contained HTML page (UTF-8, escaped, no external resources)."""
    doc = _load(document)
    report_id = _text(doc.get("report_id"))
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>Erasure certificate {_e(report_id)}</title><style>{_CSS}</style></head><body>",
        "<h1>Erasure certificate</h1>",
        f'<p class="mono">Report id: {_e(report_id)}</p>',
        f'<p class="verdict {"ok" if result.ok else "bad"}" id="verification-result">'
        f"Verification result: {_e(_verdict(result))}</p>",
    ]
    for title, rows in _facts(doc).items():
        parts.append(f"<h2>{_e(title)}</h2><table>")
        parts.extend(f'<tr><th>{_e(k)}</th><td class="mono">{_e(v)}</td></tr>' for k, v in rows)
        parts.append("</table>")
    parts.append("<h2>Steps</h2><table>")
    parts.append("<tr><th>Step</th><th>Completed at</th><th>Leaf</th><th>Evidence</th></tr>")
    for s in _steps(doc):
        parts.append(
            f'<tr><td>{_e(s["name"])}</td><td class="mono">{_e(s["time"])}</td>'
            f'<td class="mono">{_e(s["leaf"])} ({_e(s["proof"])}-hash proof)</td>'
            f"<td><pre>{_e(s['evidence'])}</pre></td></tr>"
        )
    parts.append("</table><h2>What remains, and why</h2><table>")
    parts.extend(f"<tr><th>{_e(item)}</th><td>{_e(why)}</td></tr>" for item, why in _remains(doc))
    statement, lines = _backups(doc)
    parts.append(f"</table><h2>Backup coverage</h2><p>{_e(statement)}</p>")
    parts.append(
        "<ul>" + "".join(f'<li class="mono">{_e(line)}</li>' for line in lines) + "</ul>"
        if lines
        else "<p>No recorded backup predates the forget event.</p>"
    )
    checkpoint = (doc.get("checkpoint") or {}).get("note")
    proofs = doc.get("consistency_proofs") if isinstance(doc.get("consistency_proofs"), list) else []
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
    parts.append("</table><h2>Verify it yourself</h2>")
    parts.append(f'<pre id="verify-command">{_e(verify_command(report_id))}</pre>')
    parts.append(f'<p class="note">{_e(RENDERING_NOTE)}</p></body></html>')
    return "\n".join(parts)


# -- PDF -------------------------------------------------------------------------------------


def _latin1(text: str) -> str:
    """Core PDF fonts are Latin-1: keep what fits, escape the rest visibly."""
    out = []
    for ch in text:
        if ch == "\u2014":
            out.append("-")
        elif ord(ch) < 256 and (ch >= " " or ch == "\n"):
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)


class _Pdf(FPDF):
    def __init__(self, report_id: str) -> None:
        super().__init__(format="A4")
        self.report_id = report_id
        self.set_auto_page_break(auto=True, margin=15)
        self.set_margins(15, 15, 15)

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("Helvetica", size=7)
        self.cell(0, 5, _latin1(f"Erasure certificate {self.report_id} - page {self.page_no()}"), align="C")

    def heading(self, text: str) -> None:
        self.ln(3)
        self.set_font("Helvetica", "B", 12)
        self.cell(0, 7, _latin1(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def para(self, text: str, size: float = 9, mono: bool = False) -> None:
        self.set_font("Courier" if mono else "Helvetica", size=size)
        self.multi_cell(
            0,
            4.5,
            _latin1(text),
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
            wrapmode=WrapMode.CHAR if mono else WrapMode.WORD,
            align="L",
        )

    def row(self, label: str, value: str) -> None:
        self.set_font("Helvetica", "B", 8.5)
        x, y = self.get_x(), self.get_y()
        self.multi_cell(45, 4.5, _latin1(label), new_x=XPos.RIGHT, new_y=YPos.TOP, align="L")
        self.set_xy(x + 45, y)
        # Identifiers and hashes in monospace, broken anywhere; prose in words.
        token = " " not in value
        self.set_font("Courier" if token else "Helvetica", size=8.5)
        self.multi_cell(
            0,
            4.5,
            _latin1(value),
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
            wrapmode=WrapMode.CHAR if token else WrapMode.WORD,
            align="L",
        )


def render_pdf(document: bytes | dict[str, Any], result: VerificationResult) -> bytes:
    """A PDF of the certificate (fpdf2, core fonts, no external resources)."""
    doc = _load(document)
    report_id = _text(doc.get("report_id"))
    pdf = _Pdf(report_id)
    pdf.set_title(f"Erasure certificate {report_id}")
    pdf.set_creator("Lethe")
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 18)
    pdf.cell(0, 10, "Erasure certificate", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
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
    pdf.heading("Verify it yourself")
    pdf.para(verify_command(report_id), size=8.5, mono=True)
    pdf.para(RENDERING_NOTE, size=8)
    return bytes(pdf.output())
