"""Programs written by the original implementation and the bundled examples validate as it judged
them (spec §3; OPS_FACTS §16), and single mutations of the original's toy program produce exactly
the code of the rule they break."""

from __future__ import annotations

import gzip
from collections.abc import Callable

import pytest

from amkspec.ir import MegakernelProgram, Wait, load, loads
from amkspec.proofs import validate
from tests.conftest import EXAMPLES, FIXTURES


def toy1l() -> MegakernelProgram:
    return load(FIXTURES / "toy1L__default.json")


def test_toy1l_stats_match_the_original() -> None:
    result = validate(toy1l())
    assert result.ok and result.errors == [] and result.warnings == []
    stats = result.stats
    assert (stats["tasks"], stats["buffers"], stats["counters"], stats["edges"]) == (27, 37, 22, 33)
    assert stats["acyclic"] is True and stats["weight_MB"] == 0.28 and stats["sm_assigned"] is False


@pytest.mark.parametrize("name", ["toy1L__default.pos1.json.gz", "toy1L__default.pos2.json.gz"])
def test_later_positions_validate(name: str) -> None:
    result = validate(loads(gzip.decompress((FIXTURES / name).read_bytes()).decode()))
    assert result.ok and result.warnings == [], result.report()


def test_split_kv_fixture_validates() -> None:
    result = validate(load(FIXTURES / "toy2L__splitkv4__pos47.json"))
    assert result.ok and result.warnings == [], result.report()
    assert result.stats["sm_assigned"] is True


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_examples_behave_as_named(path) -> None:  # type: ignore[no-untyped-def]
    result = validate(load(path))
    assert result.ok is not path.name.startswith("rejected_"), result.report()


def _drop_wait(task: int, counter: int) -> Callable[[MegakernelProgram], None]:
    def apply(p: MegakernelProgram) -> None:
        p.tasks[task].waits = [w for w in p.tasks[task].waits if w.counter != counter]

    return apply


def _set_threshold(task: int, counter: int, threshold: int) -> Callable[[MegakernelProgram], None]:
    def apply(p: MegakernelProgram) -> None:
        for w in p.tasks[task].waits:
            if w.counter == counter:
                w.threshold = threshold

    return apply


def _backward_sm(p: MegakernelProgram) -> None:
    for t in p.tasks:
        t.sm = t.id % 2
    p.tasks[2].waits.append(Wait(p.tasks[4].out_counter, 1))  # q_proj (SM 0) waits on v_proj (SM 0)


MUTATIONS: dict[str, tuple[str, Callable[[MegakernelProgram], None]]] = {
    "attention ignores the K append": ("R305", _drop_wait(11, 9)),
    "o_proj residual ignores o_proj": ("R303", _drop_wait(13, 12)),
    "swiglu waits for one gate tile": ("R301", _set_threshold(19, 15, 1)),
    "swiglu waits for three gate tiles": ("D202", _set_threshold(19, 15, 3)),
    "lm_head tile 2 widens over tile 3": ("R306", lambda p: p.tasks[25].params.update(N_tile=128)),
    "lm_head tile 3 removed from coverage": ("R308", lambda p: p.tasks[26].params.update(N_tile=32)),
    "embed waits on the logits": ("D204", lambda p: p.tasks[0].waits.append(Wait(21, 4))),
    "a counter starts at 1": ("S103", lambda p: setattr(p.counters[5], "init", 1)),
    "meta names another GPU": ("O502", lambda p: p.meta.update(gpu="h100")),
    "a wait on q_proj's own counter": ("D203", lambda p: p.tasks[2].waits.append(Wait(2, 1))),
    "attention waits on the logits": ("D204", lambda p: p.tasks[11].waits.append(Wait(21, 4))),
    "q_proj waits on v_proj queued after it": ("D205", _backward_sm),
    "threads_per_block 48": ("O503", lambda p: setattr(p.config, "threads_per_block", 48)),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_single_mutation_of_the_original_toy_gives_its_code(name: str) -> None:
    code, mutate = MUTATIONS[name]
    prog = toy1l()
    mutate(prog)
    result = validate(prog)
    assert result.codes == [code], result.report()
