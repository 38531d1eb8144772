"""What every rendering for people shares: the page style, escaping, and the PDF page kit.

Erasure certificates (``render``) and subject access exports (``render_export``) look
alike and follow the same rules: HTML escapes every value and loads nothing (a
Content-Security-Policy forbids scripts, fonts, images and outside stylesheets); PDFs
use the core fonts, which cover Latin-1 only, so other characters are written as
visible ``\\u`` escapes with four hex digits and nothing is silently lost (except the
em dash, shown as ``-``).

Exceptions: none.
"""

from __future__ import annotations

import html
import json
from typing import Any

from fpdf import FPDF
from fpdf.enums import MethodReturnValue, WrapMode, XPos, YPos

__all__ = ["CSS", "DocumentPdf", "as_list", "as_object", "esc", "html_head", "latin1", "text"]


def as_object(value: Any) -> dict[str, Any]:
    """A JSON object field as read for people: anything else (missing, null, malformed) is empty."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """A JSON array field as read for people: anything else (missing, null, malformed) is empty."""
    return value if isinstance(value, list) else []


def text(value: Any) -> str:
    """A value as people read it: ``-`` for nothing, strings as they are, the rest as JSON."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def esc(value: Any) -> str:
    """``text(value)``, HTML-escaped (quotes included)."""
    return html.escape(text(value), quote=True)


CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:60rem;
color:#1b1b1b;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{text-align:left;vertical-align:top;
padding:.3rem .5rem;border-bottom:1px solid #e3e3e3}th{width:14rem;font-weight:600}
code,pre,.mono{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:.85rem;
overflow-wrap:anywhere;white-space:pre-wrap}
.verdict{padding:.8rem 1rem;border-radius:.3rem;font-weight:600}.ok{background:#e6f4ea;color:#0b5a22}
.bad{background:#fde7e9;color:#8a1020}.note{color:#555;font-size:.9rem}
pre.command{white-space:pre;overflow-wrap:normal;overflow-x:auto}
"""


def html_head(title: str) -> list[str]:
    """The opening lines of a self-contained page: UTF-8, a CSP that forbids loading anything."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
    ]


def latin1(value: str) -> str:
    """Core PDF fonts are Latin-1: keep what fits, escape the rest visibly."""
    out = []
    for ch in value:
        if ch == "\u2014":
            out.append("-")
        elif ord(ch) < 256 and (ch >= " " or ch == "\n"):
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)


class DocumentPdf(FPDF):
    """An A4 page kit: headings, paragraphs, label/value rows, and a footer naming the document."""

    def __init__(self, footer_label: str) -> None:
        super().__init__(format="A4")
        self.footer_label = footer_label
        self.set_auto_page_break(auto=True, margin=15)
        self.set_margins(15, 15, 15)

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("Helvetica", size=7)
        self.cell(0, 5, latin1(f"{self.footer_label} - page {self.page_no()}"), align="C")

    def heading(self, value: str) -> None:
        self.ln(3)
        self.set_font("Helvetica", "B", 12)
        self.cell(0, 7, latin1(value), new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def para(self, value: str, size: float = 9, mono: bool = False) -> None:
        self.set_font("Courier" if mono else "Helvetica", size=size)
        self.multi_cell(
            0,
            4.5,
            latin1(value),
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
            wrapmode=WrapMode.CHAR if mono else WrapMode.WORD,
            align="L",
        )

    def row(self, label: str, value: str, prose: bool = False, size: float = 8.5) -> None:
        """A label and its value side by side; the row ends below the taller of the two."""
        self.set_font("Helvetica", "B", size)
        tall = self.multi_cell(45, 4.5, latin1(label), dry_run=True, output=MethodReturnValue.HEIGHT)
        # fpdf types the answer as the union of every ``output``; HEIGHT alone is a number.
        if not isinstance(tall, int | float):
            raise TypeError(f"multi_cell answered {type(tall).__name__} for a height")
        if self.will_page_break(tall):
            self.add_page()
        x, y = self.get_x(), self.get_y()
        self.multi_cell(45, 4.5, latin1(label), new_x=XPos.RIGHT, new_y=YPos.TOP, align="L")
        self.set_xy(x + 45, y)
        # Identifiers and hashes in monospace, broken anywhere; prose in words.
        token = " " not in value and not prose
        self.set_font("Courier" if token else "Helvetica", size=size)
        self.multi_cell(
            0,
            4.5,
            latin1(value),
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
            wrapmode=WrapMode.CHAR if token else WrapMode.WORD,
            align="L",
        )
        if self.get_y() < y + tall:  # a label longer than its value: the next row starts below it
            self.set_y(y + tall)

    def command(self, value: str) -> None:
        """A shell command: monospace, wrapped between words (never inside one), indented."""
        self.set_font("Courier", size=8)
        self.set_x(self.l_margin + 4)
        self.multi_cell(
            0, 4.2, latin1(value), new_x=XPos.LMARGIN, new_y=YPos.NEXT, wrapmode=WrapMode.WORD, align="L"
        )
