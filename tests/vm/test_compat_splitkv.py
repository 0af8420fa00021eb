"""The original's split-KV program (toy-2L at pos 47, four partitions) on the ReferenceVM agrees with
the eager model given the same KV history (OPS_FACTS §9.4, §11)."""

from __future__ import annotations

import pytest
import torch

from amkspec.ir import InstructionKind, load
from amkspec.models import TOY_2L, EagerDecoder, compare_logits, make_weights
from amkspec.vm import ReferenceVM, SeededRandom
from tests.conftest import FIXTURES

pytestmark = pytest.mark.numerics


def test_split_kv_program_of_the_original_matches_eager() -> None:
    program = load(FIXTURES / "toy2L__splitkv4__pos47.json")
    assert sum(t.op is InstructionKind.ATTENTION_COMBINE for t in program.tasks) == 2
    weights = make_weights(TOY_2L)
    eager = EagerDecoder(TOY_2L, weights)
    eager.reset(1)
    tokens = [(31 * i + 5) % 256 for i in range(48)]
    for t in tokens[:-1]:
        eager.step([t])
    kv = {f"L{n}.{kind}cache": cache[n][0].clone() for n in range(2)
          for kind, cache in (("k", eager.k_cache), ("v", eager.v_cache))}
    feed = {"token_id": [tokens[-1]], "pos": [47], "reshape_id0": [0]}
    listed = ReferenceVM(program).run(weights, feed, kv)
    expected = eager.step([tokens[-1]])
    check = compare_logits(listed["logits"], expected)
    assert check.passed and check.max_abs_err < 1e-4, check
    shuffled = ReferenceVM(program, policy=SeededRandom(7)).run(weights, feed, kv)
    assert torch.equal(listed["logits"], shuffled["logits"])
