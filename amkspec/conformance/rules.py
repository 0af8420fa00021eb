"""The normative rules of the spec, each with a stable ID (spec §9.1).

This registry is the one place a rule is defined. The spec site renders it (one anchored entry per
rule, next to the chapter it belongs to), conformance cases cite rule IDs, reports group results
by rule, and the traceability table joins rule → diagnostic code(s) → cases. Rule IDs never change
meaning once published; a retired rule keeps its ID out of use.

Validator rules are derived from the diagnostic-code registry: code ``R303`` is rule
``VAL-RACE-3`` (family prefix and the code's last two digits), an ERROR code a MUST (reject and
report the code) and a WARNING code a SHOULD (report the code; the verdict stays accepted). A new
diagnostic code therefore gets its rule with no edit here; every other rule is one line below.
"""

from __future__ import annotations

import enum

import attrs

from amkspec.proofs.diagnostics import CODES, Severity


class Level(enum.Enum):
    """RFC 2119 requirement levels."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


@attrs.frozen
class Rule:
    """One normative sentence: its ID, level, the site section it belongs to, and its text.

    ``codes`` are the diagnostic codes that witness a violation; ``every_case`` marks a rule that
    every case exercises (the protocol handshake), so it needs no case of its own. ``verified_by``
    names, as pytest node IDs, the amkspec tests that verify a rule on a component the harness
    protocol cannot drive (a lowering, the device launch, the ABI's numeric codes): such a rule has
    no case, and the kit does not certify it.
    """

    id: str
    level: Level
    section: str
    text: str
    codes: tuple[str, ...] = ()
    every_case: bool = False
    verified_by: tuple[str, ...] = ()

    @property
    def chapter(self) -> int:
        """The spec chapter (the number before the first dot of ``section``, e.g. 3 for §3.3)."""
        return int(self.section.lstrip("§").split(".")[0])


M, S, Y = Level.MUST, Level.SHOULD, Level.MAY

VAL_PREFIX = {"S": "VAL-STRUCT", "D": "VAL-DEAD", "R": "VAL-RACE", "M": "VAL-MEM", "O": "VAL-OUT"}
"""Validator rule ID prefix by the diagnostic code's family letter."""

INTERNAL_CODES = frozenset({"S199"})
"""Codes that are not requirements (S199: the validator's own internal-error guard)."""

_HAND_WRITTEN: tuple[Rule, ...] = (
    # §1 data model
    Rule(
        "DATA-ID-1",
        M,
        "§1.1",
        "Every buffer, counter and task id MUST equal its position in its list.",
        ("S102",),
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
    Rule("EXEC-REFUSE-1", M, "§2.4", "A VM MUST refuse, and not run, a program the validator rejects."),
    Rule("EXEC-REFUSE-2", M, "§2.4", "A VM MUST run a program the validator accepts."),
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
        "A reader MUST accept as an integer-map key the strings matching `^-?[0-9]+$` of at most "
        "`max_int_digits` digits, each meaning an integer no other key of its map means, and refuse "
        "any other key with a FormatError naming its JSON path.",
    ),
    Rule(
        "FMT-UNK-1",
        M,
        "§6.3",
        "Unknown fields MUST be kept on load and written back after the known keys of their record, "
        "in their original order.",
    ),
    Rule("FMT-JSON-1", M, "§6.4", "Text that is not JSON MUST be refused with a FormatError at the root."),
    Rule(
        "FMT-TYPE-1",
        M,
        "§6.4",
        "A value of the wrong JSON type MUST be refused with a FormatError naming its JSON path.",
    ),
    Rule(
        "FMT-ENUM-1",
        M,
        "§6.4",
        "An unknown enum name MUST be refused with a FormatError naming its JSON path.",
    ),
    Rule(
        "FMT-REQ-1",
        M,
        "§6.4",
        "A document without `buffers`, `counters` or `tasks` MUST be refused with a FormatError.",
    ),
    Rule(
        "FMT-REQ-2",
        M,
        "§6.4",
        "A record without a required field (one with no default) MUST be refused with a FormatError "
        "naming the record's JSON path.",
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
        "An object with a duplicate key MUST be refused with a FormatError naming the object's JSON path.",
    ),
    Rule(
        "FMT-VER-1",
        M,
        "§6.5",
        "A document whose `ir_version` or `abi_version` has another major "
        "version MUST be refused with a VersionError naming the field.",
    ),
    Rule(
        "FMT-VER-2",
        M,
        "§6.5",
        "A document of the same major and a newer minor version MUST load; a reader MAY warn.",
    ),
    # §7 instruction semantics
    Rule(
        "OP-NUM-1",
        M,
        "§7.1",
        "Every opcode MUST compute its §7 formula (fp32 accumulation, then a "
        "cast to the output dtype) within the tolerance of the output dtype (§9.2).",
    ),
    Rule(
        "OP-INT-1",
        M,
        "§7.1",
        "Integer and boolean results (ids, argmax, copies of integer data) MUST be exact.",
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


def _val_rule(code: str) -> Rule:
    info = CODES[code]
    if info.severity is Severity.ERROR:
        text = f"A validator MUST reject a program and report {code} when {info.summary}."
        level = M
    else:
        text = (
            f"A validator SHOULD report {code} (a warning: the verdict stays accepted) when {info.summary}."
        )
        level = S
    return Rule(rule_id_for_code(code), level, info.clause, text, (code,))


def rule_id_for_code(code: str) -> str:
    """The validator rule a diagnostic code witnesses: ``R303`` → ``VAL-RACE-3``."""
    return f"{VAL_PREFIX[code[0]]}-{int(code[2:])}"


def _registry() -> dict[str, Rule]:
    rules = {r.id: r for r in _HAND_WRITTEN}
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
        if r.level is Level.MUST and not r.every_case and not r.verified_by and r.id not in cited
    ]
