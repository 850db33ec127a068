"""The evaluation report as one self-contained HTML page (inline CSS, plots as inline base64 PNGs).

Everything is drawn from ``report.json``'s content (see ``docs/EVAL_REPORT.md``) plus the simplified
strokes of the example drawings of the confusion pairs. Plots use matplotlib's Agg backend.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from model.raster import RasterSpec, rasterize
from training.eval_metrics import table_name

COLOURS = ("#2563eb", "#ea580c")  # model A, model B
LOWER_IS_BETTER = {"ece"}
NEUTRAL = {"mean_confidence"}
EXAMPLE_SPEC = RasterSpec(size=56, line_width=1.4, margin=3.0)
HEADLINE_LABELS = {
    "top1": "Top-1",
    "top3": "Top-3",
    "map3": "MAP@3",
    "kontour_top1": "Kontour top-1",
    "kontour_top3": "Kontour top-3",
    "half_top1": "Half the strokes, top-1",
    "kontour_deck_top1": "Kontour deck words, Kontour style, top-1",
    "kontour_deck_top3": "Kontour deck words, Kontour style, top-3",
    "pictomania_top1": "Pictomania table (6 cards × 7 related words), top-1",
    "ece": "Calibration error (ECE)",
    "mean_confidence": "Mean confidence",
    "mean_true_probability": "Mean probability of the answer",
}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1f2937}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.2rem;margin:.2rem 0 .6rem;border-bottom:2px solid #e5e7eb}
section{background:#fff;border-radius:10px;padding:16px 20px;margin:16px 0;box-shadow:0 1px 3px #0001}
.sub{color:#6b7280;font-size:.9rem}.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px}
.card{background:#f9fafb;border:1px solid #e5e7eb;border-radius:8px;padding:10px 14px}
.card .v{font-size:1.8rem;font-weight:650}.card .k{color:#6b7280;font-size:.85rem}
.card .d{font-size:.95rem;font-weight:600}
table{border-collapse:collapse;width:100%;font-size:.92rem}td,th{padding:5px 8px;border-bottom:1px solid #eee;
text-align:left;vertical-align:middle}th{background:#f9fafb}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.up{color:#15803d;font-weight:600}.down{color:#b91c1c;font-weight:600}.same{color:#6b7280}
img.plot{max-width:100%;height:auto}img.ex{height:44px;image-rendering:auto}
.warn{background:#fff7ed;border-left:4px solid #ea580c;padding:8px 12px;border-radius:4px}
.ok{background:#f0fdf4;border-left:4px solid #16a34a;padding:8px 12px;border-radius:4px}
code{background:#f3f4f6;padding:1px 4px;border-radius:3px;font-size:.85rem}
"""


# -- helpers ----------------------------------------------------------------------------------------


def _png(fig: plt.Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(data: str, alt: str, cls: str = "plot") -> str:
    return f'<img class="{cls}" alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def _fmt(key: str, value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if key in LOWER_IS_BETTER | NEUTRAL else _pct(value)


def _delta_html(key: str, delta: float | None) -> str:
    if delta is None:
        return '<span class="same">—</span>'
    better = -delta if key in LOWER_IS_BETTER else delta
    cls = "same" if abs(delta) < 5e-4 or key in NEUTRAL else ("up" if better > 0 else "down")
    text = f"{delta:+.3f}" if key in LOWER_IS_BETTER | NEUTRAL else f"{100 * delta:+.1f} pts"
    return f'<span class="{cls}">{text}</span>'


def _names(report: dict) -> list[str]:
    return [str(m.get("name", f"model {i + 1}")) for i, m in enumerate(report["models"])]


# -- plots ------------------------------------------------------------------------------------------


def strokes_curve_figure(report: dict[str, Any], width: float = 6.4, height: float = 3.6) -> plt.Figure:
    """Top-1 / top-3 against the fraction of strokes drawn, one line pair per model."""
    fig, ax = plt.subplots(figsize=(width, height))
    for model, colour in zip(report["models"], COLOURS, strict=False):
        curve = model["metrics"]["strokes_curve"]
        xs = [100 * p["fraction"] for p in curve]
        name = model.get("name", "model")
        ax.plot(xs, [100 * p["top1"] for p in curve], "-o", color=colour, label=f"{name} top-1", ms=4)
        ax.plot(xs, [100 * p["top3"] for p in curve], "--", color=colour, alpha=0.6, label=f"{name} top-3")
        kontour = model["metrics"]["headline"]["kontour_top1"]
        ax.axhline(100 * kontour, color=colour, lw=0.8, ls=":", alpha=0.8)
        ax.annotate(
            f"Kontour style {100 * kontour:.0f} %", (12, 100 * kontour), color=colour, fontsize=7, va="bottom"
        )
    ax.set_xlabel("strokes drawn (% of the drawing's strokes)")
    ax.set_ylabel("accuracy (%)")
    ax.set_xlim(5, 102)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Accuracy as the drawing progresses", fontsize=10)
    return fig


def strokes_curve_png(report: dict[str, Any]) -> bytes:
    """The strokes curve as PNG bytes (small enough for a README)."""
    buffer = io.BytesIO()
    fig = strokes_curve_figure(report)
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def _reliability(report: dict[str, Any]) -> str:
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(5.6, 5.2), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    count = len(report["models"])
    for i, (model, colour) in enumerate(zip(report["models"], COLOURS, strict=False)):
        calib = model["metrics"]["calibration"]
        bins = calib["bins"]
        width = (bins[0]["high"] - bins[0]["low"]) / count
        lows = np.array([b["low"] for b in bins]) + i * width
        accs = [b["accuracy"] or 0 for b in bins]
        name = f"{model.get('name', 'model')} (ECE {calib['ece']:.3f})"
        top.bar(lows, accs, width=width, align="edge", color=colour, alpha=0.75, label=name)
        bottom.bar(lows, [b["count"] for b in bins], width=width, align="edge", color=colour, alpha=0.75)
    top.plot([0, 1], [0, 1], color="#111827", lw=1, ls="--", label="perfect calibration")
    top.set_ylabel("accuracy in bin")
    top.set_ylim(0, 1)
    top.legend(fontsize=8, loc="upper left")
    top.set_title("Reliability: is a 70 % guess right 70 % of the time?", fontsize=10)
    bottom.set_xlabel("confidence of the top guess")
    bottom.set_ylabel("drawings")
    bottom.set_xlim(0, 1)
    return _img(_png(fig), "reliability diagram")


def _category_bars(report: dict[str, Any], count: int = 20) -> str:
    metrics = report["models"][0]["metrics"]["per_category"]
    # ties (common with few drawings per category) go to the better-attested category
    ranked = sorted(metrics.items(), key=lambda item: (item[1]["top1"], item[1]["top3"], -item[1]["count"]))
    worst = ranked[:count]
    rest = sorted(ranked[count:], key=lambda item: (-item[1]["top1"], -item[1]["top3"], -item[1]["count"]))
    best = rest[:count]
    panels = [("worst", worst)] + ([("best", best)] if best else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(5.4 * len(panels), 0.24 * max(len(worst), 4) + 1.2))
    axes = np.atleast_1d(axes)
    names = _names(report)
    other = report["models"][1]["metrics"]["per_category"] if len(report["models"]) > 1 else None
    for ax, (title, rows) in zip(axes, panels, strict=True):
        rows = rows[::-1]
        ys = np.arange(len(rows))
        top1 = [100 * stats["top1"] for _, stats in rows]
        if other is None:
            top3 = [100 * stats["top3"] for _, stats in rows]
            ax.barh(ys, top3, color=COLOURS[0], alpha=0.25, height=0.75, label="top-3")
            ax.barh(ys, top1, color=COLOURS[0], height=0.75, label="top-1")
            for y, v1, v3 in zip(ys, top1, top3, strict=True):
                inside = v3 > 75
                ax.text(v3 + (-1.5 if inside else 1.5), y, f"{v1:.0f} / {v3:.0f} %", va="center",
                        ha="right" if inside else "left", fontsize=6.5,
                        color="white" if inside and v1 > 75 else "#111827")  # fmt: skip
            ax.set_yticks(ys, [f"{word} ({stats['count']})" for word, stats in rows], fontsize=7)
        else:
            theirs = [100 * other[word]["top1"] for word, _ in rows]
            ax.barh(ys + 0.2, top1, color=COLOURS[0], height=0.4, label=f"{names[0]} top-1")
            ax.barh(ys - 0.2, theirs, color=COLOURS[1], height=0.4, label=f"{names[1]} top-1")
            ax.set_yticks(ys, [f"{word} ({stats['count']})" for word, stats in rows], fontsize=7)
        ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.04), ncols=2, frameon=False)
        ax.set_xlim(0, 100)
        ax.set_xlabel("accuracy (%)")
        ax.set_title(f"{title} {len(rows)} categories (drawings)", fontsize=10, loc="right")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _img(_png(fig), "per-category accuracy")


def _changes_bars(comparison: dict[str, Any], names: Sequence[str]) -> str:
    rows = comparison["categories_changed_most"]
    if not rows:
        return ""
    fig, ax = plt.subplots(figsize=(6.4, 0.26 * len(rows) + 1))
    ys = np.arange(len(rows))[::-1]
    deltas = [100 * row["delta"] for row in rows]
    ax.barh(ys, deltas, color=["#16a34a" if d > 0 else "#dc2626" for d in deltas])
    ax.set_yticks(ys, [f"{row['category']} ({row['count']})" for row in rows], fontsize=7)
    ax.axvline(0, color="#111827", lw=0.8)
    ax.set_xlabel(f"top-1 change, {names[1]} − {names[0]} (points)")
    ax.set_title("Categories that changed most", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return _img(_png(fig), "categories that changed most")


def _latency(report: dict[str, Any]) -> str:
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    for model, colour in zip(report["models"], COLOURS, strict=False):
        values = model["metrics"]["latency"]["histogram_ms"]
        if values:
            ax.hist(values, bins=40, color=colour, alpha=0.6, label=model.get("name", "model"))
            p50 = model["metrics"]["latency"]["batch1_total_ms"]["p50"]
            ax.axvline(p50, color=colour, ls="--", lw=1)
    ax.set_xlabel("milliseconds per drawing (preprocess + inference, batch 1)")
    ax.set_ylabel("drawings")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("Latency distribution", fontsize=10)
    return _img(_png(fig), "latency histogram")


def examples_png(drawings: Sequence[Sequence[np.ndarray]], spec: RasterSpec = EXAMPLE_SPEC) -> str:
    """Small drawings side by side, dark ink on white, as a base64 PNG."""
    gap = np.ones((spec.size, 3))
    tiles = []
    for strokes in drawings:
        tiles += [1.0 - rasterize(list(strokes), spec)[0], gap]
    buffer = io.BytesIO()
    plt.imsave(buffer, np.concatenate(tiles[:-1], axis=1), cmap="gray", vmin=0, vmax=1, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


# -- sections ---------------------------------------------------------------------------------------


def _headline(report: dict[str, Any]) -> str:
    names = _names(report)
    models = report["models"]
    heads = [m["metrics"]["headline"] for m in models]
    table = table_name(heads[0])
    table_key = f"{table}_top1"
    labels = {
        **HEADLINE_LABELS,
        table_key: f"Table of {table[5:]}, top-1",
        f"{table}_expected": f"Table of {table[5:]}, top-1, exact mean over every table",
    }
    main_keys = ["top1", "top3", "map3", "kontour_top1", "kontour_deck_top1", table_key, "pictomania_top1"]
    main_keys.append("ece")
    cards = []
    for key in main_keys:
        delta = ""
        if len(models) == 2:
            delta = f'<div class="d">{_delta_html(key, report["comparison"]["headline"][key]["delta"])}</div>'
        value = _fmt(key, heads[-1][key])
        cards.append(
            f'<div class="card"><div class="k">{labels[key]}</div><div class="v">{value}</div>{delta}</div>'
        )
    rows = []
    for key in [k for k in heads[0] if k != "drawings"]:
        cells = "".join(f'<td class="n">{_fmt(key, h[key])}</td>' for h in heads)
        if len(models) == 2:
            cells += f'<td class="n">{_delta_html(key, report["comparison"]["headline"][key]["delta"])}</td>'
        rows.append(f"<tr><td>{labels.get(key, key)}</td>{cells}</tr>")
    head_cells = "".join(f'<th class="n">{html.escape(n)}</th>' for n in names)
    if len(models) == 2:
        head_cells += '<th class="n">difference</th>'
    shown = names[-1] if len(models) == 2 else names[0]
    note = f'<p class="sub">Cards show <b>{html.escape(shown)}</b>' + (
        f", coloured against <b>{html.escape(names[0])}</b>.</p>" if len(models) == 2 else ".</p>"
    )
    return (
        f'<section id="headline"><h2>Headline</h2>{note}<div class="cards">{"".join(cards)}</div>'
        f'<table style="margin-top:14px"><tr><th>metric</th>{head_cells}</tr>{"".join(rows)}</table>'
        "</section>"
    )


def _agreement(report: dict[str, Any]) -> str:
    if report["comparison"] is None:
        return ""
    names = [html.escape(n) for n in _names(report)]
    agree = report["comparison"]["agreement"]
    p = agree["mcnemar_p"]
    verdict = (
        "—"
        if p is None
        else (f"p = {p:.3g}" + (" (significant at 5 %)" if p < 0.05 else " (not significant)"))
    )
    return (
        '<section id="agreement"><h2>Where the two models disagree</h2><table>'
        f"<tr><td>both right</td><td class='n'>{agree['both_right']}</td></tr>"
        f"<tr><td>only {names[0]} right</td><td class='n'>{agree['only_a_right']}</td></tr>"
        f"<tr><td>only {names[1]} right</td><td class='n'>{agree['only_b_right']}</td></tr>"
        f"<tr><td>both wrong</td><td class='n'>{agree['both_wrong']}</td></tr>"
        f"<tr><td>McNemar test on top-1</td><td class='n'>{verdict}</td></tr></table>"
        f"{_changes_bars(report['comparison'], _names(report))}</section>"
    )


def _confusions(report: dict[str, Any], examples: dict[str, list[np.ndarray]]) -> str:
    parts = ['<section id="confusions"><h2>Most confused pairs</h2>']
    for model in report["models"]:
        pairs = model["metrics"]["confused_pairs"]
        title = (
            f"<h3>{html.escape(str(model.get('name', 'model')))}</h3>" if len(report["models"]) > 1 else ""
        )
        if not pairs:
            parts.append(f'{title}<p class="ok">No top-1 mistakes.</p>')
            continue
        rows = []
        for pair in pairs:
            drawings = [examples[key] for key in pair["examples"] if key in examples]
            pictures = _img(examples_png(drawings), "examples", "ex") if drawings else ""
            rows.append(
                f"<tr><td><b>{html.escape(pair['true'])}</b></td><td>→ {html.escape(pair['predicted'])}</td>"
                f"<td class='n'>{pair['count']}</td><td class='n'>{_pct(pair['share_of_true'])}</td>"
                f"<td>{pictures}</td></tr>"
            )
        parts.append(
            f"{title}<p class='sub'>A drawing of the first category guessed as the second (top-1), "
            "with example drawings.</p><table><tr><th>drawn</th><th>guessed</th><th class='n'>times</th>"
            f"<th class='n'>of that category</th><th>examples</th></tr>{''.join(rows)}</table>"
        )
    parts.append("</section>")
    return "".join(parts)


def _latency_section(report: dict[str, Any]) -> str:
    rows = []
    for model in report["models"]:
        lat = model["metrics"]["latency"]
        total, prep, infer = lat["batch1_total_ms"], lat["batch1_preprocess_ms"], lat["batch1_inference_ms"]
        thr = lat["throughput"]
        ips = thr["inference_images_per_s"]

        def ms(value: float | None) -> str:
            return "—" if value is None else f"{value:.2f}"

        rows.append(
            f"<tr><td>{html.escape(str(model.get('name', 'model')))}</td>"
            f"<td class='n'>{ms(total['p50'])}</td>"
            f"<td class='n'>{ms(total['p90'])}</td><td class='n'>{ms(total['p99'])}</td>"
            f"<td class='n'>{ms(prep['p50'])} + {ms(infer['p50'])}</td>"
            f"<td class='n'>{'—' if ips is None else f'{ips:,.0f}'}</td>"
            f"<td class='n'>{thr['pipeline_drawings_per_s']:,.0f}</td></tr>"
        )
    lat0 = report["models"][0]["metrics"]["latency"]
    thr = lat0["throughput"]
    return (
        '<section id="latency"><h2>Latency</h2><table><tr><th>model</th><th class="n">p50 ms</th>'
        '<th class="n">p90 ms</th><th class="n">p99 ms</th><th class="n">p50 preprocess + inference</th>'
        f'<th class="n">images/s at batch {thr["batch_size"]}</th>'
        f'<th class="n">drawings/s, whole run</th></tr>{"".join(rows)}</table>'
        f"<p class='sub'>Batch 1 on {lat0['batch1_total_ms']['samples']} "
        f"drawings. The whole run classifies {thr['images_per_drawing']:.1f} images per drawing (each "
        f"distinct stroke prefix once, plus the Kontour style), preprocessed by {thr['workers']} "
        f"worker process(es).</p>{_load_note(report)}{_latency(report)}</section>"
    )


def _load_note(report: dict[str, Any]) -> str:
    env = report.get("environment") or {}
    loads = [v for v in (env.get("load_average_start"), env.get("load_average_end")) if v is not None]
    cpus = env.get("cpus") or 0
    if loads and cpus and max(loads) > cpus:
        return (
            f'<p class="warn">The machine was busy (load average up to {max(loads):.1f} on {cpus} CPUs, '
            f"{env.get('torch_threads')} torch threads): timings are pessimistic and only comparable "
            "with runs on an equally loaded machine.</p>"
        )
    return ""


def _data_section(report: dict[str, Any]) -> str:
    data = report["data"]
    problems = data["files_with_problems"]
    if data["corrupt_records"] or data["rejected_drawings"] or data["duplicates"]:
        status = (
            f'<p class="warn">{data["corrupt_records"]} corrupt records skipped, '
            f"{data['rejected_drawings']} drawings rejected by validation, "
            f"{data['duplicates']} duplicates dropped (per file below).</p>"
        )
    else:
        status = '<p class="ok">No corrupt record, no rejected drawing, no duplicate.</p>'
    rows = "".join(
        f"<tr><td><code>{html.escape(f['path'])}</code></td><td class='n'>{f['records']}</td>"
        f"<td class='n'>{f['corrupt']}</td><td class='n'>{f['rejected']}</td>"
        f"<td class='n'>{f['duplicates']}</td></tr>"
        for f in problems
    )
    table = (
        "<table><tr><th>file</th><th class='n'>records</th><th class='n'>corrupt</th>"
        f"<th class='n'>rejected</th><th class='n'>duplicates</th></tr>{rows}</table>"
        if problems
        else ""
    )
    skipped = ""
    if data["skipped_unknown"]:
        listed = ", ".join(f"{html.escape(w)} ({n})" for w, n in data["skipped_unknown"].items())
        skipped = f'<p class="warn">Skipped as unknown to the model: {listed}.</p>'
    models = "".join(
        f"<tr><td>{html.escape(str(m.get('name')))}</td>"
        f"<td><code>{html.escape(str(m.get('path', '—')))}</code></td><td class='n'>{m.get('classes')}</td>"
        f"<td><code>{str(m.get('fingerprint', ''))[:16]}</code></td>"
        f"<td><code>{str(m.get('file_sha256') or '—')[:16]}</code></td></tr>"
        for m in report["models"]
    )
    return (
        f'<section id="data"><h2>Data and models</h2><p><code>{html.escape(data["root"])}</code>, split '
        f"<b>{html.escape(data['split'])}</b>: {data['evaluated']} drawings evaluated in "
        f"{data['categories']} categories, from {data['files']} files.</p>{status}{skipped}{table}"
        "<table style='margin-top:12px'><tr><th>model</th><th>path</th><th class='n'>classes</th>"
        f"<th>fingerprint</th><th>file sha256</th></tr>{models}</table></section>"
    )


def _category_note(report: dict[str, Any]) -> str:
    counts = sorted(report["data"]["per_category"].values())
    median = counts[len(counts) // 2] if counts else 0
    if len(report["models"]) == 2:
        note = f"Top-1 accuracy of both models; drawings per category in brackets (median {median})."
    else:
        note = (
            f"Top-1 (solid) and top-3 (light) accuracy; drawings per category in brackets (median {median})."
        )
    if median < 20:
        note += " With this few drawings a category's accuracy moves in big steps: read trends, not ranks."
    return note


def render_html(report: dict[str, Any], examples: dict[str, list[np.ndarray]] | None = None) -> str:
    """The whole report page."""
    examples = examples or {}
    names = _names(report)
    title = " vs ".join(names) if len(names) == 2 else names[0]
    data = report["data"]
    curve_note = (
        "What the live guesser sees while the drawing is made: accuracy after the first 10 %, 20 % … of "
        "the strokes (top-1 solid, top-3 dashed); the dotted line is the Kontour style (≤ 15 lines)."
    )
    body = [
        f"<h1>Griffon evaluation — {html.escape(title)}</h1>",
        f'<p class="sub">{data["evaluated"]} drawings, {data["categories"]} categories, split '
        f"{html.escape(data['split'])} · {html.escape(report['created'])} · "
        f"{html.escape(report['schema'])}</p>",
        _headline(report),
        f'<section id="strokes-curve"><h2>Accuracy vs strokes drawn</h2><p class="sub">{curve_note}</p>'
        f"{_img(_png(strokes_curve_figure(report, 8, 4)), 'strokes curve')}</section>",
        _agreement(report),
        _confusions(report, examples),
        f'<section id="calibration"><h2>Calibration</h2>{_reliability(report)}</section>',
        f'<section id="categories"><h2>Per category</h2><p class="sub">{_category_note(report)}</p>'
        f"{_category_bars(report)}</section>",
        _latency_section(report),
        _data_section(report),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>Griffon evaluation — {html.escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>"
    )
