"""`semloop report`: the HTML page opened in a real headless Chromium (DOM and screenshot), the PNG
figures, and the analysis behind them (pooling, the PNG encoder, the summary order)."""

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from semloop import Config
from semloop.report import analyze_trace, colorize, png_bytes, pool_max, render_html
from semloop.scan import scan_trace
from semloop.traces import Step, Trace, load_traces

EXAMPLES = ROOT / "semloop" / "examples.jsonl"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                  "--hide-scrollbars"]


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium is not installed (.ci/run installs the Debian package)")
    return exe


def browse(chromium, tmp_path, page: Path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"  # a fresh profile per run
    return subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=180)


class Elements(HTMLParser):
    """Every start tag as (tag, attributes)."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))

    def with_(self, tag, **attrs):
        return [a for t, a in self.found if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


def pixel_spread(png: Path) -> float:
    from PIL import Image

    return float(np.asarray(Image.open(png).convert("L"), dtype=np.float32).std())


@pytest.fixture(scope="module")
def example_report(tmp_path_factory, semloop_cmd_module):
    out = tmp_path_factory.mktemp("report")
    proc = subprocess.run([*semloop_cmd_module, "report", str(EXAMPLES), "--out", str(out / "report.html"),
                           "--png", str(out / "png")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def semloop_cmd_module():
    import sys

    exe = shutil.which("semloop")
    return [exe] if exe else [sys.executable, "-m", "semloop"]


def test_report_in_chromium_shows_every_trace_its_flagged_steps_and_heatmaps(chromium, example_report, tmp_path):
    page = example_report / "report.html"
    text = page.read_text(encoding="utf-8")
    # self-contained: no element loads anything from elsewhere (URLs only appear as escaped text)
    static = Elements()
    static.feed(text)
    assert not [t for t, a in static.found if t in ("link", "iframe", "object", "embed")]
    loads = [a.get("src") or a.get("href") for t, a in static.found if a.get("src") or a.get("href")]
    assert loads and all(u.startswith(("#", "data:image/png;base64,")) for u in loads), loads[:5]
    assert "url(" not in text.split("<style>")[1].split("</style>")[0] and "@import" not in text

    dom = browse(chromium, tmp_path, page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    elements = Elements()
    elements.feed(dom.stdout)
    assert elements.with_("body", data_script="ran"), "the page's script failed in Chromium"

    traces = load_traces(EXAMPLES)
    sections = {a["data-trace-id"]: a["id"] for a in elements.with_("section")}
    assert list(sections) == [t.id for t in traces]
    summary = [a["data-trace-id"] for t, a in elements.found if t == "tr" and "data-trace-id" in a]
    assert sorted(summary) == sorted(sections)  # one summary row per trace, linking to its section
    assert {a["href"] for a in elements.with_("a") if a.get("href", "").startswith("#trace-")} >= {
        f"#{anchor}" for anchor in sections.values()}

    for trace in traces:
        anchor = sections[trace.id]
        expected = scan_trace(trace, Config())  # what `semloop scan` reports for this trace
        rows = [a for t, a in elements.found if t == "tr" and a.get("id", "").startswith(f"{anchor}-s")]
        assert [int(r["data-step"]) for r in rows] == list(range(len(trace.steps)))
        flagged = {int(r["data-step"]): r["data-action"] for r in rows if r["data-action"] != "allow"}
        assert flagged == {v.step: v.action for v in expected.events}, trace.id
        maps = elements.with_("svg", data_trace=anchor)
        assert sorted(m["data-kind"] for m in maps) == ["call", "result"]
        assert all(int(m["data-steps"]) == len(trace.steps) for m in maps)
    images = [a for t, a in elements.found if t == "image"]
    assert len(images) == 2 * len(traces) and all(a["href"].startswith("data:image/png;base64,") for a in images)
    marks = [a for t, a in elements.found if t == "line" and "data-step" in a]
    assert len(marks) == 2 * sum(len(scan_trace(t, Config()).events) for t in traces)  # both maps
    outcomes = {a.get("class") for t, a in elements.found if t == "span" and "badge" in a.get("class", "")}
    assert "badge caught" in outcomes and "badge quiet" in outcomes  # the examples are labeled


def test_report_screenshot_is_not_blank(chromium, example_report, tmp_path):
    shot = tmp_path / "report.png"
    proc = browse(chromium, tmp_path, example_report / "report.html", f"--screenshot={shot}", "--window-size=1200,1400")
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    blank_shot = tmp_path / "blank.png"
    browse(chromium, tmp_path, blank, f"--screenshot={blank_shot}", "--window-size=1200,1400")
    assert pixel_spread(blank_shot) < 1.0  # the measure tells a blank page apart
    assert pixel_spread(shot) > 20.0


def test_png_figures_one_per_trace(example_report):
    from PIL import Image

    pngs = sorted((example_report / "png").glob("*.png"))
    assert [p.stem for p in pngs] == sorted(t.id for t in load_traces(EXAMPLES))
    for png in pngs:
        width, height = Image.open(png).size
        assert width > 600 and height > 300 and pixel_spread(png) > 20.0


def test_report_trace_filter_and_other_formats(semloop_cmd, tmp_path):
    tool_use = lambda i: {"role": "assistant", "content": [  # noqa: E731
        {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "cat /etc/shadow"}}]}
    tool_result = lambda i: {"role": "user", "content": [  # noqa: E731
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": "cat: /etc/shadow: Permission denied",
         "is_error": True}]}
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps([m for i in range(4) for m in (tool_use(i), tool_result(i))]))
    out = tmp_path / "one.html"
    proc = subprocess.run([*semloop_cmd, "report", str(EXAMPLES), str(conversation), "--trace", "conversation",
                           "--trace", "a-b-a-b-cycle", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    elements = Elements()
    elements.feed(out.read_text())
    assert [a["data-trace-id"] for a in elements.with_("section")] == ["a-b-a-b-cycle", "conversation"]
    rows = [a for t, a in elements.found if t == "tr" and a.get("id", "").startswith("trace-1-s")]
    assert [r["data-action"] for r in rows] == ["allow", "allow", "warn", "stop"]
    assert all("error" in r["class"] for r in rows)  # Permission denied: marked as an error

    missing = subprocess.run([*semloop_cmd, "report", str(EXAMPLES), "--trace", "nope", "--out", str(out)],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "no trace with id 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr


def _looping_trace(n: int, loop: range) -> Trace:
    steps = []
    for i in range(n):
        if i in loop:
            steps.append(Step("Bash", {"command": "pytest tests/test_x.py"}, "FAILED test_a - AssertionError", True))
        else:
            steps.append(Step("Read", {"file_path": f"src/module_{i}.py"}, f"def f{i}(): return {i} * {i + 7}"))
    return Trace("long", tuple(steps))


def test_long_session_is_pooled_and_the_loop_stays_visible():
    trace = _looping_trace(300, range(120, 150))
    report = analyze_trace(trace, Config(embedding="hashing"), max_cells=50)
    assert report.bin_size == 6 and report.call_similarity.shape == (50, 50) == report.result_similarity.shape
    loop_cells = slice(120 // 6, 150 // 6)
    # inside the loop block every cell holds a repeat: identical calls and identical results
    assert np.all(report.call_similarity[loop_cells, loop_cells] > 0.99)
    assert np.all(report.result_similarity[loop_cells, loop_cells] > 0.99)
    # between the loop and the distinct reads, results do not match
    assert report.result_similarity[loop_cells, :15].max() < 0.5
    assert report.first_warn == 122 and report.wasted == len(report.events) > 0
    page = render_html([report])
    assert "pooled: 6 steps per cell" in page and page.count('class="heatmap"') == 2


def test_pool_max_keeps_the_brightest_pair():
    m = np.zeros((10, 10), dtype=np.float32)
    m[7, 2] = 0.9
    pooled, size = pool_max(m, max_cells=4)
    assert size == 3 and pooled.shape == (4, 4)
    assert pooled[2, 0] == pytest.approx(0.9) and pooled.sum() == pytest.approx(0.9)
    same, one = pool_max(m, max_cells=10)
    assert one == 1 and np.array_equal(same, m)


def test_png_encoder_round_trips_through_pillow(tmp_path):
    from PIL import Image

    matrix = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    rgb = colorize(matrix)
    path = tmp_path / "m.png"
    path.write_bytes(png_bytes(rgb))
    decoded = np.asarray(Image.open(path).convert("RGB"))
    assert decoded.shape == (3, 4, 3) and np.array_equal(decoded, rgb)
    assert tuple(rgb[0, 0]) == (68, 1, 84) and tuple(rgb[2, 3]) == (253, 231, 37)  # viridis ends


def test_summary_sorted_by_steps_wasted_with_label_outcomes():
    traces = load_traces(EXAMPLES)
    reports = [analyze_trace(t, Config()) for t in traces]
    page = render_html(reports)
    elements = Elements()
    elements.feed(page)
    order = [a["data-trace-id"] for t, a in elements.found if t == "tr" and "data-trace-id" in a]
    wasted = {r.id: r.wasted for r in reports}
    assert [wasted[i] for i in order] == sorted(wasted.values(), reverse=True)
    outcome = {r.id: r.outcome for r in reports}
    for t in traces:
        assert outcome[t.id] == ("caught" if t.label["loop"] else "quiet")
    unlabeled = analyze_trace(Trace("x", traces[0].steps), Config())
    assert unlabeled.outcome is None
