"""``--plot``: latency per trial, the incumbent's step line, rejected and failed trials marked."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from amkspec.ir.atomic import write_atomic
from amkspec.search.loop import Trial


def plot_trials(trials: list[Trial], path: str | Path, title: str = "") -> None:
    """Draw the search into a PNG (matplotlib, the ``search`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    ok = [(t.trial, t.verdict.latency_us) for t in trials if t.verdict.latency_us is not None]
    kept = [(t.trial, t.verdict.latency_us) for t in trials if t.status == "kept" and t.verdict.latency_us]
    if ok:
        ax.scatter([x for x, _ in ok], [y for _, y in ok], s=18, color="#4477aa", label="correct (latency)",
                   zorder=3)
    if kept:
        xs, ys = [x for x, _ in kept], [float(y or 0.0) for _, y in kept]
        ax.step([*xs, max(t.trial for t in trials)], [*ys, ys[-1]], where="post", color="#228833",
                linewidth=2, label="incumbent", zorder=2)
    floor = min((float(y or 0.0) for _, y in ok), default=1.0)
    _marks(ax, trials, floor)
    ax.set_xlabel("trial")
    ax.set_ylabel("latency (µs, " + ", ".join(sorted({t.verdict.latency_kind for t in trials
                                                       if t.verdict.latency_kind})) + ")")
    ax.set_title(title or "schedule search")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    write_atomic(path, png.getvalue())


def _marks(ax: Any, trials: list[Trial], floor: float) -> None:
    """Trials without a latency, on the bottom edge: rejected (x), incorrect/crash/timeout (v)."""
    rejected = [t.trial for t in trials if t.status == "rejected"]
    failed = [t.trial for t in trials if t.status in ("reverted", "crash", "timeout")]
    y = floor * 0.97
    if rejected:
        ax.scatter(rejected, [y] * len(rejected), marker="x", color="#cc3311", label="rejected", zorder=3)
    if failed:
        ax.scatter(failed, [y] * len(failed), marker="v", color="#ee7733",
                   label="incorrect / crash / timeout", zorder=3)
