"""The explicit-state model checker: exhaustive, independent of Z3."""

from __future__ import annotations

import pytest
from hypothesis import given

from amkspec.evidence.model_check import StateLimit, check
from amkspec.evidence.replay import replay
from amkspec.ir import load
from amkspec.programs.gallery import EXAMPLES, layered, rule_only_partial_join
from amkspec.programs.strategies import valid_programs
from tests.conftest import FIXTURES


@pytest.mark.parametrize(
    "name, kind",
    [
        ("partial-join read race", "read-race"),
        ("KV cache read before its append", "read-race"),
        ("overlapping tiles", "write-race"),
        ("unsatisfiable threshold", "deadlock"),
        ("SM-queue deadlock", "deadlock"),
        ("cycle", "deadlock"),
    ],
)
def test_finds_each_bug_with_a_legal_trace(name: str, kind: str) -> None:
    prog = EXAMPLES[name]()
    result = check(prog)
    found = [f for f in result.findings if f.kind == kind]
    assert found
    for f in found:
        replay(prog, f.trace)


def test_rule_only_program_is_clean() -> None:
    assert check(rule_only_partial_join()).findings == ()


def test_toy_fixture_is_clean() -> None:
    result = check(load(FIXTURES / "toy1L__default.json"))
    assert result.findings == () and result.states > 27


def test_state_limit() -> None:
    with pytest.raises(StateLimit):
        check(layered(16), max_states=50)


@given(valid_programs(max_tasks=8))
def test_valid_programs_have_no_bad_state(prog) -> None:  # type: ignore[no-untyped-def]
    assert check(prog).findings == ()


# -- issue 9: everything validate rejects on is modelled --------------------------------------

from amkspec.evidence.exhaustive.domain import build  # noqa: E402
from amkspec.ir import BufferKind, Counter, loads  # noqa: E402
from tests.evidence.test_exhaustive import COVERAGE_GAP  # noqa: E402

X, W, B0, B1 = 0, 1, 2, 3
ACT, OUT, WT = 0, 1, 2


def _prog(kinds: tuple[int, ...], tasks: list[tuple[int, int, int, int, tuple[int, ...], int]], **kw):  # type: ignore[no-untyped-def]
    return build((kinds, kw.get("inits", (0,) * len(tasks[0][4])), kw.get("paged", False), tuple(tasks)))


def test_counter_init_lets_a_reader_run_before_its_writer() -> None:
    """Counter 0 starts at 1: the reader's wait already holds (spec §2.2)."""
    prog = _prog((ACT, OUT), [(-1, 0, -1, 0, (0,), -1), (0, 1, -1, 0, (1,), -1)], inits=(1,))
    assert "read-race" in check(prog).kinds()
    prog.counters[0] = Counter(0, 0)
    assert "read-race" not in check(prog).kinds()


def test_a_write_to_a_read_only_kind_is_a_finding() -> None:
    prog = _prog((WT,), [(-1, 0, -1, 0, (0,), -1)])
    assert check(prog).kinds() == {"readonly-write"}
    assert prog.buffers[2].kind is BufferKind.WEIGHT


def test_a_self_read_of_an_unwritten_output_is_a_finding() -> None:
    """Finding 6: a task reading its own output reads unwritten data."""
    prog = _prog((ACT,), [(0, 0, -1, 0, (0,), -1)])
    assert "unwritten-read" in check(prog).kinds()


def test_an_uncovered_column_is_an_unwritten_read() -> None:
    prog = loads(COVERAGE_GAP)
    assert "unwritten-read" in check(prog).kinds()


def test_same_sm_order_is_not_a_release() -> None:
    """Writer then reader on SM 0, no counter between them: always ordered in time, never fenced."""
    prog = _prog((ACT, OUT), [(-1, 0, -1, 0, (0,), 0), (0, 1, -1, 0, (0,), 0)])
    kinds = check(prog).kinds()
    assert "unfenced-read" in kinds and "read-race" not in kinds


def test_unordered_page_mates_clobber_and_ordered_ones_do_not() -> None:
    unordered = _prog((ACT, ACT), [(-1, 0, -1, 0, (0, 0), -1), (-1, 1, -1, 1, (0, 0), -1)], paged=True)
    assert "page-clobber" in check(unordered).kinds()
    ordered = _prog((ACT, ACT), [(-1, 0, -1, 0, (0, 0), -1), (-1, 1, -1, 1, (1, 0), -1)], paged=True)
    assert "page-clobber" not in check(ordered).kinds()


def test_gemm_tiles_with_different_row_offsets_overlap() -> None:
    """Finding 1: GEMM_TILE writes every row of its columns, whatever m_off says."""
    prog = _prog((ACT,), [(-1, 0, 0, 0, (0,), -1), (-1, 0, 0, 0, (0,), -1)])
    for t, m_off in zip(prog.tasks, (0, 1), strict=True):
        t.op = t.op.GEMM_TILE
        t.params.update({"M_tile": 1, "m_off": m_off})
    assert "write-race" in check(prog).kinds()
