"""Issue 14's "done when": the toy-2L search on h100 finds a correct ≥ 1% win over the default."""

from __future__ import annotations

from pathlib import Path

from amkspec.search import Search, SearchOptions


def test_toy2l_search_keeps_a_correct_fused_incumbent_at_least_1pct_faster(tmp_path: Path) -> None:
    result = Search(SearchOptions("toy-2L", "h100", budget=40, seed=0), tmp_path).run()
    default, best = result.trials[0].verdict, result.incumbent
    assert best is not None and best.trial != 0
    assert best.verdict.correct and best.verdict.latency_kind == "predicted"
    assert default.latency_us is not None and best.verdict.latency_us is not None
    assert best.verdict.latency_us <= 0.99 * default.latency_us
    assert best.verdict.bound_us is not None and best.verdict.latency_us >= best.verdict.bound_us
    assert best.config["fusion_grouping"], "the win comes from lowering fusion_grouping"
