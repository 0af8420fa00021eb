"""The normative rules of the spec, each with a stable ID, a key word and a level (spec §9.1).

This registry is the one place a rule is defined. The spec site renders it (one anchored entry per
rule, next to the chapter it belongs to), conformance cases cite rule IDs, reports group results
by rule and by level, and the traceability table joins rule → diagnostic code(s) → cases. Rule IDs
never change meaning once published; a retired rule keeps its ID out of use (:data:`RETIRED`).

Every rule has a **key word** (RFC 2119: a failed MUST fails certification, a failed SHOULD is
reported only) and a **level**: ``core`` rules are what the original specification itself requires
(its MUSTs, its §9 checklist, the opcode numerics); ``strict`` rules are amkspec's stricter
profile, each with the Differences entry that gives its reason (:class:`Difference`). An
implementation that satisfies the specification conforms at ``core``.

Validator rules are derived from the diagnostic-code registry: code ``R303`` is rule
``VAL-RACE-3`` (family prefix and the code's last two digits), an ERROR code a MUST (reject) and a
WARNING code a SHOULD (warn; the verdict stays accepted); its level is strict when
:func:`strict_difference` names a Differences entry for it. Opcode rules are derived from the
opcodes: ``OP-GEMV-TILE-1`` for GEMV_TILE. A new diagnostic code or opcode therefore gets its rule
with no edit here; every other rule is one entry below.
"""

from __future__ import annotations

import enum

import attrs

from amkspec.ir import InstructionKind
from amkspec.proofs.diagnostics import CODES, Family, Severity


class Keyword(enum.Enum):
    """RFC 2119 key words: how much a rule binds."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


class Level(enum.Enum):
    """Conformance levels: ``core`` (the specification) inside ``strict`` (amkspec's profile)."""

    CORE = "core"
    STRICT = "strict"

    def includes(self, other: Level) -> bool:
        """Whether a rule of level ``other`` belongs to this level (strict includes core)."""
        return self is Level.STRICT or other is Level.CORE


LEVELS = (Level.CORE, Level.STRICT)


@attrs.frozen
class Difference:
    """Where the site gives a strict rule's reason: the table row whose first cell is ``area``, in the
    section with heading anchor ``anchor`` of the document ``doc`` (a docs path without ``.md``)."""

    doc: str
    anchor: str
    area: str


@attrs.frozen
class Rule:
    """One normative sentence: its ID, key word, the site section it belongs to, and its text.

    ``codes`` are the diagnostic codes that witness a violation; ``every_case`` marks a rule that
    every case exercises (the protocol handshake), so it needs no case of its own. ``verified_by``
    names, as pytest node IDs, the amkspec tests that verify a rule on a component the harness
    protocol cannot drive (a lowering, the device launch, the ABI's numeric codes): such a rule has
    no case, and the kit does not certify it. ``level`` is ``core`` or ``strict``; a strict rule
    names its Differences entry in ``differs``.
    """

    id: str
    keyword: Keyword
    section: str
    text: str
    codes: tuple[str, ...] = ()
    every_case: bool = False
    verified_by: tuple[str, ...] = ()
    level: Level = Level.CORE
    differs: Difference | None = None

    @property
    def chapter(self) -> int:
        """The spec chapter (the number before the first dot of ``section``, e.g. 3 for §3.3)."""
        return int(self.section.lstrip("§").split(".")[0])


M, S, Y = Keyword.MUST, Keyword.SHOULD, Keyword.MAY
STRICT = Level.STRICT
IR = ("differences", "data-model-and-json-format")
VALIDATOR = ("differences", "validator")
LOWERING = ("differences", "models-and-lowering")
SEMANTICS = ("differences", "instruction-semantics-and-the-reference-vm")
MEMORY = ("spec/04-memory-safety", "45-beyond-the-original")

VAL_PREFIX = {"S": "VAL-STRUCT", "D": "VAL-DEAD", "R": "VAL-RACE", "M": "VAL-MEM", "O": "VAL-OUT"}
"""Validator rule ID prefix by the diagnostic code's family letter."""

INTERNAL_CODES = frozenset({"S199"})
"""Codes that are not requirements (S199: the validator's own internal-error guard)."""

STRICT_CODES: dict[str, Difference] = {
    "S101": Difference(*VALIDATOR, "Ids that are not list positions"),
    "S102": Difference(*VALIDATOR, "Ids that are not list positions"),
    "S114": Difference(*VALIDATOR, "Page table integrity"),
    "S115": Difference(*VALIDATOR, "Page table integrity"),
    "S116": Difference(*VALIDATOR, "Page table integrity"),
    "S117": Difference(*VALIDATOR, "Buffers larger than the GPU"),
    "R304": Difference(*VALIDATOR, "A task reading its own unwritten output"),
    "R307": Difference(*VALIDATOR, "Writes to WEIGHT/CONST/IO_INPUT"),
    "R308": Difference(*VALIDATOR, "Tiles that do not cover a consumed buffer"),
    "O503": Difference(*VALIDATOR, "Launch feasibility"),
    "O504": Difference(*VALIDATOR, "Launch feasibility"),
    "M420": Difference(*MEMORY, "Index buffers (EMBED ids, ROPE positions)"),
    "M436": Difference(*MEMORY, "ATTENTION_COMBINE `head_dim`"),
}
"""Validator codes of the strict level that are not memory-safety codes, and memory-safety codes
with an entry of their own; :func:`strict_difference` is the rule."""


def strict_difference(code: str) -> Difference | None:
    """The Differences entry that makes ``code``'s rule strict, or None for a core rule: every
    memory-safety code (spec chapter 4 has no counterpart in the original specification) and the
    codes of :data:`STRICT_CODES`."""
    if code in STRICT_CODES:
        return STRICT_CODES[code]
    if CODES[code].family is Family.MEMORY:
        return Difference(*MEMORY, "Shapes and dtypes")
    return None


QUANT_AFFINE_RULE = "OP-QUANT-AFFINE-1"
"""The numerics of the affine quantized tables (spec §7.9), amkspec's extension: strict."""

ERROR_CLASS, ERROR_PATH, CODE_RULE = "FMT-ERR-1", "FMT-ERR-2", "VAL-CODE-1"
"""The rules of amkspec's vocabulary (SHOULD, strict): a refusal's error class and JSON path, and the
diagnostic codes a validator reports. The judge cites them apart from what the specification fixes."""
VOCABULARY = frozenset({ERROR_CLASS, ERROR_PATH, CODE_RULE})

RETIRED: dict[str, str] = {
    "OP-NUM-1": "one rule per opcode (OP-<OPCODE>-1) states its numerics",
    "OP-INT-1": "one rule per opcode (OP-<OPCODE>-1) states that integer results are exact",
}
"""Rule IDs no longer in use, and what replaced them (an ID is never reused)."""

_HAND_WRITTEN: tuple[Rule, ...] = (
    # §1 data model
    Rule(
        "DATA-ID-1",
        M,
        "§1.1",
        "Every buffer, counter and task id MUST equal its position in its list.",
        ("S102",),
        level=STRICT,
        differs=Difference(*VALIDATOR, "Ids that are not list positions"),
    ),
    Rule(
        "DATA-TARGET-1",
        Y,
        "§1.1",
        "A program's `target` MAY be null; the checks that need a target (SM ranges, launch limits) "
        "then do not apply.",
    ),
    Rule(
        "DATA-ENUM-1",
        M,
        "§1.2",
        "An implementation MUST use exactly the numeric codes of §1.2 for every enumeration on the device.",
        verified_by=(
            "tests/ir/test_enums.py::test_dtype_codes_and_bits",
            "tests/ir/test_enums.py::test_space_and_kind_codes",
            "tests/ir/test_enums.py::test_opcode_codes",
        ),
    ),
    Rule(
        "DATA-SRC-1",
        S,
        "§1.3",
        "A writer SHOULD set `source` to null on every buffer that is not a WEIGHT or CONST buffer.",
    ),
    # §2 synchronisation and execution
    Rule(
        "EXEC-FIRE-1",
        M,
        "§2.2",
        "A VM MUST start a task only when every one of its waits holds "
        "(counter ≥ threshold), and MUST increment the task's out_counter by exactly 1 when it ends.",
    ),
    Rule(
        "EXEC-RESULT-1",
        M,
        "§2.4",
        "One launch MUST leave in every IO_OUTPUT and KV_CACHE buffer "
        "what the reference numerics of §7 compute over the tasks in any order the counters allow.",
    ),
    Rule(
        "EXEC-KV-1",
        M,
        "§2.3",
        "KV_CACHE contents MUST persist from one launch to the next; a KV "
        "state given with a launch MUST replace the carried one.",
    ),
    Rule(
        "EXEC-REFUSE-1",
        M,
        "§2.4",
        "A VM MUST refuse, and not run, a program its validator rejects.",
    ),
    Rule("EXEC-REFUSE-2", M, "§2.4", "A VM MUST run a program its validator accepts."),
    # §5 schedule configuration and GPU targets
    Rule(
        "LOWER-CFG-1",
        M,
        "§5.1",
        "A lowering MUST refuse, and not lower, a ScheduleConfig with a tiling value that is not a positive "
        "integer or a `pipelining_depth` that is not a non-negative integer.",
        verified_by=("tests/search/test_knobs.py::test_lower_refuses_bad_knobs_with_a_config_error",),
    ),
    Rule(
        "LOWER-FUSE-1",
        M,
        "§5.1",
        "A lowering MUST refuse a `fusion_grouping` group that it does not emit as one task group.",
        verified_by=("tests/lower/test_fusion.py::test_unsupported_groups_are_refused_naming_the_supported_ones",),
        level=STRICT,
        differs=Difference(*LOWERING, "`fusion_grouping`"),
    ),
    Rule(
        "EXEC-COOP-1",
        M,
        "§5.2",
        "A VM whose tasks wait across blocks MUST launch all of its blocks co-resident "
        "(a cooperative launch).",
        verified_by=("tests/vm_cuda/test_gpu.py::test_the_cubin_loads_and_all_blocks_fit_co_resident",),
    ),
    # §6 the JSON format
    Rule(
        "FMT-RT-1",
        M,
        "§6.2",
        "A reader-writer MUST re-serialise a canonical document (`json.dumps(doc, indent=2)` of a document "
        "whose records list their known keys first, in field order) byte for byte.",
    ),
    Rule(
        "FMT-KEY-1",
        M,
        "§6.1",
        "A reader MUST accept as an integer-map key exactly the strings matching `^-?[0-9]+$` of at most "
        "`max_int_digits` digits, each meaning an integer no other key of its map means, and refuse "
        "any other key.",
        level=STRICT,
        differs=Difference(*IR, "Integer map keys"),
    ),
    Rule(
        "FMT-KEY-2",
        M,
        "§6.1",
        "A reader MUST read an integer-map key written as a decimal integer, and MUST refuse a key that "
        "is not an integer.",
    ),
    Rule(
        "FMT-UNK-1",
        M,
        "§6.3",
        "A reader MUST NOT refuse a document because of a field it does not know; it drops the field "
        "(as the original does) or keeps it.",
    ),
    Rule(
        "FMT-UNK-2",
        M,
        "§6.3",
        "Unknown fields MUST be kept on load and written back after the known keys of their record, "
        "in their original order.",
        level=STRICT,
        differs=Difference(*IR, "Unknown fields"),
    ),
    Rule("FMT-JSON-1", M, "§6.4", "Text that is not a JSON object MUST be refused."),
    Rule(
        "FMT-TYPE-1",
        M,
        "§6.4",
        "A value of the wrong JSON type (a string, boolean or float where an integer belongs, an object "
        "where an array belongs) MUST be refused.",
        level=STRICT,
        differs=Difference(*IR, "Wrong JSON types"),
    ),
    Rule("FMT-ENUM-1", M, "§6.4", "An unknown enum name MUST be refused."),
    Rule(
        "FMT-REQ-1",
        M,
        "§6.4",
        "A document without `buffers`, `counters` or `tasks` MUST be refused.",
        level=STRICT,
        differs=Difference(*IR, "Missing `buffers`/`counters`/`tasks`"),
    ),
    Rule(
        "FMT-REQ-2",
        M,
        "§6.4",
        "A record without a required field (one with no default) MUST be refused.",
    ),
    Rule(
        "FMT-LOAD-1",
        M,
        "§6.4",
        "A reader MUST load a document that is representable but broken (ids that are not list positions, "
        "references to records that do not exist, a threshold of 0, a cycle of waits, a NaN param) and "
        "leave judging it to the validator.",
    ),
    Rule(
        "FMT-DUP-1",
        M,
        "§6.4",
        "An object with a duplicate key MUST be refused.",
        level=STRICT,
        differs=Difference(*IR, "Duplicate keys"),
    ),
    Rule(
        "FMT-ERR-1",
        S,
        "§6.4",
        "A reader SHOULD refuse with a `FormatError`, or a `VersionError` for another major version.",
        level=STRICT,
        differs=Difference(*IR, "Wrong JSON types"),
    ),
    Rule(
        "FMT-ERR-2",
        S,
        "§6.4",
        "A refusal SHOULD name the JSON path of the problem, as `tasks[1].waits[0].threshold` or as the "
        "RFC 6901 JSON Pointer `/tasks/1/waits/0/threshold` (`(root)` or the empty pointer for the "
        "document itself).",
        level=STRICT,
        differs=Difference(*IR, "Wrong JSON types"),
    ),
    Rule(
        "FMT-VER-1",
        M,
        "§6.5",
        "A document whose `ir_version` or `abi_version` has another major version MUST be refused.",
    ),
    Rule(
        "FMT-VER-2",
        M,
        "§6.5",
        "A document of the same major and a newer minor version MUST load; a reader MAY warn.",
    ),
    # §3 validation: the vocabulary of findings
    Rule(
        "VAL-CODE-1",
        S,
        "§3.0",
        "A validator SHOULD report each violation it finds with its diagnostic code (§3.7), warnings "
        "included, and no code of a violation the program does not have.",
        level=STRICT,
        differs=Difference(*VALIDATOR, "Findings"),
    ),
    # §7 instruction semantics: amkspec's quantized formats
    Rule(
        QUANT_AFFINE_RULE,
        M,
        "§7.9",
        "A VM MUST compute a quantized GEMV_TILE, GEMM_TILE or DEQUANT whose `flags` hold 4 (AFFINE) "
        "from a table of (scale, offset) pairs, as `level · scale + offset` with the raw nibble or the "
        "int8 as level, within the tolerance of the output dtype (§9.2).",
        level=STRICT,
        differs=Difference(*SEMANTICS, "Affine quantized tables (extension, §7.9)"),
    ),
    # §9 conformance protocol
    Rule(
        "CONF-START-1",
        M,
        "§9.3",
        "An implementation MUST answer `start` with its name, version and capabilities.",
        every_case=True,
    ),
    Rule(
        "CONF-REPLY-1",
        M,
        "§9.3",
        "An implementation MUST answer every request with exactly one JSON "
        "line that the protocol schema accepts, carrying the request's id.",
        every_case=True,
    ),
)


def rule_id_for_op(kind: InstructionKind) -> str:
    """The numerics rule of an opcode: ``GEMV_TILE`` → ``OP-GEMV-TILE-1``."""
    return f"OP-{kind.name.replace('_', '-')}-1"


def _op_rule(kind: InstructionKind) -> Rule:
    text = (
        f"A VM MUST compute {kind.name} as §7 defines it: every float result within the tolerance of its "
        "dtype (§9.2), every integer and boolean result exactly."
    )
    return Rule(rule_id_for_op(kind), M, "§7.1", text)


def _val_rule(code: str) -> Rule:
    info = CODES[code]
    if info.severity is Severity.ERROR:
        text, keyword = f"A validator MUST reject a program when {info.summary} ({code}).", M
    else:
        text, keyword = f"A validator SHOULD warn, and accept, when {info.summary} ({code}).", S
    differs = strict_difference(code)
    level = Level.CORE if differs is None else STRICT
    return Rule(rule_id_for_code(code), keyword, info.clause, text, (code,), level=level, differs=differs)


def rule_id_for_code(code: str) -> str:
    """The validator rule a diagnostic code witnesses: ``R303`` → ``VAL-RACE-3``."""
    return f"{VAL_PREFIX[code[0]]}-{int(code[2:])}"


def _registry() -> dict[str, Rule]:
    rules = {r.id: r for r in _HAND_WRITTEN}
    rules.update((r.id, r) for r in map(_op_rule, InstructionKind))
    for code in CODES:
        if code not in INTERNAL_CODES:
            rule = _val_rule(code)
            rules.setdefault(rule.id, rule)
    return dict(sorted(rules.items(), key=lambda kv: (kv[1].chapter, kv[1].section, _natural(kv[0]))))


def _natural(rule_id: str) -> tuple[str, int]:
    head, _, tail = rule_id.rpartition("-")
    return (head, int(tail) if tail.isdigit() else 0)


RULES: dict[str, Rule] = _registry()
"""Every rule by ID, in chapter and section order."""


def rules_for_codes(codes: list[str]) -> list[str]:
    """The IDs of every rule that one of ``codes`` witnesses, in registry order."""
    wanted = set(codes)
    return [r.id for r in RULES.values() if wanted.intersection(r.codes)]


def validate_case_rules(codes: list[str]) -> list[str]:
    """The rules a validate case about ``codes`` cites: the codes' rules for its verdict, and
    VAL-CODE-1 for the codes it expects reported or absent."""
    return [*rules_for_codes(codes), CODE_RULE]


def rules_in(where: str) -> list[Rule]:
    """The rules of a chapter (``§6``) or of a section and its subsections (``§6.4``), in order."""
    return [
        r
        for r in RULES.values()
        if r.section == where
        or r.section.startswith(where.rstrip(".") + ".")
        or ("." not in where and r.chapter == int(where.lstrip("§")))
    ]


def untraced_musts(cited: set[str]) -> list[str]:
    """The MUST rules that no rule ID in ``cited`` names, other than those every case exercises and
    those verified by amkspec's own tests (``verified_by``)."""
    return [
        r.id
        for r in RULES.values()
        if r.keyword is Keyword.MUST and not r.every_case and not r.verified_by and r.id not in cited
    ]
