"""Every opcode's device code under ThreadSanitizer and AddressSanitizer+UBSan (spec §8.6).

One program holds an independent task of each of the 20 opcodes (plus the quantized GEMV
paths), spread over the CPU build's blocks so they run concurrently; each sanitized driver
must report nothing, finish OK and match the ReferenceVM. Block sizes 3, 4 and 40: the
block reductions run with a non-power-of-two block, and GEMV thread groups of a warp
take their pairs in passes with a partial group left idle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import torch

from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder
from amkspec.ir.graph import writers_by_buffer
from amkspec.proofs import validate
from amkspec.semantics import quantize
from amkspec.vm import ReferenceVM
from amkspec.vm.binding import bind
from tests.vm_cuda.test_ops import Operand, clone, compare, gen, inp, out
from tests.vm_cuda.test_sanitizers import REPORTS
from vm_cuda.cpu import CPU_MAX_BLOCKS, run_driver
from vm_cuda.pack import Packer
from vm_cuda.status import RunStatus, decode

K = InstructionKind
BK = BufferKind
Case = tuple[InstructionKind, list[Operand], list[Operand], dict[str, Any]]


def cases() -> list[Case]:
    """One small task per opcode (dtypes mixed), operands named per task."""
    g = gen(31)
    f32, f16, bf16 = DType.F32, DType.F16, DType.BF16
    q4 = quantize(torch.randn(6, 16, generator=g), 4, 8)
    q8 = quantize(torch.randn(6, 16, generator=g), 8, 16)
    cache = inp("cache", bf16, (5, 2, 4), g, BK.KV_CACHE)
    recipe = {
        "steps": [
            {"op": int(K.ADD), "args": [{"in": 0}, {"in": 1}], "out": 0},
            {
                "op": int(K.RMSNORM),
                "args": [{"s": 0}, {"in": 2}],
                "out": "final",
                "params": {"hidden": 8, "eps": 1e-6},
            },
        ]
    }
    attn = {"head_dim": 4, "n_heads": 4, "n_kv_heads": 2, "kv_start": 1, "kv_len": 5, "scale": 0.5}
    ids = Operand("ids", DType.I32, (2,), value=torch.tensor([3, 1], dtype=torch.int32))
    parts = [Operand(f"p{i}", f32, (2, 6), value=torch.randn(2, 6, generator=g).abs()) for i in range(3)]
    return [
        (K.NOP, [], [], {}),
        (K.COPY, [inp("src", f32, (3, 5), g)], [out("dst", bf16, (3, 5))], {}),
        (K.EMBED, [ids, inp("table", f16, (4, 6), g, BK.WEIGHT)], [out("e", f32, (2, 6))], {"hidden": 6}),
        (
            K.RMSNORM,
            [inp("x", bf16, (2, 7), g), inp("w", f32, (7,), g, BK.WEIGHT)],
            [out("y", f16, (2, 7))],
            {"hidden": 7, "eps": 1e-5},
        ),
        (
            K.LAYERNORM,
            [inp("x", f32, (3, 9), g), inp("w", f16, (9,), g, BK.WEIGHT), inp("b", f32, (9,), g, BK.WEIGHT)],
            [out("y", f32, (3, 9))],
            {"hidden": 9, "eps": 1e-5},
        ),
        (
            K.GEMV_TILE,
            [inp("x", f16, (1, 10), g), inp("w", f16, (5, 10), g, BK.WEIGHT)],
            [out("y", f32, (1, 5))],
            {"K": 10, "N_tile": 5, "n_off": 0},
        ),
        (
            K.GEMM_TILE,
            [
                inp("x", f32, (3, 6), g),
                inp("w", bf16, (4, 6), g, BK.WEIGHT),
                inp("b", f32, (4,), g, BK.WEIGHT),
            ],
            [out("y", f32, (3, 4))],
            {"K": 6, "N_tile": 4, "n_off": 0, "M_tile": 3, "m_off": 0},
        ),
        (
            K.GEMV_TILE,
            [
                inp("x", f32, (2, 16), g),
                Operand("qw", DType.I4, (6, 16), BK.WEIGHT, q4.q),
                Operand("sc", f16, (6, 2), BK.WEIGHT, q4.scales),
            ],
            [out("y", f32, (2, 6))],
            {"K": 16, "N_tile": 6, "n_off": 0, "qdtype": int(DType.I4), "group": 8},
        ),
        (
            K.GEMV_TILE,
            [
                inp("x", bf16, (1, 16), g),
                Operand("qw", DType.I8, (6, 16), BK.WEIGHT, q8.q),
                Operand("sc", f16, (6, 1), BK.WEIGHT, q8.scales),
            ],
            [out("y", f32, (1, 6))],
            {"K": 16, "N_tile": 6, "n_off": 0, "qdtype": int(DType.I8), "group": 16},
        ),
        (
            K.ATTENTION_TILE,
            [inp("q", f32, (4, 4), g), inp("k", f16, (7, 2, 4), g), inp("v", f16, (7, 2, 4), g)],
            [out("o", f32, (1, 16))],
            attn,
        ),
        (
            K.ROPE,
            [inp("x", f32, (2, 3, 8), g), inp("pos", DType.I32, (2,), g, lo=0, hi=50)],
            [out("y", bf16, (2, 3, 8))],
            {"head_dim": 8, "theta": 10000.0},
        ),
        (K.SILU_MUL, [inp("a", f32, (2, 5), g), inp("b", bf16, (2, 5), g)], [out("y", f32, (2, 5))], {}),
        (K.GELU, [inp("a", f16, (9,), g)], [out("y", f16, (9,))], {}),
        (K.ADD, [inp("a", f32, (2, 5), g), inp("b", f32, (2, 5), g)], [out("y", f32, (2, 5))], {}),
        (K.MUL, [inp("a", f32, (2, 5), g)], [out("y", f32, (2, 5))], {"scale": 3.0}),
        (
            K.DEQUANT,
            [Operand("q", DType.I4, (6, 16), value=q4.q), Operand("s", f16, (6, 2), value=q4.scales)],
            [out("y", f32, (6, 16))],
            {"qdtype": int(DType.I4), "group": 8},
        ),
        (K.SOFTMAX, [inp("x", f32, (3, 11), g)], [out("y", f32, (3, 11))], {"dim": 0}),
        (K.ALLREDUCE_SHARD, [inp(f"s{i}", f32, (4,), g) for i in range(3)], [out("y", f32, (4,))], {}),
        (K.KV_APPEND, [inp("new", f32, (1, 8), g), cache], [cache], {"pos": 3}),
        (K.SAMPLE_ARGMAX, [inp("logits", f32, (2, 33), g)], [out("tok", DType.I32, (2,))], {}),
        (K.ATTENTION_COMBINE, parts, [out("y", f32, (1, 8))], {"head_dim": 4}),
        (
            K.FUSED,
            [inp("a", f32, (1, 8), g), inp("b", f32, (1, 8), g), inp("w", f32, (8,), g, BK.WEIGHT)],
            [out("y", f32, (1, 8))],
            {"recipe": recipe},
        ),
    ]


def merged(
    all_cases: Sequence[Case],
) -> tuple[MegakernelProgram, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """One program of independent tasks; buffer names get a per-task prefix."""
    b = ProgramBuilder()
    weights: dict[str, Any] = {}
    inputs: dict[str, Any] = {}
    kv: dict[str, Any] = {}
    for t, (op, ins, outs, params) in enumerate(all_cases):
        ids: dict[str, int] = {}
        for o in (*ins, *outs):
            if o.name not in ids:
                name = f"t{t}.{o.name}"
                ids[o.name] = b.new_buffer(name, o.kind, o.dtype, o.shape)
                if o.value is not None:
                    {BK.WEIGHT: weights, BK.KV_CACHE: kv}.get(o.kind, inputs)[name] = o.value
        b.add_task(op, [ids[o.name] for o in ins], [ids[o.name] for o in outs], params=params)
    return b.build(), weights, inputs, kv


def sanitized_run(
    prog: MegakernelProgram, variant: str, weights: Any, inputs: Any, kv: Any, threads: int
) -> tuple[dict[str, torch.Tensor], RunStatus, str]:
    """Run ``prog`` in the sanitized standalone driver; outputs, status and the driver's stderr."""
    bound = bind(prog, weights, inputs, clone(kv), set(writers_by_buffer(prog)))
    image = Packer(prog, max_blocks=CPU_MAX_BLOCKS).image(bound, timeout_s=60.0)
    data, proc = run_driver(image, variant, threads)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = {
        b.name: image.tensor(k, data)
        for k, b in enumerate(prog.buffers)
        if b.kind in (BK.IO_OUTPUT, BK.KV_CACHE)
    }
    return got, decode(data, prog), proc.stderr


def test_the_merged_program_names_every_opcode() -> None:
    prog = merged(cases())[0]
    assert {t.op for t in prog.tasks} == set(InstructionKind)
    assert validate(prog).ok


@pytest.mark.parametrize("variant", ["tsan", "asan"])
def test_every_opcode_runs_clean_under_the_sanitizers(cxx: str, variant: str) -> None:
    prog, weights, inputs, kv = merged(cases())
    ref = ReferenceVM(prog).run(clone(weights), clone(inputs), clone(kv))
    for threads in (3, 4, 40):
        got, status, report = sanitized_run(prog, variant, weights, inputs, kv, threads)
        assert not any(r in report for r in REPORTS), report[-4000:]
        assert status.kind == "OK", status.detail
        compare(got, ref, exact=False)
