"""Schedule search that cannot lie: honest evaluate verdicts and a correctness-gated search (Loop 2).

::

    from amkspec.search import evaluate, search
    v = evaluate("toy-2L", "h100", {"tiling": {"gemv": {"N_tile": 128}}})   # a Verdict
    v.to_dict()                                                              # the JSON verdict
    result = search("toy-2L", "h100", budget=40, out_dir="runs/toy2l")

Needs the ``vm`` extra (torch); ``--plot`` needs the ``search`` extra (matplotlib).
"""

from amkspec.search.cache import ScheduleCache
from amkspec.search.evaluate import Evaluator, Lowering, VmRunner, evaluate, program_sha256
from amkspec.search.loop import Search, SearchOptions, SearchResult, Trial, decide, search
from amkspec.search.verdict import DishonestVerdict, Verdict, honesty_violations

__all__ = [
    "DishonestVerdict", "Evaluator", "Lowering", "ScheduleCache", "Search", "SearchOptions", "SearchResult",
    "Trial", "Verdict", "VmRunner", "decide", "evaluate", "honesty_violations", "program_sha256", "search",
]
