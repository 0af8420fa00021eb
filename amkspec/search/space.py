"""Proposals over the knob space: fresh random configs, one-knob mutations, edge probes.

Configs are JSON documents (what ``amkspec evaluate --config`` reads). Every proposal draws only
from the ``random.Random`` it is given, so a search is reproducible from its seed.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from amkspec.ir import GpuTarget
from amkspec.lower import knobs

SEARCHED = tuple(k for k in knobs.KNOBS if k.searched)


def _plain(value: Any) -> Any:
    """Tuples (how choices are stored) as lists (how JSON holds them)."""
    return [_plain(v) for v in value] if isinstance(value, list | tuple) else value


def get(doc: dict[str, Any], path: str) -> Any:
    """The value at a dotted knob path, or None when absent."""
    node: Any = doc
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def put(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``doc`` with the knob at ``path`` set to ``value``."""
    out = copy.deepcopy(doc)
    node = out
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = _plain(value)
    return out


def default_document() -> dict[str, Any]:
    """The default config as a document (trial 0 of every search)."""
    return knobs.config_dict(knobs.default_config())


def random_config(rng: random.Random, target: GpuTarget) -> dict[str, Any]:
    """A fresh config: every searched knob drawn from its choices (explore)."""
    doc: dict[str, Any] = {}
    for knob in SEARCHED:
        doc = put(doc, knob.path, rng.choice(knob.search_choices(target)))
    return doc


def mutate(rng: random.Random, doc: dict[str, Any], target: GpuTarget) -> tuple[dict[str, Any], str]:
    """``doc`` with one searched knob changed to another of its choices (exploit)."""
    knob = rng.choice(SEARCHED)
    current = get(doc, knob.path)
    others = [c for c in knob.search_choices(target) if _plain(c) != current]
    return put(doc, knob.path, rng.choice(others)), knob.path


def probe(rng: random.Random, doc: dict[str, Any], target: GpuTarget) -> tuple[dict[str, Any], str]:
    """``doc`` with one knob set at or just past the edge of its feasible range (a safety probe)."""
    knob = rng.choice([k for k in SEARCHED if k.edge_values(target)])
    return put(doc, knob.path, rng.choice(knob.edge_values(target))), knob.path
