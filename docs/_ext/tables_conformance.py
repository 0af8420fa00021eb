"""Tables of the conformance chapter (spec §9), generated from the kit's code."""

from __future__ import annotations

from collections import Counter

from amkspec.conformance.cases import default_cases_dir, discover
from amkspec.conformance.protocol import COMMANDS
from corpus.make_run_cases import MATRIX, tolerance_table

Table = tuple[list[str], list[list[str]]]


def tolerances() -> Table:
    """(atol, rtol) per float dtype, as every run case carries them."""
    rows = [[f"``{d}``", f"{a:g}", f"{r:g}"] for d, (a, r) in tolerance_table().items()]
    rows.append(["integer, ``BOOL``", "0", "0 (exact)"])
    return ["Output dtype", "atol", "rtol"], rows


def opcode_matrix() -> Table:
    """Every opcode and the dtypes its numeric cases cover."""
    rows: dict[str, list[str]] = {}
    for op, dtypes, _ in MATRIX:
        rows.setdefault(op.name, []).extend(d.name for d in dtypes)
    return ["Opcode", "Dtypes with a run case"], [[f"``{k}``", ", ".join(v)] for k, v in rows.items()]


def case_counts() -> Table:
    """How many cases of each kind the kit holds."""
    counts = Counter(c.kind for c in discover(default_cases_dir()))
    return ["Kind", "Cases"], [[k, str(counts[k])] for k in ("format", "validate", "run", "refuse")] + [
        ["all", str(sum(counts.values()))]
    ]


def commands() -> Table:
    """The protocol's commands."""
    what = {
        "start": "handshake → name, version, capabilities",
        "load": "read and re-serialise a document",
        "validate": "verdict and codes of a document",
        "run": "one launch of a program",
        "stop": "end the session",
    }
    return ["Command", "Meaning"], [[f"``{c}``", what[c]] for c in COMMANDS]
