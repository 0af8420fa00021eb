"""The house as data: its floors (:data:`LAYERS`) and the fast paths beside their references
(:data:`FAST_PATHS`). ``tests/test_architecture.py`` holds the code to them (imports go down the
floors, no cycle, the lower floors free of torch and z3, every fast path tested against its
reference) and the architecture page of the docs renders them.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Layer:
    """One floor: packages (or top-level modules) that import only from the floors below."""

    name: str
    packages: tuple[str, ...]
    role: str


LAYERS: tuple[Layer, ...] = (
    Layer(
        "data",
        ("amkspec.ir", "amkspec.text", "amkspec.exit_codes", "amkspec.architecture"),
        "the IR, its enums, limits and JSON (spec §1, §5, §6); escaping text; exit codes; this table",
    ),
    Layer(
        "facts",
        ("amkspec", "amkspec.footprint", "amkspec.semantics", "amkspec.executors", "amkspec.programs"),
        "which elements each task reads and writes (§3.3); the opcodes' numerics (§7); where jobs "
        "run; the example programs and their strategies; the top-level API (imports the IR, the rest lazily)",
    ),
    Layer(
        "validator",
        ("amkspec.proofs", "amkspec.models"),
        "validate() and its obligations (§3, §4); model configs and weights",
    ),
    Layer(
        "evidence and machines",
        ("amkspec.evidence", "amkspec.vm", "amkspec.viz"),
        "certificates, their checker, witness replay, the model checker (§3); the ReferenceVM "
        "(§2, §7); pictures",
    ),
    Layer(
        "solvers and lowering",
        ("amkspec.smt", "amkspec.lower", "vm_cuda"),
        "Z3 queries, witnesses, explain (§3); lowering a model to a program (§5); the megakernel (§8)",
    ),
    Layer("machines by name", ("amkspec.vms",), "the VM ``--vm`` names"),
    Layer(
        "services",
        ("amkspec.search", "amkspec.conformance"),
        "correctness-gated schedule search; the conformance kit (§9)",
    ),
    Layer("command line", ("amkspec.cli",), "the ``amkspec`` command"),
    Layer("entry point", ("amkspec.launch",), "starts the command line"),
    Layer("module entry point", ("amkspec.__main__",), "``python -m amkspec``"),
)
"""The floors, lowest first. A module belongs to the longest package of this table that holds it
(``amkspec`` itself is only ``amkspec/__init__.py``); it may import only from lower floors."""


@attrs.frozen
class FastPath:
    """A faster way to compute what a reference computes; the reference defines the behaviour and
    each test compares the two (``path::test_name``)."""

    fast: str
    reference: str
    tests: tuple[str, ...]


_FOOTPRINT = "tests/footprint/"
_PROOFS = "tests/proofs/"

FAST_PATHS: tuple[FastPath, ...] = (
    FastPath(
        "amkspec.ir.jsonio_fast.fast_loads",
        "amkspec.ir.jsonio.from_dict",
        (
            "tests/ir/test_jsonio_fast.py::test_written_programs_take_the_fast_path_and_build_the_same_program",
            "tests/ir/test_jsonio_fast.py::test_edited_documents_give_the_strict_readers_outcome",
            "tests/ir/test_jsonio_fast.py::test_text_edits_give_the_strict_readers_outcome",
        ),
    ),
    FastPath(
        "amkspec.ir.canonical.canonical_json",
        "json.dumps",
        (
            "tests/ir/test_canonical.py::test_equals_the_standard_library_on_any_json",
            "tests/ir/test_canonical.py::test_equals_the_standard_library_on_programs",
        ),
    ),
    FastPath(
        "amkspec.semantics.fast.prepare",
        "amkspec.semantics.registry.OpSemantics",
        ("tests/semantics/test_fast.py::test_a_prepared_step_is_bit_identical_and_follows_its_operands",),
    ),
    FastPath(
        "amkspec.semantics.quant._by_group",
        "amkspec.semantics.quant.expand_groups",
        ("tests/semantics/test_native_quant.py::test_grouped_views_compute_what_expanded_tables_do",),
    ),
    FastPath(
        "amkspec.footprint.fast.all_task_regions",
        "amkspec.footprint.reference.task_regions",
        (
            _PROOFS + "test_race_oracles.py::test_the_batch_equals_each_tasks_own_footprint",
            _FOOTPRINT + "test_keyed_footprints.py::test_the_keyed_batch_equals_each_tasks_own_footprint",
            _FOOTPRINT
            + "test_footprint_shortcuts.py::test_the_index_batch_on_well_formed_buffers_is_each_tasks_own",
        ),
    ),
    FastPath(
        "amkspec.footprint.memo.Memo.codes_of",
        "amkspec.footprint.memo.Memo.code",
        (_PROOFS + "test_race_oracles.py::test_codes_of_every_buffer_at_once_equals_one_at_a_time",),
    ),
    FastPath(
        "amkspec.footprint.memo.Memo",
        "amkspec.footprint.reference.task_footprint",
        (_PROOFS + "test_race_fast_paths.py::test_a_shared_memo_gives_every_task_its_fresh_footprint",),
    ),
    FastPath(
        "amkspec.footprint.rules.op_footprint",
        "amkspec.semantics.registry.OpSemantics",
        tuple(
            f"{_FOOTPRINT}test_against_semantics.py::test_footprint_{op}"
            for op in ("gemv_tile", "attention_tile", "kv_append", "fused")
        ),
    ),
    FastPath(
        "amkspec.footprint.regions.first_overlap",
        "amkspec.footprint.regions._sweep_overlap",
        (_PROOFS + "test_race_fast_paths.py::test_first_overlap_equals_the_sweep",),
    ),
    FastPath(
        "amkspec.footprint.rules._broadcast",
        "amkspec.footprint.rules._broadcast_axes",
        (_FOOTPRINT + "test_footprint_shortcuts.py::test_broadcast_of_any_shapes_is_the_axis_rule",),
    ),
    FastPath(
        "amkspec.proofs.index.ProgramIndex",
        "tests.proofs.test_index._direct",
        (
            _PROOFS + "test_index.py::test_the_index_agrees_with_the_definitions_on_arbitrary_programs",
            _PROOFS + "test_index.py::test_the_index_agrees_with_the_definitions_on_valid_programs",
            _PROOFS + "test_index.py::test_the_index_agrees_with_the_definitions_on_malformed_programs",
        ),
    ),
    FastPath(
        "amkspec.proofs.index.kahn",
        "amkspec.ir.graph.kahn_order",
        (_PROOFS + "test_index.py::test_kahn_over_positions_is_the_reference_kahn_order",),
    ),
    FastPath(
        "amkspec.proofs.reach.Reachability",
        "tests.proofs.test_validate_properties.test_reachability_agrees_with_brute_force",
        (_PROOFS + "test_validate_properties.py::test_reachability_agrees_with_brute_force",),
    ),
    FastPath(
        "amkspec.proofs.structure._scan_columns",
        "amkspec.proofs.structure._scan_each",
        (_PROOFS + "test_column_fast_paths.py::test_the_column_scan_answers_as_the_task_scan_or_not_at_all",),
    ),
    FastPath(
        "amkspec.proofs.structure._all_fine",
        "amkspec.proofs.structure.buffer_problem",
        (_PROOFS + "test_structure_fast_paths.py::test_the_buffer_column_test_implies_every_buffer_is_fine",),
    ),
    FastPath(
        "amkspec.proofs.memory._check_memoised",
        "amkspec.proofs.memory.check_memory_safety",
        (_PROOFS + "test_rule_memo.py::test_memoised_and_unmemoised_memory_checks_agree",),
    ),
    FastPath(
        "amkspec.vm.frame.Frame",
        "amkspec.vm.binding.bind",
        (
            "tests/vm/test_frame.py::test_launches_match_a_fresh_binding_on_valid_programs",
            "tests/vm/test_frame.py::test_launches_match_a_fresh_binding_step_after_step",
        ),
    ),
    FastPath(
        "amkspec.vm.plan.Plan.schedule",
        "tests.vm.strategies.sweep_order",
        ("tests/vm/test_scheduling.py::test_list_order_is_the_original_sweep_order",),
    ),
    FastPath(
        "amkspec.smt.queries._peel",
        "amkspec.smt.encoding.Encoding",
        (
            "tests/smt/test_reduced.py::test_sync_programs",
            "tests/smt/test_reduced.py::test_valid_programs",
            "tests/smt/test_reduced.py::test_arbitrary_programs",
        ),
    ),
    FastPath(
        "vm_cuda.MegakernelVM",
        "amkspec.vm.ReferenceVM",
        ("tests/vm_cuda/test_diff.py::test_hypothesis_valid_programs",),
    ),
)
"""Every fast path beside the reference that defines its behaviour, with the property tests that
compare them. The docs' architecture page renders this table."""
