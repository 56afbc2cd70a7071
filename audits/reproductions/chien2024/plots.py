"""Figure 3 of seed 000: the figure of a panel, drawn from a run's rows or a stored JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from audits.reproductions.chien2024.panels import COUNTED

# ----------------------------------------------------------------------------------------------
# The figure of a panel.


PLANNED = "not run"   # over both budgets: only the engine's schedule is known


def _cost(row: dict[str, Any]) -> float | None:
    """Unlearning epochs of a row: counted when the mechanism ran, else the schedule's."""
    if row.get("status") in ("run", COUNTED):
        return row["unlearning_epochs"]
    return row.get("unlearning_epochs_planned")


def _kind(row: dict[str, Any]) -> str:
    return {"run": "", COUNTED: " (counted, not audited)"}.get(row.get("status"), " (planned)")


def panel_figure(panel: str, rows: list[dict[str, Any]]):
    """The matplotlib figure of one panel from its rows (a run's, or a stored JSON's).

    Audited points are filled markers; cost panels (b, d) also draw points counted without an
    audit (open markers, dashed) and points known only from the schedule (crosses, dotted),
    each labelled as such. Accuracy panels (a, c) draw audited points with their standard
    deviation over trials on the [0, 1] accuracy scale and list the points they cannot draw.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.4), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot(1, 1, 1)
    style = {"run": {"marker": "o", "linestyle": "-"},
             COUNTED: {"marker": "o", "linestyle": "--", "markerfacecolor": "none"},
             PLANNED: {"marker": "x", "linestyle": ":"}}
    audited = [r for r in rows if r.get("status") == "run"]
    costed = [r for r in rows if r.get("status") in style and _cost(r) is not None]
    drawn = audited if panel in "ac" else costed
    if panel == "a":
        for label in dict.fromkeys(r["label"] for r in audited):
            pts = sorted((r["epsilon"], r["accuracy_mean"], r["accuracy_std"] or 0.0)
                         for r in audited if r["label"] == label)
            x, y, e = zip(*pts, strict=True)
            ax.errorbar(x, y, yerr=e, marker="o", label=label, capsize=3)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test accuracy (unlearned)")
        ax.set_title("(a) one removal, one unlearning epoch")
    elif panel == "b":
        for r in costed:
            per = np.array(_per_request_epochs(r), dtype=float)
            size = 1 if r["method"] != "langevin" else int(r["label"].split("S=")[1].rstrip(")"))
            steps = np.arange(1, per.size + 1) * size
            ax.step(steps, np.cumsum(per), where="post", label=r["label"] + _kind(r),
                    linestyle=style[r["status"]]["linestyle"])
            ax.plot(steps[-1:], np.cumsum(per)[-1:], color=ax.lines[-1].get_color(),
                    **{k: v for k, v in style[r["status"]].items() if k != "linestyle"})
        ax.set_yscale("log")
        ax.set_xlabel("points removed")
        ax.set_ylabel("accumulated unlearning epochs")
        ax.set_title("(b) sequential removals at (1, 1/n)")
    else:
        for batch in dict.fromkeys(r["batch"] for r in drawn):
            here = [r for r in drawn if r["batch"] == batch]
            label = here[0].get("label") or f"b={'n' if batch == 'full' else batch}"
            if panel == "c":
                pts = sorted((r["sigma"], r["accuracy_mean"], r["accuracy_std"] or 0.0)
                             for r in here)
                x, y, e = zip(*pts, strict=True)
                ax.errorbar(x, y, yerr=e, marker="o", capsize=3, label=label)
                continue
            color = None
            for status in ("run", COUNTED, PLANNED):
                pts = sorted((r["sigma"], _cost(r)) for r in here if r.get("status") == status)
                if not pts:
                    continue
                x, y = zip(*pts, strict=True)
                line = ax.plot(x, y, color=color, label=label + _kind({"status": status}),
                               **style[status])
                color = line[0].get_color()
            # Retraining after every request: counted where the run counted it, else planned.
            pts = sorted((r["sigma"], r.get("retraining_epochs", r.get("retraining_epochs_planned")))
                         for r in here)
            pts = [p for p in pts if p[1] is not None]
            if pts:
                x, y = zip(*pts, strict=True)
                planned = any("retraining_epochs" not in r for r in here)
                # A marker on every point: one sigma still shows the retraining cost.
                ax.plot(x, y, linestyle="-.", marker="s", markersize=7, color=color,
                        markerfacecolor="none",
                        label=f"retrain, {label}" + (" (planned)" if planned else ""))
        if panel == "c":
            # Points certified but not audited have no accuracy: marked on a strip at the foot.
            from matplotlib.transforms import blended_transform_factory

            foot = blended_transform_factory(ax.transData, ax.transAxes)
            unaudited = [r for r in costed if r.get("status") != "run" and "sigma" in r]
            for level, batch in enumerate(dict.fromkeys(r["batch"] for r in unaudited)):
                here = [r for r in unaudited if r["batch"] == batch]
                ax.plot([r["sigma"] for r in here], [0.04 + 0.04 * level] * len(here),
                        transform=foot, marker="x", linestyle="none",
                        label=f"{here[0].get('label', batch)}: certified, not audited (no accuracy)")
            drawn = drawn + unaudited
        ax.set_xscale("log")
        if panel == "d":
            ax.set_yscale("log")
        ax.set_xlabel("sigma")
        ax.set_ylabel("test accuracy (unlearned)" if panel == "c"
                      else "accumulated epochs (retraining: squares)")
        ax.set_title(f"({panel}) {len(audited)} audited of {len(rows)} points at (0.01, 1/n)")
    if panel in "ac":
        ax.set_ylim(0.0, 1.02)
    undrawn = [r for r in rows if not any(r is d for d in drawn)]
    if undrawn:
        # Say what is absent and why, so that a missing curve is never read as a zero.
        counts: dict[str, int] = {}
        for r in undrawn:
            name = r.get("label") or f"b={'n' if r.get('batch') == 'full' else r.get('batch')}"
            key = f"{name}: {r.get('status')}"
            counts[key] = counts.get(key, 0) + 1
        lines = [k + (f" ({v} points)" if v > 1 else "") for k, v in counts.items()]
        if len(lines) > 5:
            lines = [*lines[:4], f"... and {len(lines) - 4} more"]
        ax.text(0.02, 0.97, "not drawn" + (" (no accuracy without an audit)" if panel in "ac"
                                            else "") + ":\n" + "\n".join(lines),
                transform=ax.transAxes, fontsize=7, va="top")
    if drawn:
        # Outside the axes, so that no legend hides a curve.
        figure.set_size_inches(9.0, 4.4)
        figure.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize=7)
    return figure


def replot(json_path: str | Path, out_dir: str | Path) -> Path:
    """Redraw a stored panel result (its JSON) as a PNG in ``out_dir``, without rerunning.

    Rows stored without a planned retraining cost get it from the stored schedule (T epochs of
    the stored burn-in per request), as a run now records it.
    """
    path = Path(json_path)
    result = json.loads(path.read_text())
    panel = result["reproduction"].split(":fig3")[1][0]
    burn_in = result["setting"]["burn_in_epochs"]
    rows = []
    for row in result["rows"]:
        row = dict(row)
        if panel in "cd" and "epochs_per_request" in row and str(row.get("batch")) in burn_in:
            row.setdefault("retraining_epochs_planned",
                           burn_in[str(row["batch"])] * len(row["epochs_per_request"]))
        rows.append(row)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = out / (path.stem + ".png")
    panel_figure(panel, rows).savefig(png, format="png", metadata={"Software": None})
    return png


def _per_request_epochs(row: dict[str, Any]) -> list[float]:
    if "epochs_per_request" in row:
        return row["epochs_per_request"]
    its = row["certificate_inputs"].get("iterations_per_request")
    return list(its) if its is not None else [row["unlearning_epochs"]]
