"""The HTML certificate fits an A4 width in Chromium: its steps' evidence as labelled rows,
nothing wider than the page (794 px at 96 dpi)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.oversight.render import render_html
from tests.conftest import agent, officer, write_cmd

pytestmark = pytest.mark.browser
A4_WIDTH = 794


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Container]:
    c = build(Settings(data_dir=tmp_path / "data"), create=True)
    yield c
    c.close()


def test_the_html_certificate_fits_an_a4_width_with_every_steps_evidence_in_rows(
    browser: Any, store: Container
) -> None:
    for i in range(3):
        store.memories.write(agent(), write_cmd(f"jo drinks tea {i}", subject="jo"))
    filed = store.erasure.request(officer(), "jo", "gdpr-art17-1a", "DSR-A4")
    store.erasure.run_pending()
    report = store.reports.load(store.erasure.get(officer(), filed.id).report_id)
    html = render_html(
        report.document, verify_certificate(report.document, store.audit.public_key().pem.encode())
    )
    context = browser.new_context(viewport={"width": A4_WIDTH, "height": 1123})
    try:
        page = context.new_page()
        page.set_content(html)
        width, height = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
        )
        assert width <= A4_WIDTH, width
        assert page.locator("table.ev").count() == page.locator("h3.step").count() >= 6
        assert page.locator("details.exact").count() == page.locator("h3.step").count()
        assert not page.locator("details.exact pre").first.is_visible()  # one click away, not in the way
        assert height < 10_000, height
    finally:
        context.close()
