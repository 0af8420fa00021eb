"""Tables of the search guide, generated from amkspec.lower.knobs and amkspec.search at build time."""

from __future__ import annotations

import json

import attrs

from amkspec.ir import TARGETS
from amkspec.lower import knobs
from amkspec.search.loop import STATUS_OF_FAILURE
from amkspec.search.verdict import FIELD_DOCS, Verdict

Table = tuple[list[str], list[list[str]]]


def _lit(value: object) -> str:
    return f"``{json.dumps(value)}``"


def knob_space() -> Table:
    """Every knob: type, range, what a search proposes on h100, whether the lowering consumes it."""
    h100 = TARGETS["h100"]
    rows = []
    for knob in knobs.KNOBS:
        d = knob.describe(h100)
        rng = d.get("range")
        shown = f"[{rng[0]}, {rng[1]}]" if rng else ", ".join(_lit(v) for v in d.get("values", []))
        if knob.multiple_of:
            shown += f", multiple of {knob.multiple_of}"
        rows.append([f"``{knob.path}``", d["type"], shown,
                     ", ".join(_lit(c) for c in d["choices"]) if knob.searched else "(not searched)",
                     "yes" if knob.consumed else "recorded", knob.help])
    return ["knob", "type", "accepted (h100)", "search choices (h100)", "consumed", "meaning"], rows


def verdict_fields() -> Table:
    """The verdict's fields in output order, with their meaning."""
    return ["field", "meaning"], [[f"``{a.name}``", FIELD_DOCS[a.name]] for a in attrs.fields(Verdict)]


def statuses() -> Table:
    """The results.tsv status of a trial, from its verdict's failure kind."""
    rows = [["``kept``", "valid, correct and a win over the incumbent (see the keep rule)"],
            ["``tried``", "valid and correct, not a win"]]
    by_status: dict[str, list[str]] = {}
    for failure, status in STATUS_OF_FAILURE.items():
        by_status.setdefault(status, []).append(f"``{failure}``")
    rows += [[f"``{status}``", "failure " + ", ".join(fs)] for status, fs in by_status.items()]
    return ["status", "when"], rows
