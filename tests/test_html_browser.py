"""--format html, looked at in a real browser: Debian's headless Chromium.

Each bundled example (inspect on the bundled dumps, hostile and corrupt files; check-skew on
the three fingerprint sets; capture list; replay where torch is installed) is written as HTML,
opened at a phone's width (390 CSS pixels, mobile emulation, so the viewport meta matters) and
at a desktop's, and the laid-out page is checked: it requests nothing but itself, it does not
scroll sideways as a whole on the phone, it shows every finding, it is not blank, and the cells
a finding is about are drawn in the marked colour (read back from a screenshot's pixels).

Screenshots are written to ``$PPAUX_SCREENSHOTS`` when set, else to the test's temporary
directory. Without Chromium the tests skip, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import Browser, chromium_path

from ppaux.report.formats.html import MARKED_BACKGROUND

REPO = Path(__file__).resolve().parent.parent
MARKED_RGB = tuple(int(MARKED_BACKGROUND[i : i + 2], 16) for i in (1, 3, 5))
PHONE = (390, 844, True)
DESKTOP = (1280, 900, False)

EXAMPLES = {
    "inspect-dumps": ["inspect", "fixtures/dumps"],
    "inspect-malicious": ["inspect", "fixtures/malicious"],
    "inspect-corrupt": ["inspect", "fixtures/corrupt"],
    "check-skew-consistent": ["check-skew", "fixtures/skew/fingerprints/consistent"],
    "check-skew-releases": ["check-skew", "fixtures/skew/fingerprints/releases"],
    "check-skew-skewed": ["check-skew", "fixtures/skew/fingerprints/skewed"],
    "capture-list": ["capture", "list", "--dir", "{captures}"],
    "replay": ["replay", "fixtures/dumps/aux_list.pt", "fixtures/dumps/clean_output.pt"],
}
#: Examples whose tables mark cells (check-skew's differing values, inspect's bad keys).
MARKED = {"inspect-dumps", "check-skew-releases", "check-skew-skewed", "replay"}


@pytest.fixture(scope="module")
def browser():
    executable = chromium_path()
    if executable is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    with Browser(executable) as opened:
        yield opened


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    target = os.environ.get("PPAUX_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        return Path(target)
    return tmp_path_factory.mktemp("screenshots")


def _ppaux(args: list[str], fmt: str, out: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", *args, "--format", fmt, "--output", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Traceback" not in done.stderr


def _example(name: str, tmp_path: Path) -> tuple[Path, dict]:
    captures = tmp_path / "captures"
    captures.mkdir()
    for fixture in ("capture_add_error.pt", "capture_pop_error.pt"):
        shutil.copy(REPO / "fixtures" / "dumps" / fixture, captures / f"capture-{fixture}")
    args = [a.replace("{captures}", str(captures)) for a in EXAMPLES[name]]
    page, document = tmp_path / f"{name}.html", tmp_path / f"{name}.json"
    _ppaux(args, "html", page)
    _ppaux(args, "json", document)
    return page, json.loads(document.read_text(encoding="utf-8"))


def _not_blank(browser: Browser, path: Path) -> None:
    width, height = browser.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    scale = min(1.0, (250_000 / (width * height)) ** 0.5)
    data = browser.call(
        "Page.captureScreenshot",
        browser.session,
        format="png",
        captureBeyondViewport=True,
        clip={"x": 0, "y": 0, "width": width, "height": height, "scale": scale},
    )
    import base64

    from browser import decode_png

    raw = base64.b64decode(data["data"])
    path.write_bytes(raw)
    w, h, pixels = decode_png(raw)
    colours = {pixels[i : i + 3] for i in range(0, len(pixels), 3 * 7)}
    inked = sum(1 for i in range(0, len(pixels), 3) if pixels[i] < 200)  # dark text
    assert len(colours) > 20 and inked > w * h * 0.003, f"{path} looks blank"


def _marked_cell_pixels(browser: Browser, path: Path) -> None:
    """Scroll the first marked cell into view and read its colour from a screenshot."""
    # Scrolled to the end of its row's visible part, so that a sticky first column does not
    # cover it; then the cell itself must be what is drawn at its centre.
    rect = browser.evaluate(
        "(() => { const c = document.querySelector('td.marked');"
        " c.scrollIntoView({block: 'center', inline: 'end'});"
        " const r = c.getBoundingClientRect();"
        " const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);"
        " return [r.left + scrollX, r.top + scrollY, r.width, r.height,"
        " r.left, r.right, innerWidth, c.contains(top)]; })()"
    )
    x, y, width, height, left, right, viewport, on_top = rect
    assert left >= 0 and right <= viewport + 1, "a marked cell cannot be brought into view"
    assert on_top, "something covers the marked cell"
    w, h, pixels = browser.screenshot(path, clip=(x, y, width, height))
    count = w * h
    hits = sum(
        1
        for i in range(0, len(pixels), 3)
        if all(abs(pixels[i + k] - MARKED_RGB[k]) <= 3 for k in range(3))
    )
    assert hits > count * 0.4, f"{path}: the marked colour covers {hits} of {count} pixels"


@pytest.mark.parametrize(
    "name",
    # replay makes real tensors
    [pytest.param(n, marks=pytest.mark.torch) if n == "replay" else n for n in EXAMPLES],
)
def test_example_page_in_chromium(name, browser, shots, tmp_path):
    page, document = _example(name, tmp_path)
    url = page.as_uri()
    expected_findings = len(document["findings"])
    for label, (width, height, mobile) in (("phone", PHONE), ("desktop", DESKTOP)):
        browser.open(url, width, height, mobile)
        assert browser.requests() == [url]  # nothing from the network, not even a favicon
        facts = browser.evaluate(
            "({inner: innerWidth, scroll: document.documentElement.scrollWidth,"
            " h1: document.querySelector('h1').innerText,"
            " findings: document.querySelectorAll('article.finding').length,"
            " marked: document.querySelectorAll('td.marked').length,"
            " markedColour: (document.querySelector('td.marked') &&"
            "   getComputedStyle(document.querySelector('td.marked')).backgroundColor),"
            " font: parseFloat(getComputedStyle(document.body).fontSize),"
            " boxes: [...document.querySelectorAll('.scroll')].map("
            "   b => b.getBoundingClientRect().right),"
            " active: document.querySelectorAll('script, img, iframe, object, embed').length})"
        )
        assert facts["inner"] == width  # the viewport meta: a phone lays out at its own width
        assert facts["scroll"] <= width, f"{name} scrolls sideways at {label} width"
        assert all(right <= width for right in facts["boxes"])
        assert facts["font"] >= 15
        assert facts["h1"] == "ppaux " + document["command"]
        assert facts["findings"] == expected_findings
        assert facts["active"] == 0
        if name in MARKED:
            assert facts["marked"] > 0
            assert facts["markedColour"] == "rgb({}, {}, {})".format(*MARKED_RGB)
            _marked_cell_pixels(browser, shots / f"{name}-{label}-marked.png")
        elif name == "check-skew-consistent":
            assert facts["marked"] == 0
        _not_blank(browser, shots / f"{name}-{label}.png")
        browser.evaluate("scrollTo(0, 0)")
        browser.screenshot(shots / f"{name}-{label}-top.png")
