"""The ScheduleConfig knob space: every knob's type, range, search choices and target caps (spec §5).

This module is the one place a config is checked. :func:`check` takes a config as JSON-like data
(what a user or an agent writes) or as a :class:`~amkspec.ir.ScheduleConfig` and returns every
problem as a :class:`KnobIssue` with the knob's path; :func:`parse` also builds the config;
:func:`require_valid` raises :class:`ConfigError`. The lowering calls :func:`require_valid`, the
evaluator calls :func:`parse`, ``amkspec schema --config`` prints :func:`config_schema` and
``amkspec propose`` prints :func:`search_space` with the target's real caps filled in.

Launch feasibility (``threads_per_block``, ``smem_bytes_per_block`` against the target's opt-in
limit) is the validator's rule (codes O503/O504, spec §3.5, §5.1): :func:`check` asks
:func:`amkspec.validate` on an empty program carrying the config, so both agree by construction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from amkspec.ir import MAX_THREADS_PER_BLOCK, WARP, GpuTarget, MegakernelProgram, ScheduleConfig
from amkspec.ir.opcodes import INT32_MAX
from amkspec.lower.errors import LoweringError

MAX_BATCH = 1024
"""The largest decode batch the lowering accepts (sequences decoded in lockstep)."""

GATE_UP_SILU = ("gate", "up", "silu")
"""Fusion group: a layer's gate and up projections and their SwiGLU as one FUSED task."""
O_RESIDUAL = ("o", "residual")
"""Fusion group: a layer's o projection and the attention residual add as one FUSED task."""
DOWN_RESIDUAL = ("down", "residual")
"""Fusion group: a layer's down projection and the MLP residual add as one FUSED task."""
FUSION_GROUPS = (GATE_UP_SILU, O_RESIDUAL, DOWN_RESIDUAL)
"""The ``fusion_grouping`` groups the lowering consumes (each an untiled FUSED task per layer)."""

SM_POLICIES = ("round_robin", "load_balance")
PAGE_POLICIES = ("graph_color", "linear", "none")
MAX_SM_MAP = 1 << 20
"""At most this many entries in an explicit ``sm_assignment`` map."""

TYPE, RANGE, UNKNOWN = "knob:type", "knob:range", "knob:unknown"
"""Issue codes of the knob checks; launch issues carry the validator's codes (O503, O504)."""


class ConfigError(LoweringError):
    """A ScheduleConfig that cannot be lowered: every issue, with its knob path."""

    def __init__(self, issues: list[KnobIssue]) -> None:
        self.issues = tuple(issues)
        shown = "; ".join(str(i) for i in issues[:4])
        more = f" (and {len(issues) - 4} more)" if len(issues) > 4 else ""
        super().__init__(f"bad ScheduleConfig: {shown}{more}")


@attrs.frozen
class KnobIssue:
    """One problem: the knob's path (``tiling.gemv.N_tile``), a message and a code."""

    path: str
    message: str
    code: str

    def __str__(self) -> str:
        return f"{self.code} {self.path}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return attrs.asdict(self)


@attrs.frozen
class Knob:
    """One knob of the space: its path, kind, declared range and the values a search proposes.

    ``kind`` is ``int``, ``enum``, ``sm_assignment`` or ``fusion_grouping``. ``consumed`` says
    whether the lowering, the cost model or the megakernel launch reads it (``threads_per_block``
    is the launch's block size); otherwise it is checked and recorded in the program only.
    """

    path: str
    kind: str
    default: Any
    help: str
    choices: tuple[Any, ...]
    minimum: int | None = None
    maximum: int | None = None
    multiple_of: int | None = None
    values: tuple[str, ...] = ()
    consumed: bool = True
    searched: bool = True
    launch: bool = False
    """Feasibility is the validator's launch rule (O503/O504): only the type is checked here."""

    def search_choices(self, target: GpuTarget | None) -> list[Any]:
        """The values a search proposes, with the target's caps applied."""
        if self.path == "smem_bytes_per_block" and target is not None:
            cap = target.smem_bytes_per_block_optin
            return sorted({c for c in self.choices if c <= cap} | {cap})
        return list(self.choices)

    def edge_values(self, target: GpuTarget | None) -> list[Any]:
        """Values at and just past the edge of the feasible range (the search's safety probes)."""
        if self.path == "smem_bytes_per_block" and target is not None:
            return [target.smem_bytes_per_block_optin + 1, target.smem_bytes_per_sm]
        if self.path == "threads_per_block":
            return [WARP + WARP // 2, MAX_THREADS_PER_BLOCK + WARP]
        if self.kind == "int" and self.minimum is not None:
            return [self.minimum - 1]
        return []

    def describe(self, target: GpuTarget | None) -> dict[str, Any]:
        """The JSON form ``amkspec propose`` prints."""
        out: dict[str, Any] = {"type": "int" if self.kind == "int" else self.kind, "default": self.default,
                               "choices": self.search_choices(target), "consumed": self.consumed,
                               "help": self.help}
        if self.kind == "int":
            maximum = self.maximum
            if self.path == "smem_bytes_per_block" and target is not None:
                maximum = target.smem_bytes_per_block_optin
            out["range"] = [self.minimum, maximum]
            if self.multiple_of:
                out["multiple_of"] = self.multiple_of
        if self.values:
            out["values"] = list(self.values)
        if self.kind == "fusion_grouping":
            out["values"] = [list(g) for g in FUSION_GROUPS]
        return out


KNOBS: tuple[Knob, ...] = (
    Knob("tiling.gemv.N_tile", "int", 64, "GEMV/GEMM output-column tile width (clamped to N; at most "
         "64 tiles per projection).", (16, 32, 64, 128, 256), 1, 1 << 16),
    Knob("tiling.gemv.base_width", "int", None, "Tile width when N_tile is absent (at least 16).",
         (16, 32, 64), 1, 1 << 16, searched=False),
    Knob("tiling.attention.n_partitions", "int", None, "Split-KV shards (flash decoding); 1 = none, "
         "at most 8 and one per 16 positions.", (1, 2, 4, 8), 1, 64),
    Knob("tiling.attention.kv_block", "int", 128, "KV block size (recorded, not yet lowered).",
         (64, 128, 256), 1, 1 << 16, consumed=False),
    Knob("fusion_grouping", "fusion_grouping", [], "Per-layer op groups each run as one untiled FUSED "
         "task: any of " + ", ".join(str(list(g)) for g in FUSION_GROUPS) + ".",
         ((), (GATE_UP_SILU,), (O_RESIDUAL, DOWN_RESIDUAL), FUSION_GROUPS)),
    Knob("sm_assignment", "sm_assignment", "load_balance", "SM placement policy, or {task id: SM}.",
         SM_POLICIES, values=SM_POLICIES),
    Knob("pipelining_depth", "int", 2, "Instructions of weight prefetch ahead (cost model).",
         (0, 1, 2, 3, 4), 0, 8),
    Knob("page_allocation", "enum", "graph_color", "Activation page reuse policy.", PAGE_POLICIES,
         values=PAGE_POLICIES),
    Knob("threads_per_block", "int", 256, "Persistent VM block size (a multiple of the warp size).",
         (64, 128, 256, 512), WARP, MAX_THREADS_PER_BLOCK, WARP, launch=True),
    Knob("smem_bytes_per_block", "int", 0, "Dynamic shared memory opt-in per block (at most the "
         "target's opt-in limit; checked and recorded: the megakernel sizes its shared memory from "
         "its kernels).", (0, 16384, 49152), 0, INT32_MAX, consumed=False, launch=True),
)
"""Every knob, in the order ``propose`` lists them."""

KNOB_BY_PATH = {k.path: k for k in KNOBS}
TOP_LEVEL = ("tiling", "fusion_grouping", "sm_assignment", "pipelining_depth", "page_allocation",
             "threads_per_block", "smem_bytes_per_block")
TILING_SECTIONS: dict[str, tuple[str, ...]] = {
    "gemv": ("N_tile", "base_width"), "attention": ("n_partitions", "kv_block"),
}


def default_config() -> ScheduleConfig:
    """The neutral config every search starts from (the original's ``default_config``)."""
    return ScheduleConfig(tiling={"gemv": {"N_tile": 64}, "attention": {"kv_block": 128}})


def coarse_config() -> ScheduleConfig:
    """One tile per projection (``N_tile`` at its maximum), no SM placement and no page reuse: the
    fewest tasks a decode step lowers to, the ReferenceVM's fastest schedule (the lowering guide,
    "Real checkpoints")."""
    return ScheduleConfig(tiling={"gemv": {"N_tile": 1 << 16}}, sm_assignment={}, page_allocation="none")


def clip(text: str, limit: int = 300) -> str:
    """``text`` on one line, ASCII only (lone surrogates escaped), at most ``limit`` characters."""
    flat = " ".join(text.split()).encode("ascii", "backslashreplace").decode("ascii")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def show(value: Any, limit: int = 60) -> str:
    """A short, always-printable description of any JSON value (huge ints by bit length)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def key_name(key: Any, limit: int) -> str:
    """A document key as a path component that names it exactly: a plain ASCII identifier as it is
    (``warp_specialize``), anything else JSON-quoted and escaped by :func:`show` (``"pipelining_depth "``)."""
    if isinstance(key, str) and key.isascii() and key.isidentifier() and len(key) <= limit:
        return key
    return show(key, limit)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def as_int(v: Any) -> int | None:
    """``v`` as an int when JSON Schema calls it an integer (``64`` or ``64.0``, not ``true``), else None."""
    if _is_int(v):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _check_int(knob: Knob, raw: Any) -> Iterator[KnobIssue]:
    v = as_int(raw)
    if v is None:
        yield KnobIssue(knob.path, f"must be an integer, got {show(raw)}", TYPE)
        return
    lo, hi = (-INT32_MAX - 1, INT32_MAX) if knob.launch else (knob.minimum, knob.maximum)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        yield KnobIssue(knob.path, f"must be in [{lo}, {hi}], got {show(raw)}", RANGE)


def _check_enum(knob: Knob, v: Any) -> Iterator[KnobIssue]:
    if not isinstance(v, str):
        yield KnobIssue(knob.path, f"must be one of {list(knob.values)}, got {show(v)}", TYPE)
    elif v not in knob.values:
        yield KnobIssue(knob.path, f"must be one of {list(knob.values)}, got {show(v)}", RANGE)


def _sm_key(k: Any) -> int | None:
    """A task id key: a non-negative int, or a string of a canonical decimal int (JSON object keys)."""
    if _is_int(k):
        return int(k) if k >= 0 else None
    if isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 18 and (k == "0" or k[0] != "0"):
        return int(k)
    return None


def _check_sm(knob: Knob, v: Any, target: GpuTarget | None) -> Iterator[KnobIssue]:
    if isinstance(v, str) or not isinstance(v, Mapping):
        yield from _check_enum(knob, v)
        return
    if len(v) > MAX_SM_MAP:
        yield KnobIssue(knob.path, f"an explicit map has at most {MAX_SM_MAP} entries", RANGE)
        return
    limit = target.num_sms if target is not None else None
    for k, sm in v.items():
        path = f"{knob.path}.{show(k, 24)}"
        if _sm_key(k) is None:
            yield KnobIssue(path, f"task id must be a non-negative integer, got {show(k)}", TYPE)
        elif as_int(sm) is None:
            yield KnobIssue(path, f"maps task {show(k, 24)} to {show(sm)}, not an SM number", TYPE)
        elif sm < 0 or (limit is not None and sm >= limit) or sm > INT32_MAX:
            yield KnobIssue(path, f"puts task {show(k, 24)} on SM {show(sm)}, outside "
                                  f"[0, {limit if limit is not None else INT32_MAX})", RANGE)


def _check_fusion(knob: Knob, v: Any) -> Iterator[KnobIssue]:
    if not isinstance(v, list | tuple):
        yield KnobIssue(knob.path, f"must be a list of op-name groups, got {show(v)}", TYPE)
        return
    if len(v) > len(FUSION_GROUPS):
        yield KnobIssue(knob.path, f"at most {len(FUSION_GROUPS)} groups, got {len(v)}", RANGE)
        return
    seen: set[tuple[str, ...]] = set()
    for i, group in enumerate(v):
        path = f"{knob.path}[{i}]"
        if not isinstance(group, list | tuple) or not all(isinstance(n, str) for n in group):
            yield KnobIssue(path, f"must be a list of op names, got {show(group)}", TYPE)
        elif tuple(group) not in FUSION_GROUPS:
            supported = ", ".join(str(list(g)) for g in FUSION_GROUPS)
            yield KnobIssue(path, f"is not a lowered group (supported: {supported}), got {show(group)}",
                            RANGE)
        elif tuple(group) in seen:
            yield KnobIssue(path, f"repeats the group {show(group)}", RANGE)
        else:
            seen.add(tuple(group))


def _check_value(knob: Knob, v: Any, target: GpuTarget | None) -> Iterator[KnobIssue]:
    checks: dict[str, Callable[[], Iterator[KnobIssue]]] = {
        "int": lambda: _check_int(knob, v),
        "enum": lambda: _check_enum(knob, v),
        "sm_assignment": lambda: _check_sm(knob, v, target),
        "fusion_grouping": lambda: _check_fusion(knob, v),
    }
    yield from checks[knob.kind]()


def _check_tiling(tiling: Any, target: GpuTarget | None) -> Iterator[KnobIssue]:
    if not isinstance(tiling, Mapping):
        yield KnobIssue("tiling", f"must be an object of sections, got {show(tiling)}", TYPE)
        return
    for section, body in tiling.items():
        path = f"tiling.{key_name(section, 24)}"
        if section not in TILING_SECTIONS:
            yield KnobIssue(path, f"unknown tiling section (known: {', '.join(TILING_SECTIONS)})", UNKNOWN)
        elif not isinstance(body, Mapping):
            yield KnobIssue(path, f"must be an object, got {show(body)}", TYPE)
        else:
            for key, value in body.items():
                if key not in TILING_SECTIONS[section]:
                    yield KnobIssue(f"{path}.{show(key, 24)}", f"unknown knob (known: "
                                    f"{', '.join(TILING_SECTIONS[section])})", UNKNOWN)
                else:
                    yield from _check_value(KNOB_BY_PATH[f"tiling.{section}.{key}"], value, target)


class _NullDocument:
    def __repr__(self) -> str:
        return "NULL_DOCUMENT"


NULL_DOCUMENT: Any = _NullDocument()
"""A config document that is JSON ``null``: judged (and refused) like any other document, where
``None`` means no config at all, the default one (``evaluate --config`` of a file holding ``null``)."""


def config_document(doc: Any) -> Any:
    """The ScheduleConfig document inside what a config file holds: the ``schedule_config`` of an
    ``amkspec propose`` document, the ``config`` of a program, else the document itself (spec §5:
    one format from ``propose`` to ``evaluate``, ``lower`` and ``decode``)."""
    if isinstance(doc, Mapping) and "schedule_config" in doc and "search_space" in doc:
        return doc["schedule_config"]
    if isinstance(doc, Mapping) and "tasks" in doc:
        return doc.get("config")
    return doc


def as_document(config: ScheduleConfig | Mapping[str, Any] | None) -> Any:
    """The JSON-like form of a config (a ScheduleConfig's unknown fields kept as extra keys;
    :data:`NULL_DOCUMENT` as None)."""
    if config is NULL_DOCUMENT:
        return None
    if config is None or not isinstance(config, ScheduleConfig):
        return config
    doc: dict[str, Any] = {name: getattr(config, name) for name in TOP_LEVEL}
    doc.update(config.extra)
    return doc


def _structure_issues(doc: Any, target: GpuTarget | None) -> list[KnobIssue]:
    if not isinstance(doc, Mapping):
        return [KnobIssue("(root)", f"a ScheduleConfig must be an object, got {show(doc)}", TYPE)]
    issues: list[KnobIssue] = []
    for key, value in doc.items():
        if key == "tiling":
            issues.extend(_check_tiling(value, target))
        elif key in KNOB_BY_PATH:
            issues.extend(_check_value(KNOB_BY_PATH[key], value, target))
        else:
            issues.append(KnobIssue(key_name(key, 40), f"unknown knob (known: {', '.join(TOP_LEVEL)})",
                                    UNKNOWN))
    return issues


def _build(doc: Mapping[str, Any]) -> ScheduleConfig:
    """A ScheduleConfig from a checked document; missing fields take the dataclass defaults and
    integral numbers (``64.0``) become ints."""
    fields: dict[str, Any] = {}
    if "tiling" in doc:
        fields["tiling"] = {s: {k: as_int(v) for k, v in body.items()} for s, body in doc["tiling"].items()}
    if "fusion_grouping" in doc:
        fields["fusion_grouping"] = [list(g) for g in doc["fusion_grouping"]]
    if "sm_assignment" in doc:
        sm = doc["sm_assignment"]
        fields["sm_assignment"] = sm if isinstance(sm, str) else {
            _sm_key(k): as_int(v) for k, v in sm.items()}
    for name in ("pipelining_depth", "threads_per_block", "smem_bytes_per_block"):
        if name in doc:
            fields[name] = as_int(doc[name])
    if "page_allocation" in doc:
        fields["page_allocation"] = doc["page_allocation"]
    return ScheduleConfig(**fields)


def _launch_issues(config: ScheduleConfig, target: GpuTarget | None) -> list[KnobIssue]:
    """The validator's launch-feasibility findings (O503, O504) for ``config`` on ``target``."""
    from amkspec.proofs import validate

    shell = MegakernelProgram(target=target, config=config)
    paths = {"O503": "threads_per_block", "O504": "smem_bytes_per_block"}
    return [KnobIssue(paths[d.code], d.message, d.code) for d in validate(shell).diagnostics
            if d.code in paths]


def structure(config: ScheduleConfig | Mapping[str, Any] | None, target: GpuTarget | None = None
              ) -> tuple[ScheduleConfig | None, list[KnobIssue]]:
    """The knob checks without launch feasibility: the config built from a well-formed document."""
    if config is None:
        return default_config(), []
    doc = as_document(config)
    issues = _structure_issues(doc, target)
    return (None, issues) if issues else (_build(doc), [])


def parse(config: ScheduleConfig | Mapping[str, Any] | None, target: GpuTarget | None = None
          ) -> tuple[ScheduleConfig | None, list[KnobIssue]]:
    """Check ``config`` (None means :func:`default_config`) and build it.

    Returns ``(config, [])`` when every knob is well-typed, in range and feasible on ``target``,
    else ``(None, issues)``. Never raises.
    """
    built, issues = structure(config, target)
    if built is None:
        return None, issues
    issues = _launch_issues(built, target)
    return (None, issues) if issues else (built, [])


def check(config: ScheduleConfig | Mapping[str, Any] | None, target: GpuTarget | None = None
          ) -> list[KnobIssue]:
    """Every issue of ``config`` on ``target`` (an empty list: it can be lowered and launched)."""
    return parse(config, target)[1]


def require_valid(config: ScheduleConfig | Mapping[str, Any] | None, target: GpuTarget | None = None, *,
                  places_sms: bool = True) -> ScheduleConfig:
    """The config :func:`parse` builds (SM map keys and values as ints), or :class:`ConfigError`
    listing every issue of ``config`` (the lowering's entry check: it lowers what this returns, so
    a config :func:`check` passes is lowered as checked).

    With ``places_sms`` (the lowering resolves ``sm_assignment`` into ``Task.sm``), a named policy
    needs a target: without one there is no SM count to place on, and silently leaving every task
    unplaced would not be what the config asks for.
    """
    built, issues = parse(config, target)
    policy = built.sm_assignment if built is not None else None
    if places_sms and target is None and isinstance(policy, str):
        issues = [KnobIssue("sm_assignment", f"{policy!r} places tasks on SMs, which needs a target: "
                            "pass one (--target), give an explicit {task: sm} map, or lower in compat "
                            "mode", RANGE)]
    if built is None or issues:
        raise ConfigError(issues)
    return built


def config_dict(config: ScheduleConfig) -> dict[str, Any]:
    """The canonical dict of a parsed config: every field, explicit SM map keys as ints."""
    doc = {name: getattr(config, name) for name in TOP_LEVEL}
    if isinstance(doc["sm_assignment"], Mapping):
        doc["sm_assignment"] = dict(sorted(doc["sm_assignment"].items()))
    return doc


def canonical(value: Any, depth: int = 0) -> Any:
    """JSON-safe form of any value for hashing (huge ints as hex, deep nesting cut off)."""
    if depth > 32:
        return "<deep>"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else {"$int": hex(value)}
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, Mapping):
        return {str(canonical(k, depth + 1)): canonical(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v, depth + 1) for v in value]
    return repr(type(value))


def schedule_id(config: ScheduleConfig | Mapping[str, Any] | None) -> str:
    """``"sch_" + sha1(json.dumps(config, sort_keys=True))[:10]`` of the parsed config (the search guide).

    Launch feasibility does not enter (an infeasible config has the id of what it asks for); a
    document whose knobs are malformed is hashed as written, so every verdict has an id.
    """
    parsed, _ = structure(config) if not isinstance(config, ScheduleConfig) else (config, [])
    doc = config_dict(parsed) if parsed is not None else canonical(as_document(config))
    try:
        text = json.dumps(doc, sort_keys=True)
    except (TypeError, ValueError):
        text = json.dumps(canonical(doc), sort_keys=True)
    return "sch_" + hashlib.sha1(text.encode()).hexdigest()[:10]


def complexity(config: ScheduleConfig) -> tuple[int, tuple[int, ...]]:
    """How far ``config`` is from the neutral one (the search's tie-break: simpler wins).

    The total of: fusion groups, pipelining depth, extra SMEM (0/1), a non-default SM policy (0/1),
    a non-default page policy (0/1), split-KV partitions beyond one; then those parts in that order.
    """
    parts = (config.tiling.get("attention", {}) or {}).get("n_partitions", 1)
    terms = (len(config.fusion_grouping), config.pipelining_depth, int(config.smem_bytes_per_block > 0),
             int(config.sm_assignment != "load_balance"), int(config.page_allocation != "graph_color"),
             max(0, int(parts) - 1) if isinstance(parts, int) else 0)
    return sum(terms), terms


def search_space(target: GpuTarget | None) -> dict[str, dict[str, Any]]:
    """Knob path → type, default, range, choices and help, with ``target``'s caps filled in."""
    return {k.path: k.describe(target) for k in KNOBS}


def _int_schema(knob: Knob) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": knob.minimum, "maximum": knob.maximum,
                           "description": knob.help}
    if knob.multiple_of:
        out["multipleOf"] = knob.multiple_of
    return out


def _knob_schema(knob: Knob) -> dict[str, Any]:
    if knob.kind == "int":
        return _int_schema(knob)
    if knob.kind == "enum":
        return {"enum": list(knob.values), "description": knob.help}
    if knob.kind == "fusion_grouping":
        groups = {"enum": [list(g) for g in FUSION_GROUPS]}
        return {"type": "array", "maxItems": len(FUSION_GROUPS), "uniqueItems": True, "items": groups,
                "description": knob.help}
    return {"description": knob.help, "oneOf": [
        {"enum": list(SM_POLICIES)},
        {"type": "object", "propertyNames": {"pattern": "^(0|[1-9][0-9]{0,17})$"},
         "additionalProperties": {"type": "integer", "minimum": 0, "maximum": INT32_MAX}},
    ]}


def config_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of a ScheduleConfig document, generated from :data:`KNOBS`.

    Target caps (the SMEM opt-in limit, the SM count of an explicit map) depend on the target and
    are checked by :func:`check`, not by the schema.
    """
    sections = {
        section: {"type": "object", "additionalProperties": False,
                  "properties": {k: _knob_schema(KNOB_BY_PATH[f"tiling.{section}.{k}"]) for k in keys}}
        for section, keys in TILING_SECTIONS.items()
    }
    props: dict[str, Any] = {
        "tiling": {"type": "object", "additionalProperties": False, "properties": sections},
    }
    props.update({k.path: _knob_schema(k) for k in KNOBS if "." not in k.path})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://amkspec.dev/schema/schedule-config.json",
        "title": "AMK ScheduleConfig",
        "description": "A Loop-2 schedule: the typed knobs the lowering consumes (spec §5).",
        "type": "object",
        "additionalProperties": False,
        "properties": props,
    }
