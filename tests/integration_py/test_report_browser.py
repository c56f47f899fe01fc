# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""The fleet report's HTML in a real browser (headless Chromium from Debian packages).

The report is built by the collection's own report playbook (jetson.specdec.report: the
fleet_report action renders the collection's template on the controller) from records a simulated demo rollout spooled
(tests/fixtures/records/demo-run: keep, revert on a concurrency-8 regression, a
fallback ladder that ended in revert, two refused boards, a host that failed on a
held lock) plus one expected host without a record (unreachable): 8 hosts. Then at
fleet scale: 299 records made from the recorded ones (tests/fixtures/records/scale.py:
fleet-run's sequential verdicts, a refused and a failed host, under new names) plus the
unreachable one, 300 hosts: the page still fits the window and every host is in it.

`make unit-integration` installs chromium first when it is missing and it runs as
root on Debian (tests/integration_py/ensure_chromium.sh); elsewhere this test skips.
"""
import glob
import html
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RECORDS = os.path.join(REPO, "tests", "fixtures", "records", "demo-run")
UNREACHABLE = "orin-09"
WINDOW = (1400, 2000)
# Chromium prints page console messages (console.error, uncaught exceptions) as
# `INFO:CONSOLE:<line>] "<message>", source: <url>` with --enable-logging=stderr.
CONSOLE = re.compile(r":CONSOLE(?::\d+|\(\d+\))\]\s*(.*)")
# Appended to a copy of the page: after load, record what only the browser knows
# (decoded image sizes, page width, script errors) where --dump-dom shows it.
PROBE = """<script>
window.addEventListener('error', function (e) { console.error('probe: ' + e.message); });
window.addEventListener('load', function () {
  var sizes = [].map.call(document.images, function (m) { return [m.naturalWidth, m.naturalHeight]; });
  document.body.setAttribute('data-probe', JSON.stringify({images: sizes,
    scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth}));
});
</script>"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on this machine: as root on Debian, `make unit-integration` installs it "
                "(tests/integration_py/ensure_chromium.sh); otherwise apt-get install chromium")
    return None


def browse(binary, url, workdir, *args):
    """Run headless Chromium once; returns (stdout, console messages). Fails on a non-zero exit."""
    cmd = [binary, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0",
           "--no-first-run", "--user-data-dir=" + os.path.join(workdir, "profile"),
           "--window-size=%d,%d" % WINDOW] + list(args) + [url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, "chromium exited %d:\n%s" % (proc.returncode, proc.stderr[-3000:])
    console = [m.group(1) for m in map(CONSOLE.search, proc.stderr.splitlines()) if m]
    return proc.stdout, console


def png_pixels(path):
    """(width, height, list of RGB tuples) of a PNG: Pillow when present, else a small zlib decoder."""
    try:
        from PIL import Image
    except ImportError:
        return _decode_png(path)
    with Image.open(path) as image:
        rgb = image.convert("RGB")
        raw = rgb.tobytes()
        return rgb.width, rgb.height, [tuple(raw[i:i + 3]) for i in range(0, len(raw), 3)]


def _decode_png(path):
    """8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) to RGB tuples, with the five filters."""
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, color, interlace = header[0], header[1], header[2], header[3], header[6]
    assert depth == 8 and color in (2, 6) and not interlace, "unsupported PNG layout %r" % (header,)
    bpp = 3 if color == 2 else 4
    raw, stride, prev, pixels = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.extend(tuple(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return width, height, pixels


def _scale():
    spec = importlib.util.spec_from_file_location("scale", os.path.join(REPO, "tests", "fixtures", "records", "scale.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=[8, 300], ids=["8-hosts", "300-hosts"])
def report(request, tmp_path_factory):
    """report.html written by fleet_report (read_spool) from recorded records: the demo's 7 and an
    unreachable host (8), or 299 made from the recorded ones and the unreachable host (300)."""
    work = tmp_path_factory.mktemp("browser")
    hosts_dir = work / "reports" / "demo" / "hosts"
    hosts_dir.mkdir(parents=True)
    names = []
    if request.param == 8:
        for path in sorted(glob.glob(os.path.join(RECORDS, "*.json"))):
            shutil.copy(path, str(hosts_dir))
            with open(path) as handle:
                names.append(json.load(handle)["host"])
    else:
        for record in _scale().fleet(request.param - 1):
            (hosts_dir / (record["host"] + ".json")).write_text(json.dumps(record))
            names.append(record["host"])
    # the collection's own report playbook (jetson.specdec.report): the fleet_report action renders the
    # collection's template on the controller, as a rollout's last play does
    inventory = work / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": dict((name, {}) for name in names + [UNREACHABLE])}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".cache", "collections"))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                           os.path.join(REPO, "playbooks", "report.yml"), "-e", "rollout_run_id=demo",
                           "-e", "rollout_report_dir=%s" % (work / "reports")],
                          cwd=str(work), capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html_path = str(work / "reports" / "demo" / "report.html")
    assert "Report: " + html_path in proc.stdout, proc.stdout
    with open(html_path, encoding="utf-8") as handle:
        chart = "src=\"data:image/png;base64," in handle.read()
    with open(os.path.join(RECORDS, "fl-stale.json")) as handle:
        failed_error = json.load(handle)["error"]
    assert len(names) + 1 == request.param
    return {"work": str(work), "html": html_path, "hosts": names + [UNREACHABLE],
            "chart": chart, "failed_error": failed_error, "size": request.param}


@pytest.fixture(scope="module")
def rendered(report):
    """Screenshot and DOM of the page in headless Chromium, with the console messages of both loads."""
    binary = chromium()
    shot = os.path.join(report["work"], "report.png")
    shot_console = browse(binary, "file://" + report["html"], report["work"], "--screenshot=" + shot)[1]
    with open(report["html"], encoding="utf-8") as handle:
        page = handle.read()
    cut = page.rfind("</body>")
    probed = page[:cut] + PROBE + page[cut:] if cut >= 0 else page + PROBE
    probe_path = os.path.join(report["work"], "probe.html")
    with open(probe_path, "w", encoding="utf-8") as handle:
        handle.write(probed)
    dom, dom_console = browse(binary, "file://" + probe_path, report["work"], "--dump-dom")
    return {"screenshot": shot, "dom": dom, "console": shot_console + dom_console}


def test_the_page_renders_something_that_is_not_blank(rendered):
    assert os.path.getsize(rendered["screenshot"]) > 20000, "screenshot suspiciously small"
    width, height, pixels = png_pixels(rendered["screenshot"])
    assert (width, height) == WINDOW
    sample = pixels[::7]
    background = max(set(sample), key=sample.count)
    ink = sum(1 for p in sample if p != background) / float(len(sample))
    assert len(set(sample)) > 50, "too few colours: blank or flat page"
    assert ink > 0.03, "only %.1f %% of the page differs from its background" % (100 * ink)


def test_no_javascript_or_console_errors(rendered):
    assert rendered["console"] == []


def test_a_script_error_would_be_seen(tmp_path):
    """The console check above can fail: an uncaught error on a page is reported."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><p>x</p><script>missingFunction();</script></body></html>")
    console = browse(chromium(), "file://" + str(page), str(tmp_path), "--dump-dom")[1]
    assert any("missingFunction is not defined" in line for line in console), console


def test_every_host_and_the_failed_hosts_reason_are_on_the_page(rendered, report):
    text = html.unescape(re.sub(r"<[^>]+>", " ", rendered["dom"]))
    text = re.sub(r"\s+", " ", text)
    missing = [host for host in report["hosts"] if host not in text]
    assert missing == [], "hosts missing from the rendered page: %s" % missing
    # each host has its row in a family table (or the failed hosts' table) as the browser parsed it
    cells = set(html.unescape(c).replace(" (SIMULATED)", "")
                for c in re.findall(r"<tr[^>]*>\s*<td>([^<]+)</td>", rendered["dom"]))
    assert [h for h in report["hosts"] if h not in cells] == [], "hosts without a table row"
    assert len(report["hosts"]) == report["size"]
    first_sentence = re.sub(r"\s+", " ", report["failed_error"]).split(". ")[0]
    assert first_sentence in text, "the failed host's reason is not shown"


def test_the_page_fits_the_window_width(rendered):
    probe = json.loads(html.unescape(re.search(r'data-probe="([^"]*)"', rendered["dom"]).group(1)))
    assert probe["scrollWidth"] <= probe["clientWidth"], "horizontal scrolling at %d px: %r" % (WINDOW[0], probe)


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is not installed: no chart")
def test_the_chart_is_embedded_and_decodes_in_the_browser(rendered, report):
    assert report["chart"] is True
    probe = json.loads(html.unescape(re.search(r'data-probe="([^"]*)"', rendered["dom"]).group(1)))
    charts = [size for size in probe["images"] if size[0] > 300 and size[1] > 150]
    assert charts, "no chart image the browser could decode: %r" % probe["images"]
    # per family, not per host: as wide at 300 hosts as at 8 (one bar per host made it 29,268 px)
    assert all(size[0] <= WINDOW[0] for size in charts), probe["images"]
