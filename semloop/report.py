"""`semloop report`: recorded traces as one self-contained HTML page, to see loops at a glance.

Per trace: a timeline of the steps (tool, short input, a digest of the result, errors, where warn
and stop fired with their signals and the earlier steps they matched), and two heatmaps side by
side — how alike the *calls* are (cosine of the guard's call embeddings) and how alike the
*results* are (word overlap of their content sketches). A loop shows as a bright block or a
bright off-diagonal in both. For many traces, a summary table sorted by steps wasted links to
each trace; labeled traces also show the label and whether the loop was caught.

Everything is computed through the public API: a fresh `LoopGuard` per trace fed every step with
`record` (as `semloop scan` does), the guard's embedder on the calls' texts, and `features` for the
results. The page needs no network: images are inline PNG (written with numpy + zlib), the
markup is inline SVG, the script a few lines.

Long sessions: matrices larger than `max_cells` are max-pooled (a bright pair anywhere in a block
lights the block), so a 2,000-step session renders in seconds and the page stays small.
"""

from __future__ import annotations

import base64
import html
import re
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Config
from .messages import install_hint
from .traces import Trace
from .verdict import FlaggedSteps, Verdict

MAX_CELLS = 400
"""Heatmaps keep at most this many cells per side; longer sessions are max-pooled."""


@dataclass(frozen=True)
class StepView:
    """What the timeline shows for one step."""

    index: int
    tool: str
    input_text: str  # the call's argument values, shortened
    result_text: str  # the result's first line, shortened
    result_lines: int
    result_chars: int
    result_digest: str  # 6 hex digits of the normalized result: equal results, equal digests
    error: str | None  # the error class ("permission", "not_found", ...) or "error"; None if fine
    verdict: Verdict


@dataclass(frozen=True)
class TraceReport(FlaggedSteps):
    """One trace, analysed: the timeline, the two (possibly pooled) similarity matrices."""

    id: str
    source: str
    steps: tuple[StepView, ...]
    call_similarity: Any  # (m, m) float32 array, m <= MAX_CELLS
    result_similarity: Any
    bin_size: int  # steps per heatmap cell (1 unless pooled)
    label: dict[str, Any] | None
    events: tuple[Verdict, ...] = field(init=False, repr=False, compare=False)  # the non-allow verdicts

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(s.verdict for s in self.steps if s.verdict.action != "allow"))

    @property
    def wasted(self) -> int:
        """Steps semloop flagged: each warning, the stop and every step after it (a guarded run
        would have ended at the stop)."""
        return len(self.events)

    @property
    def outcome(self) -> str | None:
        """For labeled traces: "caught", "missed", "false alarm" or "quiet"; None without a label."""
        if not isinstance(self.label, dict) or "loop" not in self.label:
            return None
        flagged = bool(self.events)
        if self.label.get("loop"):
            return "caught" if flagged else "missed"
        return "false alarm" if flagged else "quiet"


# -- analysis --------------------------------------------------------------------------------


def analyze_trace(trace: Trace, config: Config | None = None, embedder=None, source: str = "",
                  max_cells: int = MAX_CELLS) -> TraceReport:
    """Replay `trace` through a fresh guard (as `semloop scan` does) and compute what the report shows."""
    from . import features
    from .embeddings import load_embedder
    from .guard import LoopGuard
    from .scan import replay

    config = config or Config()
    guard = LoopGuard(config, embedder=embedder)
    views, call_texts, sketches = [], [], []
    for i, (step, verdict) in enumerate(zip(trace.steps, replay(trace, guard), strict=True)):
        values = features.call_values(step.input)
        call_texts.append(features.call_text(step.tool, values, config.max_text_chars))
        text = features.render_value(step.output)
        normalized = features.normalize_result(text)
        sketches.append(features.result_sketch(normalized))
        error = features.error_class(text, step.is_error)
        first_line = next((line.strip() for line in text[:4000].splitlines() if line.strip()), "")
        views.append(StepView(
            index=i, tool=step.tool,
            input_text=features.excerpt(" · ".join(v.replace("\n", " ") for v in values), 160),
            result_text=features.excerpt(first_line, 140),
            result_lines=text.count("\n") + 1 if text else 0, result_chars=len(text),
            result_digest=features.digest(normalized)[:6],
            error=error or ("error" if step.is_error else None),
            verdict=verdict))
    n = len(views)
    if n:
        embed = guard.embedder or load_embedder(config.embedding, config.model_path)
        calls = call_similarity(call_texts, embed)
        results = result_similarity(sketches)
        calls_pooled, bin_size = pool_max(calls, max_cells)
        results_pooled, _ = pool_max(results, max_cells)
    else:
        import numpy as np

        calls_pooled = results_pooled = np.zeros((0, 0), dtype=np.float32)
        bin_size = 1
    return TraceReport(trace.id, source, tuple(views), calls_pooled, results_pooled, bin_size, trace.label)


def call_similarity(texts: Sequence[str], embed: Callable) -> Any:
    """Cosine similarity of every pair of calls, from the guard's embedder (unit vectors)."""
    import numpy as np

    unique = {t: i for i, t in enumerate(dict.fromkeys(texts))}
    distinct = list(unique)
    # one text per call, as the guard does: the shared embedder's LRU cache may evict part of a
    # large batch while serving it; per text it costs ~0.1 ms (static model) or a cache hit
    vectors = np.concatenate([np.asarray(embed([t]), dtype=np.float32) for t in distinct])
    rows = vectors[[unique[t] for t in texts]]
    sim = np.clip(rows @ rows.T, 0.0, 1.0)
    np.fill_diagonal(sim, 1.0)
    return sim


def result_similarity(sketches: Sequence[tuple[tuple[int, ...], int]], exact_limit: int = 300) -> Any:
    """Word-overlap (Jaccard) of every pair of results, from their MinHash sketches.

    Identical results are compared once. Up to `exact_limit` distinct results use the guard's
    own estimate (`features.content_similarity`); beyond that, the sketches are hashed into
    2,048-bit sets and compared with one matrix product (an approximation that is only drawn,
    never used to decide anything)."""
    import numpy as np

    from .features import content_similarity

    index: dict[tuple, int] = {}
    inverse = np.fromiter((index.setdefault(s, len(index)) for s in sketches), dtype=np.int64, count=len(sketches))
    distinct = list(index)
    u = len(distinct)
    if u <= exact_limit:
        sim_u = np.eye(u, dtype=np.float32)
        for a in range(u):
            for b in range(a + 1, u):
                sim_u[a, b] = sim_u[b, a] = content_similarity(*distinct[a], *distinct[b])[0]
    else:
        bits = 2048
        sets = np.zeros((u, bits), dtype=np.float32)
        for row, (sketch, _) in enumerate(distinct):
            if sketch:
                sets[row, np.asarray(sketch, dtype=np.uint64) % bits] = 1.0
        both = sets @ sets.T
        sizes = sets.sum(axis=1)
        union = sizes[:, None] + sizes[None, :] - both
        empty = sizes == 0
        with np.errstate(invalid="ignore", divide="ignore"):
            sim_u = np.where(union > 0, both / union, 0.0).astype(np.float32)
        sim_u[np.ix_(empty, empty)] = 1.0  # two empty results are the same (empty) result
        np.fill_diagonal(sim_u, 1.0)
    return sim_u[np.ix_(inverse, inverse)]


def pool_max(matrix: Any, max_cells: int = MAX_CELLS) -> tuple[Any, int]:
    """Downsample an (n, n) matrix to at most `max_cells` per side by taking each block's maximum:
    a repeat anywhere in a block stays visible. Returns the matrix and the steps per cell."""
    import numpy as np

    n = matrix.shape[0]
    if n <= max_cells:
        return matrix.astype(np.float32), 1
    size = -(-n // max_cells)
    m = -(-n // size)
    padded = np.zeros((m * size, m * size), dtype=np.float32)
    padded[:n, :n] = matrix
    return padded.reshape(m, size, m, size).max(axis=(1, 3)), size


# -- images ----------------------------------------------------------------------------------

# viridis, sampled at 9 points (dark = unrelated, yellow = the same)
_VIRIDIS = [(68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141), (39, 173, 129),
            (92, 200, 99), (170, 220, 50), (253, 231, 37)]


def colour_floor(matrix: Any) -> float:
    """The similarity drawn darkest: the median of the off-diagonal pairs (at most 0.9). Embedding
    cosines of unrelated calls of one tool are often 0.6+; starting the colour scale at the
    session's typical pair makes repeats stand out for any embedder."""
    import numpy as np

    n = matrix.shape[0]
    if n < 3:
        return 0.0
    upper = matrix[np.triu_indices(n, 1)]
    return float(min(0.9, max(0.0, np.median(upper))))


def colorize(matrix: Any, floor: float = 0.0) -> Any:
    """(n, n) values → (n, n, 3) uint8 viridis colours, `floor` (and below) darkest, 1 brightest."""
    import numpy as np

    anchors = np.asarray(_VIRIDIS, dtype=np.float32)
    scaled = (np.nan_to_num(matrix, nan=0.0) - floor) / max(1e-6, 1.0 - floor)
    x = np.clip(scaled, 0.0, 1.0) * (len(anchors) - 1)
    low = np.minimum(x.astype(np.int64), len(anchors) - 2)
    frac = (x - low)[..., None]
    return (anchors[low] * (1 - frac) + anchors[low + 1] * frac).round().astype(np.uint8)


def png_bytes(rgb: Any) -> bytes:
    """A PNG file of an (h, w, 3) uint8 array: the format in 15 lines, so the page needs no matplotlib."""
    import numpy as np

    h, w, _ = rgb.shape
    raw = np.zeros((h, 1 + 3 * w), dtype=np.uint8)  # filter byte 0 per row, then RGB
    raw[:, 1:] = rgb.reshape(h, 3 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))


# -- HTML ------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:18px 28px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#c5cbd6;font-size:13px}main{padding:18px 28px}
table{border-collapse:collapse;background:#fff}
th,td{padding:4px 8px;border-bottom:1px solid #e3e6eb;text-align:left;vertical-align:top}
th{background:#eef0f4;font-weight:600;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
section.trace{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:22px 0;padding:14px 18px}
section.trace h2{margin:0 0 6px;font-size:17px}.facts{color:#4a5566;margin:0 0 10px}
.maps{display:flex;flex-wrap:wrap;gap:24px;margin:8px 0 14px}
figure{margin:0}figcaption{font-size:12px;color:#4a5566;max-width:380px}
svg.heatmap{background:#fff;cursor:crosshair}.hover{font-size:12px;color:#1d2430;min-height:16px}
.timeline{max-height:560px;overflow:auto;border:1px solid #e3e6eb}.timeline table{width:100%;font-size:13px}
td.input{min-width:180px;max-width:340px}td.result{min-width:260px;max-width:520px}
tr.warn{background:#fff4d6}tr.stop{background:#fde0dd}tr.error td.result{color:#a1260d}
.badge{display:inline-block;border-radius:3px;padding:0 5px;font-size:12px;font-weight:600;color:#fff}
.badge.warn{background:#d08700}.badge.stop{background:#c62828}.badge.err{background:#8d3b2f}
.badge.caught,.badge.quiet{background:#2e7d32}.badge.missed,.badge.false-alarm{background:#c62828}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
.digest{font:11px ui-monospace,monospace;padding:0 4px;border-radius:3px;color:#fff}
.signal{white-space:nowrap;font-size:12px}details{font-size:12px;color:#4a5566}.legend{font-size:12px;color:#4a5566}
label.filter{font-size:13px;margin-left:12px}section.trace.only-flagged tr.allow{display:none}
"""

_JS = """
document.querySelectorAll('svg.heatmap').forEach(function (svg) {
  var n = +svg.dataset.steps, bin = +svg.dataset.bin, cells = +svg.dataset.cells, size = +svg.dataset.size;
  var values = atob(svg.dataset.values), out = svg.parentNode.querySelector('.hover');
  function cell(e) {
    var r = svg.getBoundingClientRect(), scale = r.width / size;
    var x = Math.floor((e.clientX - r.left) / scale / (size / cells)),
        y = Math.floor((e.clientY - r.top) / scale / (size / cells));
    return (x < 0 || y < 0 || x >= cells || y >= cells) ? null : [y, x];
  }
  function steps(c) {
    var a = c * bin, b = Math.min(n, a + bin) - 1;
    return a === b ? 'step ' + a : 'steps ' + a + '–' + b;
  }
  svg.addEventListener('mousemove', function (e) {
    var c = cell(e); if (!c) return;
    out.textContent = steps(c[0]) + ' × ' + steps(c[1]) + ': '
      + (values.charCodeAt(c[0] * cells + c[1]) / 255).toFixed(2);
  });
  svg.addEventListener('click', function (e) {
    var c = cell(e); if (!c) return;
    var row = document.getElementById(svg.dataset.trace + '-s' + (c[1] * bin));
    if (row) { row.scrollIntoView({block: 'center'}); row.style.outline = '2px solid #1565c0'; }
  });
});
document.querySelectorAll('input.only-flagged').forEach(function (box) {
  box.addEventListener('change', function () { box.closest('section').classList.toggle('only-flagged', box.checked); });
});
document.body.dataset.script = 'ran';
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _digest_colour(digest: str) -> str:
    hue = int(digest[:4], 16) * 360 // 0x10000
    return f"hsl({hue},55%,38%)"


def _heatmap_svg(matrix: Any, report: TraceReport, anchor: str, kind: str, size: int = 360) -> str:
    """Inline SVG: the matrix as a pixelated PNG, with warn/stop marks along both axes and the
    labeled onset as a dashed line."""
    import numpy as np

    cells = matrix.shape[0]
    n = len(report.steps)
    image = base64.b64encode(png_bytes(colorize(matrix, colour_floor(matrix)))).decode("ascii")
    values = base64.b64encode((np.clip(matrix, 0, 1) * 255).round().astype(np.uint8).tobytes()).decode("ascii")
    scale = size / cells
    marks = []
    for v in report.events:
        pos = (v.step // report.bin_size + 0.5) * scale
        colour = "#c62828" if v.action == "stop" else "#f0a000"
        marks.append(f'<line class="mark {v.action}" data-step="{v.step}" x1="{pos:.1f}" y1="{size + 2}" '
                     f'x2="{pos:.1f}" y2="{size + 9}" stroke="{colour}" stroke-width="2"/>'
                     f'<line x1="{size + 2}" y1="{pos:.1f}" x2="{size + 9}" y2="{pos:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/>')
    onset = (report.label or {}).get("onset")
    if (isinstance(onset, int) and not isinstance(onset, bool) and 0 <= onset < n
            and (report.label or {}).get("loop")):
        pos = onset // report.bin_size * scale
        marks.append(f'<line class="onset" x1="{pos:.1f}" y1="0" x2="{pos:.1f}" y2="{size}" stroke="#fff" '
                     f'stroke-dasharray="4 3" stroke-width="1"/>')
    return (f'<svg class="heatmap" data-kind="{kind}" data-trace="{anchor}" data-steps="{n}" '
            f'data-bin="{report.bin_size}" '
            f'data-cells="{cells}" data-size="{size}" data-values="{values}" width="{size + 10}" height="{size + 10}" '
            f'viewBox="0 0 {size + 10} {size + 10}" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'aria-label="{kind} similarity of {n} steps">'
            f'<image width="{size}" height="{size}" preserveAspectRatio="none" style="image-rendering:pixelated" '
            f'href="data:image/png;base64,{image}"/>{"".join(marks)}</svg>')


def _signals_html(verdict: Verdict, anchor: str) -> str:
    parts = []
    for s in verdict.signals:
        links = ", ".join(f'<a href="#{anchor}-s{j}">{j}</a>' for j in s.related_steps[:12])
        more = f" +{len(s.related_steps) - 12}" if len(s.related_steps) > 12 else ""
        parts.append(f'<div class="signal">{_e(s.kind)} {s.score:.2f} · matches {links or "—"}{more}</div>')
    return "".join(parts)


def _trace_html(report: TraceReport, k: int) -> str:
    anchor = f"trace-{k}"
    n = len(report.steps)
    facts = [f"{n} steps", f"{report.wasted} flagged"]
    if report.first_warn is not None:
        facts.append(f"first warning at step {report.first_warn}")
    if report.first_stop is not None:
        facts.append(f"stop at step {report.first_stop}")
    if report.source:
        facts.append(f"from {_e(report.source)}")
    label = ""
    if report.outcome:
        lab = report.label or {}
        truth = (f"loop from step {lab.get('onset')} ({_e(lab.get('kind') or '?')})" if lab.get("loop") else "no loop")
        label = (f' · label: {truth} <span class="badge {report.outcome.replace(" ", "-")}">'
                 f'{_e(report.outcome)}</span>')
    out = [f'<section class="trace" id="{anchor}" data-trace-id="{_e(report.id)}">',
           f'<h2>{_e(report.id)}</h2><p class="facts">{" · ".join(facts)}{label}'
           f'<label class="filter"><input type="checkbox" class="only-flagged"> only flagged steps</label></p>']
    if n:
        pooled = f" (pooled: {report.bin_size} steps per cell, brightest pair shown)" if report.bin_size > 1 else ""
        out.append('<div class="maps">')
        for kind, matrix, caption in (
                ("call", report.call_similarity, "Call similarity: cosine of the calls' embeddings"),
                ("result", report.result_similarity, "Result similarity: word overlap of the results")):
            out.append(f'<figure>{_heatmap_svg(matrix, report, anchor, kind)}<figcaption>{caption}{pooled}: '
                       f'from {colour_floor(matrix):.2f} (the median pair; dark) to 1 (yellow). Step i down, step j '
                       f'across; ticks: <b style="color:#f0a000">warn</b>, <b style="color:#c62828">stop</b>. '
                       f'Hover for values, click to jump to the step.</figcaption><div class="hover"></div></figure>')
        out.append("</div>")
    rows = ['<div class="timeline"><table><thead><tr><th>step</th><th>tool</th><th>input</th><th>result</th>'
            '<th>verdict</th><th>signals · earlier steps matched</th></tr></thead><tbody>']
    for s in report.steps:
        v = s.verdict
        classes = [v.action] + (["error"] if s.error else [])
        err = f'<span class="badge err">✗ {_e(s.error)}</span> ' if s.error else ""
        badge = f'<span class="badge {v.action}">{v.action.upper()}</span>' if v.action != "allow" else ""
        message = f"<details><summary>message</summary>{_e(v.message)}</details>" if v.message else ""
        if v.action == "stop" and v.step != report.first_stop and not v.signals:
            badge, message = '<span class="legend">after the stop</span>', ""
        rows.append(
            f'<tr id="{anchor}-s{s.index}" class="{" ".join(classes)}" data-step="{s.index}" data-action="{v.action}">'
            f'<td class="num">{s.index}</td><td>{_e(s.tool)}</td><td class="input"><code>{_e(s.input_text)}</code></td>'
            f'<td class="result">{err}<span class="digest" style="background:{_digest_colour(s.result_digest)}" '
            f'title="digest of the normalized result: equal results, equal colour">{s.result_digest}</span> '
            f'{_e(s.result_text)} <span class="legend">({s.result_lines} lines, {s.result_chars} chars)</span></td>'
            f'<td>{badge}{message}</td><td>{_signals_html(v, anchor)}</td></tr>')
    rows.append("</tbody></table></div>")
    out.extend(rows)
    out.append("</section>")
    return "\n".join(out)


def _summary_html(reports: Sequence[TraceReport]) -> str:
    order = sorted(range(len(reports)), key=lambda k: (-reports[k].wasted, -len(reports[k].steps), k))
    labeled = any(r.outcome for r in reports)
    head = ('<th>trace</th><th>steps</th><th title="warnings, the stop and every step after it">steps wasted</th>'
            '<th>first warn</th><th>first stop</th>')
    head += "<th>label</th><th>outcome</th>" if labeled else ""
    rows = [f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>']
    for k in order:
        r = reports[k]
        cells = (f'<td><a href="#trace-{k}">{_e(r.id)}</a></td><td class="num">{len(r.steps)}</td>'
                 f'<td class="num">{r.wasted}</td><td class="num">{"" if r.first_warn is None else r.first_warn}</td>'
                 f'<td class="num">{"" if r.first_stop is None else r.first_stop}</td>')
        if labeled:
            lab = r.label or {}
            truth = "" if not r.outcome else (f"loop@{lab.get('onset')}" if lab.get("loop") else "no loop")
            badge = (f'<span class="badge {r.outcome.replace(" ", "-")}">{_e(r.outcome)}</span>' if r.outcome else "")
            cells += f"<td>{_e(truth)}</td><td>{badge}</td>"
        rows.append(f'<tr data-trace-id="{_e(r.id)}">{cells}</tr>')
    rows.append("</tbody></table>")
    return "\n".join(rows)


def render_html(reports: Sequence[TraceReport], title: str = "semloop report", config: Config | None = None) -> str:
    """The whole page: header, summary table (sorted by steps wasted), one section per trace."""
    from . import __version__

    config = config or Config()
    flagged = sum(bool(r.events) for r in reports)
    outcomes = [r.outcome for r in reports if r.outcome]
    tally = ""
    if outcomes:
        counts = {o: outcomes.count(o) for o in ("caught", "missed", "false alarm", "quiet") if o in outcomes}
        tally = " · labeled: " + ", ".join(f"{c} {o}" for o, c in counts.items())
    sub = (f"{len(reports)} trace(s), {flagged} flagged{tally} · detector {_e(config.detector)}, "
           f"call_threshold {config.call_threshold:g}, result_threshold {config.result_threshold:g} "
           f"· semloop {__version__}")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
             f"<header><h1>{_e(title)}</h1><p>{sub}</p></header><main>"]
    if len(reports) > 1:
        parts += ["<h2>Traces, most steps wasted first</h2>", _summary_html(reports)]
    parts += [_trace_html(r, k) for k, r in enumerate(reports)]
    if not reports:
        parts.append("<p>No traces.</p>")
    parts += [f"</main><script>{_JS}</script></body></html>"]
    return "\n".join(parts)


# -- PNG figures (matplotlib) -----------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "trace"


def pyplot():
    """matplotlib.pyplot on the Agg backend, or an ImportError saying what to install."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"plots need matplotlib: {install_hint('bench')}") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def write_pngs(reports: Sequence[TraceReport], directory: str | Path) -> list[Path]:
    """One PNG per trace with both heatmaps side by side; warn and stop steps marked on the axes."""
    plt = pyplot()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written, used = [], set()
    for r in reports:
        if not r.steps:
            continue
        name = _slug(r.id)
        while name in used:
            name += "_"
        used.add(name)
        n = len(r.steps)
        fig, axes = plt.subplots(1, 2, figsize=(10.5, 5), constrained_layout=True)
        for ax, matrix, title in ((axes[0], r.call_similarity, "calls (embedding cosine)"),
                                  (axes[1], r.result_similarity, "results (word overlap)")):
            extent = (-0.5, matrix.shape[0] * r.bin_size - 0.5, matrix.shape[0] * r.bin_size - 0.5, -0.5)
            floor = colour_floor(matrix)
            im = ax.imshow(matrix, cmap="viridis", vmin=floor, vmax=1, interpolation="nearest", extent=extent)
            fig.colorbar(im, ax=ax, shrink=0.8)
            for v in r.events:
                colour = "#c62828" if v.action == "stop" else "#f0a000"
                ax.plot([v.step], [-0.02 * n - 0.5], marker="v", color=colour, ms=5, clip_on=False)
            ax.set_xlim(extent[0], extent[1])
            ax.set_ylim(extent[2], extent[3])
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.yaxis.get_major_locator().set_params(integer=True)
            ax.set_title(title, fontsize=11, pad=16)
            ax.set_xlabel("step")
            ax.set_ylabel("step")
        warn, stop = r.first_warn, r.first_stop
        flags = f"first warn {warn}" if warn is not None else "no warning"
        flags += f", stop {stop}" if stop is not None else ""
        fig.suptitle(f"{r.id}: {n} steps, {flags}", fontsize=12)
        path = directory / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.15)
        plt.close(fig)
        written.append(path)
    return written


# -- entry point -----------------------------------------------------------------------------


def build_reports(paths: Iterable[str | Path], config: Config | None = None, trace_ids: Sequence[str] = (),
                  format: str = "auto", skip_invalid: bool = False, on_skip=None,
                  per_agent: bool = False, redact: bool = True) -> list[TraceReport]:
    """Read every trace in `paths` (any format `semloop scan` reads), keep those in `trace_ids`
    (all when empty), and analyse them with one shared embedder. `redact`: secret-shaped text in
    the steps is replaced first (`semloop.redact.redact_trace`), so the page never shows it."""
    from .embeddings import load_embedder
    from .traces import iter_traces

    config = config or Config()
    paths = list(paths)
    wanted = set(trace_ids)
    traces = [(trace, path) for path in paths for trace in iter_traces(path, format, skip_invalid, on_skip, per_agent)
              if not wanted or trace.id in wanted]  # every input read (and checked) before any work
    missing = wanted - {trace.id for trace, _ in traces}
    if redact:
        from .redact import redact_trace

        traces = [(redact_trace(trace), path) for trace, path in traces]
    if missing:
        raise ValueError(f"no trace with id {', '.join(sorted(map(repr, missing)))} in {', '.join(map(str, paths))}")
    embedder = load_embedder(config.embedding, config.model_path) if config.detector == "semantic" else None
    return [analyze_trace(trace, config, embedder, source=str(path)) for trace, path in traces]

