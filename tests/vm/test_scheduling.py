"""Counter-driven scheduling: list order equals the original's sweeps, random policy, deadlock (spec §2)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.ir import BufferKind, Counter, DType, MegakernelProgram, ProgramBuilder, Task, Wait
from amkspec.ir.graph import dependency_edges
from amkspec.programs.small import scale_chain
from amkspec.vm import DeadlockError, ExecutionError, ReferenceVM, SeededRandom
from tests.vm.strategies import K, nop_dags, sweep_order


@given(nop_dags())
def test_list_order_is_the_original_sweep_order(program: MegakernelProgram) -> None:
    vm = ReferenceVM(program)
    vm.run({}, {})
    assert vm.last_stats is not None
    assert vm.last_stats.order == sweep_order(program)


@given(nop_dags(), st.integers(0, 2**32))
def test_random_order_respects_every_dependency(program: MegakernelProgram, seed: int) -> None:
    vm = ReferenceVM(program, policy=SeededRandom(seed))
    vm.run({}, {})
    assert vm.last_stats is not None
    order = vm.last_stats.order
    assert sorted(order) == [t.id for t in program.tasks]
    at = {task: i for i, task in enumerate(order)}
    assert all(at[a] < at[b] for a, b in dependency_edges(program))


def test_random_policy_is_seeded() -> None:
    program = MegakernelProgram(
        counters=[Counter(i) for i in range(8)], tasks=[Task(i, K.NOP, [], [], i) for i in range(8)]
    )
    orders = []
    for seed in (1, 1, 2):
        vm = ReferenceVM(program, policy=SeededRandom(seed))
        vm.run({}, {})
        assert vm.last_stats is not None
        orders.append(vm.last_stats.order)
    assert orders[0] == orders[1] and orders[0] != orders[2]


def test_stats_split_numerics_and_scheduling_time() -> None:
    vm = ReferenceVM(scale_chain())
    vm.run({}, {"x": [[1.0, 2.0, 3.0, 4.0]]})
    stats = vm.last_stats
    assert stats is not None and stats.policy == "list" and stats.order == [0, 1]
    assert set(stats.task_s) == {0, 1} and stats.compute_s == pytest.approx(sum(stats.task_s.values()))
    assert stats.sched_s >= 0 and 0 <= stats.overhead_share <= 1


def _cycle() -> MegakernelProgram:
    return MegakernelProgram(
        counters=[Counter(0), Counter(1), Counter(2)],
        tasks=[
            Task(0, K.NOP, [], [], 0, label="free"),
            Task(1, K.NOP, [], [], 1, [Wait(2, 1)], label="a"),
            Task(2, K.NOP, [], [], 2, [Wait(1, 1), Wait(0, 1)], label="b"),
        ],
    )


def test_a_stuck_run_names_the_tasks_their_waits_and_the_counters() -> None:
    vm = ReferenceVM(_cycle(), _unsafe_skip_validation=True)
    with pytest.raises(DeadlockError) as info:
        vm.run({}, {})
    message = str(info.value)
    assert "1:a waits on counter 2 >= 1 (is 0)" in message
    assert "2:b waits on counter 1 >= 1 (is 0)" in message and "counter 0" not in message.split("2:b")[1][:40]
    assert "counters: 0=1, 1=0, 2=0" in message
    assert [s.task for s in info.value.stuck] == [1, 2]


def test_a_failing_op_is_an_execution_error_naming_the_task() -> None:
    b = ProgramBuilder()
    ids = b.new_buffer("token_id", BufferKind.IO_INPUT, DType.I32, (1,))
    table = b.new_buffer("table", BufferKind.WEIGHT, DType.F32, (4, 2))
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, 2))
    b.add_task(K.EMBED, [ids, table], [out], params={"hidden": 2}, label="embed")
    vm = ReferenceVM(b.build())
    with pytest.raises(ExecutionError, match=r"0:embed \(EMBED\) failed: EMBED: ids \[9\] out of range"):
        vm.run({"table": torch.zeros(4, 2)}, {"token_id": [9]})


@settings(max_examples=10)
@given(st.integers(0, 1000))
def test_any_policy_gives_the_same_numbers_on_a_valid_program(seed: int) -> None:
    program = scale_chain()
    x = {"x": torch.tensor([[1.0, -2.0, 0.5, 3.0]])}
    listed = ReferenceVM(program).run({}, x)
    shuffled = ReferenceVM(program, policy=SeededRandom(seed)).run({}, x)
    assert torch.equal(listed["z"], shuffled["z"]) and torch.equal(listed["z"], 6 * x["x"])


def test_counters_reset_and_the_collector_is_restored_after_every_launch() -> None:
    import gc

    vm = ReferenceVM(scale_chain())
    orders = []
    for _ in range(2):
        vm.run({}, {"x": [[1.0, 2.0, 3.0, 4.0]]})
        assert vm.last_stats is not None and gc.isenabled()
        orders.append(vm.last_stats.order)
    assert orders == [[0, 1], [0, 1]]
