"""HTML report: self-contained, escaped, and laid out right in a real headless browser (Chromium)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from formats_helpers import CLUSTER, H200_2GPU, NASTY, TOKEN, all_reports, hostile, load

from gpudoctor.reports import html
from gpudoctor.reports.outputs import render

REPORTS = all_reports()
VOID = {"meta", "br", "hr", "img", "input", "link", "circle", "line", "rect", "polyline", "path"}


class Checker(HTMLParser):
    """Tags balanced; every URL-bearing attribute and element recorded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "action", "srcset", "poster", "data")]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href")]

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def check(doc: str) -> Checker:
    c = Checker()
    c.feed(doc)
    c.close()
    assert not c.errors, c.errors[:5]
    assert c.stack == [], c.stack
    return c


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_html_well_formed_and_self_contained(name):
    doc = render(REPORTS[name], "html", "error")
    c = check(doc)
    assert not c.urls, c.urls  # no link, image or script source: nothing to fetch
    assert "script" not in c.tags and "iframe" not in c.tags and "link" not in c.tags
    assert not re.search(r"url\(|@import|https?://[^\s<\"]*\.(?:js|css|woff2?)", doc)
    assert "default-src 'none'" in doc  # and the page forbids any fetch itself
    assert TOKEN not in doc


def test_html_verdict_and_findings_come_first():
    doc = html.render(hostile(), "error")
    assert doc.index('class="verdict FAIL"') < doc.index('id="findings"') < doc.index('id="topology"') \
        < doc.index('id="confirmation"') < doc.index('id="rules"')
    errors = doc.index('class="finding error"')
    assert errors < doc.index('class="finding warning"') < doc.index('class="finding info"')


def test_html_escapes_report_text():
    doc = html.render(hostile(), "error")
    text = "".join(check(doc).text)
    assert NASTY.split("\r\n")[0] in text  # shown as text ...
    assert "<script>alert(1)</script>" not in doc  # ... never as markup


def test_html_h200_charts_and_topology():
    doc = html.render(load(H200_2GPU), "error")
    assert doc.count("<svg") == 2  # all-reduce sweep and copies
    sweep = doc[doc.index("all-reduce bus bandwidth"):]
    assert "NVLink" in sweep[:3000] and "line rate" in sweep[:3000]  # the expected line and its label
    assert sweep.count("<polyline") >= 2  # bfloat16 and float32
    assert "PCIe line rate 63.0 GB/s" in doc
    assert re.search(r'background:#bbf7d0">NV18<', doc)  # NVLink cells coloured as NV


def test_html_cluster_nodes_and_links():
    doc = html.render(load(CLUSTER), "error")
    assert 'id="nodes"' in doc and "Node-to-node links" in doc
    r = load(CLUSTER)
    for n in r.nodes:
        assert n.label in doc


def test_html_burnin_generic():
    """A burn-in section another command adds is drawn without this module knowing its model."""
    from gpudoctor.facts.model import Snapshot

    class BurnSnapshot(Snapshot):  # as a later issue's model would add it
        burnin: dict | None = None

    r = load(H200_2GPU)
    samples = [{"t_s": t, "gpu_index": g, "temperature_c": 40 + t + g, "power_w": 300.0 + t} for t in range(5)
               for g in (0, 1)]
    r.snapshot = BurnSnapshot.model_validate({**r.snapshot.model_dump(), "burnin": {"samples": samples}})
    doc = html.render(r, "error")
    assert 'id="burnin"' in doc and "burnin: temperature_c" in doc and "burnin: power_w" in doc
    check(doc)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (Debian: apt-get install chromium)")


def chromium(*args: str, timeout: int = 90) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--hide-scrollbars", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def layout_width(tmp_path, doc: str, width: int) -> tuple[int, int]:
    """(document scrollWidth, viewport width) of ``doc`` laid out by Chromium in a ``width`` px viewport: an
    iframe of that width (headless windows are at least 500 px wide). The report forbids scripts, so the
    probe runs in a copy without its Content-Security-Policy and posts the figures to the outer page."""
    probe = ("<script>window.addEventListener('load',()=>{parent.postMessage("
             "document.documentElement.scrollWidth+' '+window.innerWidth,'*')})</script>")
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", doc).replace("</body>", probe + "</body>")
    (tmp_path / "report.html").write_text(page)
    outer = tmp_path / f"outer-{width}.html"
    outer.write_text(f'<!DOCTYPE html><html><body style="margin:0"><iframe src="report.html" width="{width}" '
                     'height="900" style="border:0"></iframe><script>window.addEventListener("message",e=>{'
                     'const d=document.createElement("pre");d.id="w";d.textContent=e.data;document.body.append(d)})'
                     "</script></body></html>")
    res = chromium("--window-size=1400,1000", "--allow-file-access-from-files", "--virtual-time-budget=5000",
                   "--dump-dom", outer.as_uri())
    m = re.search(r'<pre id="w">(\d+) (\d+)</pre>', res.stdout)
    assert m, res.stdout[-1000:] + res.stderr[-2000:]
    return int(m.group(1)), int(m.group(2))


@needs_chromium
@pytest.mark.slow
@pytest.mark.parametrize("name", ["h200-2gpu", "cluster", "hostile"])
@pytest.mark.parametrize("width", [1280, 390])
def test_html_fits_desktop_and_phone(tmp_path, name, width):
    """No sideways scrolling of the page at 1280 px or on a phone (390 px): wide tables scroll in their box."""
    scroll, inner = layout_width(tmp_path, render(REPORTS[name], "html"), width)
    assert inner == width
    assert scroll <= inner, f"page is {scroll} px wide at a {inner} px viewport"


@needs_chromium
@pytest.mark.slow
def test_html_screenshot(tmp_path):
    """Chromium renders the H200 report to a PNG (docs/images/ holds the committed ones; see docs/integrations.md)."""
    page = tmp_path / "r.html"
    page.write_text(render(REPORTS["h200-2gpu"], "html"))
    png = tmp_path / "r.png"
    res = chromium("--window-size=1280,2600", f"--screenshot={png}", page.as_uri())
    assert png.exists() and png.stat().st_size > 20000, res.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("GPUDOCTOR_UPDATE_SCREENSHOTS"):  # refresh the committed screenshot
        shutil.copy(png, H200_2GPU.parents[2] / "images" / "report-h200-2gpu.png")


@needs_chromium
@pytest.mark.slow
def test_layout_probe_can_fail(tmp_path):
    """The negative control: a page wider than the phone is caught."""
    scroll, inner = layout_width(tmp_path, '<html><body><div style="width:900px">x</div></body></html>', 390)
    assert inner == 390 and scroll > inner
