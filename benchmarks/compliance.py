"""How implementations fare against the specification, per level and chapter (spec §9.1).

Run: ``python3 benchmarks/compliance.py [--baseline PATH] [--write-results]``.

Runs the conformance kit on amkspec's adapter (ReferenceVM), on its megakernel adapter (the CPU build
of the megakernel's source) and on the original implementation through
``benchmarks/original_adapter.py`` (its own loader, ``validate()`` and ReferenceVM, no amkspec code),
prints the compliance tables, and with ``--write-results`` writes them to
``benchmarks/results/compliance.md``, which the site's compliance page includes.

The original must fail at ``core`` on exactly the cases of :data:`DEFECTS`, each a defect against the
specification's own text, said in one line; the script exits 1 (and writes nothing) when its core
failures differ from that list, or when an amkspec adapter does not conform at both levels, so the
page cannot go stale.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import DEFAULT_BASELINE, ROOT, add_baseline_argument
from tables import write_result

from amkspec.conformance.cases import default_cases_dir
from amkspec.conformance.judge import FAIL, NA, PASS
from amkspec.conformance.kit import KitRun, binds, run_kit
from amkspec.conformance.report import CHAPTERS, chapter_counts, verdict_word
from amkspec.conformance.rules import LEVELS, RULES, VOCABULARY, Level

PYTHON = shlex.quote(sys.executable)
ADAPTER = f"{PYTHON} -m amkspec.conformance.adapter --vm"
COMMAND = "python3 benchmarks/compliance.py --write-results"

DEFECTS: dict[str, str] = {
    "structure/S103_counter_init": "accepts a counter whose `init` is 1, so the projection tiles' wait "
    "is met before the embedding that writes their input has run: a race (spec: counters start at 0)",
    "structure/S107_rank_5_buffer": "accepts a rank-5 buffer: the spec caps every buffer's rank at 4, "
    "its `validate()` checks the rank of buffers that tasks use only",
    "deadlock/D205_sm_queue_cross_sm": "accepts SM queues that deadlock through another SM (`a` queued "
    "after `b` on SM 0 while `b` needs `x` on SM 1, which needs `a`): it compares direct same-SM edges "
    "only, where the spec asks each queue to be a linear extension of the DAG",
    "refuse/M436_combine_head_dim": "accepts an ATTENTION_COMBINE without `head_dim`, a param its own "
    "ReferenceVM needs (`KeyError`): a program its validator accepts does not run",
    "refuse/M401_tile_past_output": "accepts a GEMV tile that writes columns past its output buffer; its "
    "own ReferenceVM then fails on the program (on a device, an out-of-bounds write)",
    "run/copy_i4": "a COPY of an I4 buffer crashes its ReferenceVM: it holds I4 as float32 of the logical "
    "shape, which the packed bytes (two levels per byte) do not fit",
    "run/dequant_i4": "DEQUANT of I4 levels does not unpack the nibbles: it scales the packed bytes as if "
    "each were one level, so every value is wrong",
}
"""The original's failures at ``core``: case id → why, in one line."""


def implementations(baseline: Path | None) -> list[tuple[str, str]]:
    """(name, command) of every implementation the page covers (the original where it is present)."""
    found = [
        ("amkspec (ReferenceVM)", f"{ADAPTER} reference"),
        ("amkspec megakernel (CPU build)", f"{ADAPTER} cpu-kernel"),
    ]
    if baseline is not None:
        adapter = shlex.quote(str(ROOT / "benchmarks" / "original_adapter.py"))
        found.append(("original AMK", f"{PYTHON} {adapter} --original {shlex.quote(str(baseline))}"))
    return found


def _cell(run: KitRun, level: Level, chapter: int) -> str:
    c = chapter_counts(run.rule_results(level)).get(chapter, Counter())
    if not c["rules"]:
        return "—"
    judged = c[PASS] + c[FAIL]
    text = f"{c[PASS]}/{judged}" if judged else "not judged"
    return f"**{text}**" if c[FAIL] else text


def verdicts_table(runs: dict[str, KitRun]) -> list[str]:
    rows = [
        "| Implementation | core (the spec) | strict (amkspec's profile) | cases | not applicable |",
        "|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        cells = [f"{verdict_word(run.passed_at(lv))} ({sum(r.fails_at(lv) for r in run.results)} failing)"
                 for lv in LEVELS]
        na = sum(r.status == NA for r in run.results)
        rows.append(f"| {name} | {' | '.join(cells)} | {len(run.results)} | {na} |")
    return rows


def chapters_table(runs: dict[str, KitRun], level: Level) -> list[str]:
    names = list(runs)
    rows = [f"| Chapter | {' | '.join(names)} |", "|---|" + "---|" * len(names)]
    for chapter, title in CHAPTERS.items():
        if not any(RULES[r].chapter == chapter and level.includes(RULES[r].level) for r in RULES):
            continue
        cells = " | ".join(_cell(run, level, chapter) for run in runs.values())
        rows.append(f"| §{chapter} {title} | {cells} |")
    return rows


def core_failures(run: KitRun) -> list[str]:
    rows = ["| Case | Rule | Why |", "|---|---|---|"]
    for r in run.results:
        if r.fails_at(Level.CORE):
            binding = {rid for f in r.findings if binds(f, Level.CORE) for rid in f.rules}
            rules = ", ".join(f"`{rid}`" for rid in sorted(binding))
            rows.append(f"| `{r.case.id}` | {rules} | {DEFECTS[r.case.id]} |")
    return rows


def strict_failures(run: KitRun) -> list[str]:
    """The strict rules the original fails (beyond core), grouped by the Differences entry that says why."""
    by_entry: dict[tuple[str, str, str], list[str]] = {}
    cases: dict[tuple[str, str, str], set[str]] = {}
    for rr in run.rule_results(Level.STRICT):
        rule = RULES[rr.rule]
        if rr.status == FAIL and rule.level is Level.STRICT and rule.id not in VOCABULARY:
            assert rule.differs is not None
            entry = (rule.differs.doc, rule.differs.anchor, rule.differs.area)
            by_entry.setdefault(entry, []).append(rule.id)
            cases.setdefault(entry, set()).update(rr.failed)
    rows = ["| Rules | Cases | Why amkspec is stricter |", "|---|---|---|"]
    for entry, rule_ids in sorted(by_entry.items(), key=lambda kv: RULES[kv[1][0]].section):
        doc, anchor, area = entry
        shown = (
            ", ".join(f"`{rid}`" for rid in rule_ids)
            if len(rule_ids) <= 4
            else f"`{rule_ids[0]}` … `{rule_ids[-1]}` ({len(rule_ids)} rules)"
        )
        link = f"[{area.replace('`', '')}](../{doc}.md#{anchor})"
        rows.append(f"| {shown} | {len(cases[entry])} | {link} |")
    return rows


def vocabulary(run: KitRun) -> str:
    counts = {rid: len(rr.failed) for rr in run.rule_results(Level.STRICT) if (rid := rr.rule) in VOCABULARY}
    parts = [f"`{rid}` in {n} case(s)" for rid, n in sorted(counts.items()) if n]
    return ", ".join(parts) if parts else "none"


def page(runs: dict[str, KitRun], original: str | None) -> list[str]:
    lines = [
        f"Generated by `{COMMAND}` (the kit's {len(next(iter(runs.values())).results)} cases).",
        "",
        *verdicts_table(runs),
        "",
        "Rules passed out of those judged, per chapter (**bold**: some failed; rules with no case in the",
        "kit — a lowering, the device launch — are not counted):",
        "",
        "At the core level:",
        "",
        *chapters_table(runs, Level.CORE),
        "",
        "At the strict level (core included):",
        "",
        *chapters_table(runs, Level.STRICT),
    ]
    if original is not None:
        run = runs[original]
        lines += [
            "",
            f"Where the {original} implementation fails at core, one line per case:",
            "",
            *core_failures(run),
            "",
            "At strict it also fails the rules of amkspec's documented stricter profile:",
            "",
            *strict_failures(run),
            "",
            f"Its vocabulary findings, reported and never failing certification: {vocabulary(run)}.",
        ]
    return lines


def check(runs: dict[str, KitRun], original: str | None) -> list[str]:
    """Why the page would be wrong: an amkspec adapter not conforming, or the original failing at core
    on other cases than :data:`DEFECTS`."""
    problems = [
        f"{name} does not conform at {lv.value}"
        for name, run in runs.items()
        if name != original
        for lv in LEVELS
        if not run.passed_at(lv)
    ]
    if original is not None:
        failing = {r.case.id for r in runs[original].results if r.fails_at(Level.CORE)}
        known = set(DEFECTS)
        problems += [
            f"the original fails at core on {cid}, not in DEFECTS"
            for cid in sorted(failing - known)
        ]
        problems += [f"the original no longer fails at core on {cid}" for cid in sorted(known - failing)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_baseline_argument(parser)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    runs: dict[str, KitRun] = {}
    for name, command in implementations(args.baseline):
        runs[name] = run_kit(command, default_cases_dir(), level=Level.STRICT, timeout_s=120.0)
        print(f"{name}: core {verdict_word(runs[name].passed_at(Level.CORE))}, "
              f"strict {verdict_word(runs[name].passed_at(Level.STRICT))} ({runs[name].seconds:.1f} s)")
    original = "original AMK" if "original AMK" in runs else None
    if original is None:
        print(f"original: not available (no --baseline and no {DEFAULT_BASELINE})")
    lines = page(runs, original)
    print("\n".join(lines))
    problems = check(runs, original)
    for problem in problems:
        print(f"compliance: {problem}", file=sys.stderr)
    if problems:
        return 1
    if args.write_results:
        if original is None:
            print("compliance: refusing to write the page without the original", file=sys.stderr)
            return 2
        write_result("compliance.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
