"""The HTML report: every section and plot present, nothing fetched from the network, and it
renders in a real headless browser without console errors."""

from __future__ import annotations

import html.parser
import re
import shutil

import pytest
from evaluate_support import have

from torch_neuronx.evaluate.build import SECTIONS

PLOTS = {"loss_curves", "time_by_op", "memory_timeline", "compile_vs_steady"}


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.plots, self.urls = set(), set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img" and "data-plot" in a:
            self.plots.add(a["data-plot"])
            assert a["src"].startswith("data:image/png;base64,")
        for k in ("src", "href"):
            if k in a and not a[k].startswith(("data:", "#")):
                self.urls.append(a[k])


def _html(run_eval):
    r = run_eval(
        "tinygpt_eager",
        "--steps",
        "3",
        "--tokens-per-step",
        "128",
        "tinygpt_train.py",
        "--steps",
        "10",
    )
    assert r.rc == 0, r.explain()
    return r.out / "report.html"


@pytest.mark.skipif(
    not have("matplotlib"), reason="matplotlib (the 'report' extra) is not installed"
)
def test_html_has_every_section_and_plot_and_no_network(run_eval):
    text = _html(run_eval).read_text()
    p = _Collect()
    p.feed(text)
    assert set(SECTIONS) <= p.ids
    assert PLOTS <= p.plots
    assert p.urls == []  # nothing fetched: no src or href leaves the file
    # the only web addresses are the cited sources of the likely ranges, as text, not links
    outside_sources = re.sub(r"<td class='source'>.*?</td>", "", text)
    assert "http://" not in outside_sources and "https://" not in outside_sources
    assert "<script" not in text.lower()


def test_html_without_matplotlib_says_how_to_get_plots(monkeypatch):
    import builtins

    from torch_neuronx.evaluate import render_html

    real = builtins.__import__

    def no_mpl(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    rep = {
        "mode": "x",
        "status": "ok",
        "emulated": {"instance": "trn2.3xlarge", "lnc": 2},
        "schema_version": 1,
        "steps": [],
    }
    text = render_html.render(rep)
    assert "id='no-plots'" in text and "torch-neuronx[report]" in text and "data-plot" not in text


def _browser():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(
    _browser() is None, reason="no Chromium installed (make evaluate-browser installs Debian's)"
)
@pytest.mark.skipif(
    not have("selenium"), reason="selenium is not installed (make evaluate-browser installs it)"
)
def test_html_opens_in_headless_chromium_without_console_errors(run_eval, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    page = _html(run_eval)
    opts = webdriver.ChromeOptions()
    opts.binary_location = _browser()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver")
    driver = webdriver.Chrome(options=opts, service=Service(driver_path) if driver_path else None)
    try:
        driver.get(page.as_uri())
        assert driver.find_element("id", "projection")
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 1000
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        loaded = driver.execute_script(
            "return Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
        )
        assert loaded
        # what a reader sees: no raw reprs outside the folded traceback
        text = driver.execute_script(
            "return Array.from(document.body.querySelectorAll('p, td, th, li, h1, h2, h3'))"
            ".map(e => e.innerText).join('\\n')"
        )
        assert not re.search(r"\{'|\['|\bTrue\b|\bFalse\b|\bNone\b", text), text[:2000]
        # laid out without overlap: charts, headings and tables each in their own box
        boxes = driver.execute_script(
            "return Array.from(document.querySelectorAll('img.plot, h2, h3, table'))"
            ".map(e => { const r = e.getBoundingClientRect();"
            " return [e.tagName + ' ' + (e.id || e.alt || e.innerText.slice(0, 30)),"
            " r.left, r.top, r.right, r.bottom]; })"
        )
        for i, (na, l1, t1, r1, b1) in enumerate(boxes):
            for nb, l2, t2, r2, b2 in boxes[i + 1 :]:
                assert min(r1, r2) <= max(l1, l2) or min(b1, b2) <= max(t1, t2), (na, nb)
    finally:
        driver.quit()
