"""Markdown tables the benchmarks write with ``--write-results`` (the docs' performance page
includes them, so no figure there is typed by hand)."""

from __future__ import annotations

from baseline import ROOT

RESULTS = ROOT / "benchmarks" / "results"


def write_result(name: str, rows: list[str]) -> None:
    """Write one table to ``benchmarks/results/<name>`` (through a temporary file and a rename)."""
    RESULTS.mkdir(exist_ok=True)
    tmp = RESULTS / f".{name}.tmp"
    tmp.write_text("\n".join(rows) + "\n")
    tmp.replace(RESULTS / name)
    print(f"wrote benchmarks/results/{name}")
