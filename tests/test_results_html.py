"""``memaudit report html``: a self-contained page whose sections follow the store, checked in headless Chromium."""

from __future__ import annotations

import base64
import os
import re
import shutil
import sqlite3
import subprocess
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memaudit.cli import main
from memaudit.results import record
from memaudit.results.html import build_html, write_html
from memaudit.results.store import Store
from memaudit.results.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [ROOT / "packages_data" / "small" / "small-s0.json", ROOT / "packages_data" / "small" / "small-s1.json",
            ROOT / "packages_data" / "validity" / "validity-s0.json"]
FRACS = [0.1, 0.3]
METHODS = ["density", "gvt", "kind:fact"]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "r.sqlite"
    rep = run_sweep(PACKAGES, FRACS, METHODS, db=path, workers=1, progress=False,
                    command="memaudit sweep small-s0.json small-s1.json validity-s0.json --budget-frac 0.1,0.3")
    assert not rep.failed
    return path


class _Tables(HTMLParser):
    """Every table by id: a list of rows, each a list of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self._id, self._row, self._cell = {}, None, None, None
        self.body_attrs = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body_attrs = a
        if tag == "table":
            self._id = a.get("id")
            self.tables[self._id] = []
        elif tag == "tr" and self._id:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._id].append(self._row)
            self._row = None
        elif tag == "table":
            self._id = None


def _parse(text: str) -> _Tables:
    p = _Tables()
    p.feed(text)
    return p


def _expected_numbers(db):
    """Straight from the SQLite file, not through memaudit: OPT per (package, frac); mean ratio per (family,
    method, frac); validity kept per (method, frac)."""
    conn = sqlite3.connect(db)
    opt = {(pid, round(f, 6)): v for pid, f, v in conn.execute(
        "SELECT package_id, budget_frac, value FROM results WHERE kind = 'solve' AND status = 'certified'")}
    ratios = defaultdict(list)
    for fam, m, f, r in conn.execute("SELECT package_family, method, budget_frac, ratio FROM results "
                                     "WHERE kind = 'score' AND ratio IS NOT NULL"):
        ratios[fam, m, round(f, 6)].append(r)
    conn.close()
    return opt, {k: float(np.mean(v)) for k, v in ratios.items()}


def test_page_holds_the_numbers_of_the_store(db):
    page = build_html(db)
    t = _parse(page).tables
    opt, means = _expected_numbers(db)
    assert len(opt) == len(PACKAGES) * len(FRACS)
    shown_opt = {(r[0], r[2]): r[4] for r in t["t-opt"][1:]}
    for (pid, f), v in opt.items():
        assert shown_opt[pid, f"{f:.2f}"] == f"{v:.10g}"
    shown = {(r[0], r[1], r[2]): r[4] for r in t["t-ratio"][1:]}
    assert len(shown) == len(means) == 2 * len(METHODS) * len(FRACS)
    for (fam, m, f), mean in means.items():
        assert shown[fam, m, f"{f:.2f}"] == f"{mean:.3f}"
    assert "sec-audit" not in page and "sec-harness" not in page and "sec-failed" not in page


def test_page_is_self_contained_with_inline_png_figures(db):
    page = build_html(db)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "the page loads something from a network"
    imgs = re.findall(r'<img [^>]*src="data:image/png;base64,([^"]+)"', page)
    assert len(imgs) == 3  # ratio per family (small, validity) and kinds
    for b64 in imgs:
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    assert "memaudit sweep small-s0.json small-s1.json validity-s0.json --budget-frac 0.1,0.3" in page
    assert f"memaudit report html --db {db}" in page


def test_record_sections_appear_only_with_their_rows(tmp_path):
    db = tmp_path / "r.sqlite"
    Store(db).close()
    empty = build_html(db)
    assert "The store is empty" in empty and "<img" not in empty
    record("audit", package_sha256="ab" * 32, package_id="natural-s42", method="mem0",
           payload={"product": "mem0", "verdict": "leaks a deleted value", "selected_ratio": 0.4132}, db=db)
    record("diagnose", package_sha256="cd" * 32, method="replay-capped",
           payload={"attribution": {"write": 0.5, "retrieval": 0.25, "reader": 0.25}}, db=db)
    page = build_html(db)
    t = _parse(page).tables
    assert "sec-audit" in page and "sec-diagnose" in page and "sec-harness" not in page and "sec-ratio" not in page
    audit = dict(zip(t["t-audit"][0], t["t-audit"][1]))
    assert audit["verdict"] == "leaks a deleted value" and audit["selected_ratio"] == "0.413"
    diag = dict(zip(t["t-diagnose"][0], t["t-diagnose"][1]))
    assert diag["attribution.write"] == "0.500" and diag["package"] == "cdcdcdcdcdcd"


def test_report_html_command(db, tmp_path):
    out = tmp_path / "report.html"
    r = CliRunner().invoke(main, ["report", "html", "--db", str(db), "--out", str(out)])
    assert r.exit_code == 0 and f"report written to {out}" in r.output
    assert "Certified optima" in out.read_text(encoding="utf-8")
    r = CliRunner().invoke(main, ["report", "html", "--db", str(tmp_path / "none.sqlite"), "--out", str(out)])
    assert r.exit_code == 1 and "no results store there" in r.output
    assert not (tmp_path / "none.sqlite").exists()


# -- in a real browser ---------------------------------------------------------------------------

def _chromium() -> str:
    exe = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing in CI: scripts/install_browser.sh (run by .ci/run) should install it")
        pytest.skip("headless Chromium not installed (run scripts/install_browser.sh, or apt-get install chromium)")
    return exe


def _browse(exe, url: str, profile: Path, *extra) -> tuple[str, list[str]]:
    """(stdout, console lines of the page) of one headless Chromium run."""
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-extensions", "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", *extra, url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return proc.stdout, console


def test_console_detector_sees_errors(tmp_path):
    exe = _chromium()
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><script>console.error("boom 42"); null.x();</script></body></html>')
    _, console = _browse(exe, bad.as_uri(), tmp_path / "profile", "--dump-dom")
    assert any("boom 42" in c for c in console) and any("Uncaught TypeError" in c for c in console)


def test_report_in_headless_chromium(db, tmp_path):
    exe = _chromium()
    page = tmp_path / "report.html"
    write_html(db, page)
    dom, console = _browse(exe, page.as_uri(), tmp_path / "profile", "--dump-dom")
    assert console == [], f"the page wrote to the console: {console}"
    parsed = _parse(dom)
    assert parsed.body_attrs.get("data-ready") == "1", "the page's script did not run to its end"
    opt, means = _expected_numbers(db)
    text = re.sub(r"<[^>]+>", " ", dom)
    for v in opt.values():
        assert f"{v:.10g}" in text
    for mean in means.values():
        assert f"{mean:.3f}" in text
    # the inline script sorts: #sort=TABLE:COLUMN:desc orders the OPT column from the largest down
    dom, console = _browse(exe, page.as_uri() + "#sort=t-opt:4:desc", tmp_path / "profile", "--dump-dom")
    assert console == []
    rows = _parse(dom).tables["t-opt"]
    shown = [float(r[4]) for r in rows[1:]]
    assert shown == sorted(opt.values(), reverse=True) and shown != sorted(shown)
    assert rows[0][4] == "OPT"
    shot = tmp_path / "report.png"
    _browse(exe, page.as_uri(), tmp_path / "profile", "--window-size=1200,2400", f"--screenshot={shot}")
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1200, 2400)
        assert np.asarray(im.convert("L")).std() > 10, "the screenshot is blank"
    keep = os.environ.get("MEMAUDIT_SCREENSHOT_DIR")
    if keep:
        shutil.copyfile(shot, Path(keep) / "report.png")
