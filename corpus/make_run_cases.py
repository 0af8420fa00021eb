"""Generate the numeric conformance cases (kind ``run``, spec §7, §9.2) under ``corpus/cases/run/``.

One case per opcode × dtype of :data:`MATRIX`: a one-task program (inputs IO_INPUT/WEIGHT/KV_CACHE,
output IO_OUTPUT), deterministic inputs, and the outputs the ReferenceVM computes; it cites the
opcode's rule only (``OP-<OPCODE>-1``), since one task cannot tell counter firing apart. Two firing
cases (:data:`FIRING`) list a consumer before its producers, with exact arithmetic, so that a task
started early or an out_counter incremented by more than 1 changes the output (rule EXEC-FIRE-1).
Small tensors are inline; larger ones are ``.npy`` files under ``run/data/``. Three decode cases run
the toy model for several launches with the KV caches threaded from one launch to the next, and
from a given prior KV state (rules EXEC-RESULT-1, EXEC-KV-1). ``tests/conformance/test_run_oracle.py``
recomputes every expected output with plain PyTorch formulas and the eager model, so a ReferenceVM
bug cannot become the standard.

Run ``python3 -m corpus.make_run_cases`` from the repository root to rewrite the files; a test
checks that the committed files equal this script's output, every tensor within the case's
tolerance (a computed float may differ in its last bits between CPUs).
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from amkspec.conformance.rules import QUANT_AFFINE_RULE, rule_id_for_op
from amkspec.conformance.tensors import encode
from amkspec.ir import BufferKind, DType, InstructionKind, MegakernelProgram, ProgramBuilder, dumps, to_dict
from amkspec.models.oracle import DEFAULT_TOLERANCE, TOLERANCES
from amkspec.programs.parts import GEMV_8, BufSpec, one_task, res
from amkspec.semantics import torch_dtype
from amkspec.vm import ReferenceVM

OUT_DIR = Path(__file__).resolve().parent / "cases" / "run"
DATA = "data"
INLINE_MAX = 64
"""Tensors with at most this many values are written inline; larger ones as ``.npy``."""

Op = InstructionKind
F32, F16, BF16, I32, I8, I4 = DType.F32, DType.F16, DType.BF16, DType.I32, DType.I8, DType.I4
FLOATS = (F32, F16, BF16)
Build = Callable[[DType], MegakernelProgram]


def tolerance_table() -> dict[str, list[float]]:
    """(atol, rtol) per float dtype: the model-level tolerances of spec §9.2, one table."""
    floats = (F32, F16, BF16, DType.F8E4M3, DType.F8E5M2)
    return {d.name: list(TOLERANCES.get(d, DEFAULT_TOLERANCE)) for d in floats}


PROVENANCE = {"model": "conformance/make_run_cases.py"}
"""``meta`` of every program here: a provenance tag, kept literal (the case files' and the transcript's
bytes)."""


def _one(op: InstructionKind, ins: list[BufSpec], out: tuple[str, DType, tuple[int, ...]] | int,
         params: dict[str, Any]) -> MegakernelProgram:
    """A one-task program; ``out`` is (name, dtype, shape) of its IO_OUTPUT, or an input's index."""
    output = out if isinstance(out, int) else res(out[0], out[2], out[1])
    return one_task(op, ins, output, params, meta=PROVENANCE)


IN, W, KV = BufferKind.IO_INPUT, BufferKind.WEIGHT, BufferKind.KV_CACHE
GEMV = GEMV_8
ATTN = {"head_dim": 4, "kv_start": 0, "kv_len": 6, "scale": 0.5, "n_heads": 4, "n_kv_heads": 2}


def _nop(dt: DType) -> MegakernelProgram:
    b = ProgramBuilder()
    x = b.new_buffer("x", IN, dt, (1, 8))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, dt, (1, 8))
    t = b.add_task(Op.NOP, [], [], label="nop")
    b.add_task(Op.COPY, [x], [y], waits=[b.after(t)], label="copy_after_nop")
    return b.build(meta=PROVENANCE)


def _fused(dt: DType) -> MegakernelProgram:
    steps = [
        {
            "op": int(Op.GEMV_TILE),
            "args": [{"in": 0}, {"in": 1}],
            "out": 0,
            "params": dict(GEMV),
            "out_shape": [1, 8],
            "out_dtype": "float32",
        },
        {"op": int(Op.ADD), "args": [{"s": 0}, {"in": 2}], "out": "final", "params": {}},
    ]
    return _one(
        Op.FUSED,
        [("x", IN, dt, (1, 8)), ("w", W, dt, (8, 8)), ("r", IN, dt, (1, 8))],
        ("y", dt, (1, 8)),
        {"recipe": {"steps": steps}},
    )


def _gemv_quant(dt: DType) -> MegakernelProgram:
    qdtype = 6 if dt is I8 else 7
    return _one(
        Op.GEMV_TILE,
        [("x", IN, F32, (1, 8)), ("q", W, dt, (8, 8)), ("scales", W, F16, (8, 2))],
        ("y", F32, (1, 8)),
        {**GEMV, "qdtype": qdtype, "group": 4},
    )


def _dequant(dt: DType) -> MegakernelProgram:
    qdtype = 6 if dt is I8 else 7
    return _one(
        Op.DEQUANT,
        [("q", W, dt, (4, 8)), ("scales", W, F16, (4, 2))],
        ("y", F32, (4, 8)),
        {"qdtype": qdtype, "group": 4},
    )


def _affine(op: InstructionKind) -> Build:
    """The affine (scale, offset) form of amkspec's quantized formats (spec §7.9; GGUF's Q4_1 for I4)."""
    params = {"qdtype": 0, "group": 4, "flags": 4}

    def build(dt: DType) -> MegakernelProgram:
        quant = {**params, "qdtype": 6 if dt is I8 else 7}
        if op is Op.DEQUANT:
            return _one(op, [("q", W, dt, (4, 8)), ("scales", W, F16, (4, 2, 2))], ("y", F32, (4, 8)), quant)
        return _one(op, [("x", IN, F32, (1, 8)), ("q", W, dt, (8, 8)), ("scales", W, F16, (8, 2, 2))],
                    ("y", F32, (1, 8)), {**GEMV, **quant})

    return build


VARIANT_MATRIX: list[tuple[InstructionKind, tuple[DType, ...], Build, str, str]] = [
    (Op.GEMV_TILE, (I8, I4), _affine(Op.GEMV_TILE), "quant_affine", QUANT_AFFINE_RULE),
    (Op.DEQUANT, (I8, I4), _affine(Op.DEQUANT), "quant_affine", QUANT_AFFINE_RULE),
]
"""Forms of an opcode beyond the spec (amkspec's strict profile), each case citing its own rule."""

MATRIX: list[tuple[InstructionKind, tuple[DType, ...], Build]] = [
    (Op.NOP, (F32,), _nop),
    (Op.COPY, tuple(DType), lambda dt: _one(Op.COPY, [("x", IN, dt, (2, 8))], ("y", dt, (2, 8)), {})),
    (
        Op.EMBED,
        FLOATS,
        lambda dt: _one(
            Op.EMBED, [("ids", IN, I32, (2,)), ("table", W, dt, (16, 8))], ("y", dt, (2, 8)), {"hidden": 8}
        ),
    ),
    (
        Op.RMSNORM,
        FLOATS,
        lambda dt: _one(
            Op.RMSNORM,
            [("x", IN, dt, (2, 8)), ("w", W, dt, (8,))],
            ("y", dt, (2, 8)),
            {"eps": 1e-6, "hidden": 8},
        ),
    ),
    (
        Op.LAYERNORM,
        FLOATS,
        lambda dt: _one(
            Op.LAYERNORM,
            [("x", IN, dt, (2, 8)), ("w", W, dt, (8,)), ("b", W, dt, (8,))],
            ("y", dt, (2, 8)),
            {"eps": 1e-5, "hidden": 8},
        ),
    ),
    (
        Op.GEMV_TILE,
        FLOATS,
        lambda dt: _one(
            Op.GEMV_TILE,
            [("x", IN, dt, (1, 8)), ("w", W, dt, (16, 8))],
            ("y", dt, (1, 16)),
            {"K": 8, "N_tile": 16, "n_off": 0},
        ),
    ),
    (Op.GEMV_TILE, (I8, I4), _gemv_quant),
    (
        Op.GEMM_TILE,
        FLOATS,
        lambda dt: _one(
            Op.GEMM_TILE,
            [("x", IN, dt, (3, 8)), ("w", W, dt, (8, 8))],
            ("y", dt, (3, 8)),
            {"M_tile": 3, **GEMV},
        ),
    ),
    (
        Op.ATTENTION_TILE,
        FLOATS,
        lambda dt: _one(
            Op.ATTENTION_TILE,
            [("q", IN, dt, (4, 4)), ("kcache", KV, dt, (8, 2, 4)), ("vcache", KV, dt, (8, 2, 4))],
            ("o", dt, (1, 16)),
            dict(ATTN),
        ),
    ),
    (
        Op.ROPE,
        FLOATS,
        lambda dt: _one(
            Op.ROPE,
            [("x", IN, dt, (4, 8)), ("pos", IN, I32, (1,))],
            ("y", dt, (4, 8)),
            {"head_dim": 8, "theta": 10000.0},
        ),
    ),
    (
        Op.SILU_MUL,
        FLOATS,
        lambda dt: _one(Op.SILU_MUL, [("g", IN, dt, (1, 8)), ("u", IN, dt, (1, 8))], ("y", dt, (1, 8)), {}),
    ),
    (Op.GELU, FLOATS, lambda dt: _one(Op.GELU, [("x", IN, dt, (1, 8))], ("y", dt, (1, 8)), {})),
    (
        Op.ADD,
        FLOATS,
        lambda dt: _one(Op.ADD, [("a", IN, dt, (2, 8)), ("b", IN, dt, (2, 8))], ("y", dt, (2, 8)), {}),
    ),
    (
        Op.MUL,
        FLOATS,
        lambda dt: _one(Op.MUL, [("a", IN, dt, (2, 8)), ("b", IN, dt, (2, 8))], ("y", dt, (2, 8)), {}),
    ),
    (Op.DEQUANT, (I8, I4), _dequant),
    (
        Op.SOFTMAX,
        FLOATS,
        lambda dt: _one(Op.SOFTMAX, [("x", IN, dt, (2, 8))], ("y", dt, (2, 8)), {"dim": -1}),
    ),
    (
        Op.ALLREDUCE_SHARD,
        FLOATS,
        lambda dt: _one(
            Op.ALLREDUCE_SHARD,
            [("s0", IN, dt, (1, 8)), ("s1", IN, dt, (1, 8)), ("s2", IN, dt, (1, 8))],
            ("y", dt, (1, 8)),
            {},
        ),
    ),
    (
        Op.KV_APPEND,
        FLOATS,
        lambda dt: _one(
            Op.KV_APPEND, [("k", IN, dt, (1, 2, 4)), ("kcache", KV, dt, (8, 2, 4))], 1, {"pos": 5}
        ),
    ),
    (
        Op.SAMPLE_ARGMAX,
        FLOATS,
        lambda dt: _one(Op.SAMPLE_ARGMAX, [("logits", IN, dt, (2, 16))], ("tok", I32, (2,)), {}),
    ),
    (
        Op.ATTENTION_COMBINE,
        FLOATS,
        lambda dt: _one(
            Op.ATTENTION_COMBINE,
            [("p0", IN, dt, (4, 6)), ("p1", IN, dt, (4, 6))],
            ("o", dt, (1, 16)),
            {"head_dim": 4, "n_heads": 4, "n_kv_heads": 2},
        ),
    ),
    (Op.FUSED, FLOATS, _fused),
]
"""Every opcode with the dtypes its numeric cases cover (the float dtypes a model runs in; every
dtype for COPY; the quantized dtypes for DEQUANT and the quantized GEMV path)."""


def _fire_join() -> MegakernelProgram:
    """y = a + c, where COPY tasks write a and c under one counter; the consumer is listed between
    them and waits for both (threshold 2). Firing it after one producer gives y = x, not 2x."""
    b = ProgramBuilder()
    x = b.new_buffer("x", IN, F32, (1, 8))
    a, c = (b.new_buffer(n, BufferKind.ACTIVATION, F32, (1, 8)) for n in ("a", "c"))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, F32, (1, 8))
    done = b.new_counter("both copies")
    b.add_task(Op.COPY, [x], [a], out_counter=done, label="copy_a")
    b.add_task(Op.ADD, [a, c], [y], waits=[(done, 2)], label="add_after_both")
    b.add_task(Op.COPY, [x], [c], out_counter=done, label="copy_c")
    return b.build(meta=PROVENANCE)


def _fire_chain() -> MegakernelProgram:
    """y = COPY(a) listed before a = x + x: started before its producer ends, it copies zeros."""
    b = ProgramBuilder()
    x = b.new_buffer("x", IN, F32, (1, 8))
    a = b.new_buffer("a", BufferKind.ACTIVATION, F32, (1, 8))
    y = b.new_buffer("y", BufferKind.IO_OUTPUT, F32, (1, 8))
    doubled = b.new_counter("doubled")
    b.add_task(Op.COPY, [a], [y], waits=[(doubled, 1)], label="copy_after_add")
    b.add_task(Op.ADD, [x, x], [a], out_counter=doubled, label="double")
    return b.build(meta=PROVENANCE)


FIRING: dict[str, tuple[str, Callable[[], MegakernelProgram]]] = {
    "fire_join": ("a consumer listed between the two producers of its counter waits for both", _fire_join),
    "fire_chain": ("a consumer listed before its producer waits for it", _fire_chain),
}
"""The counter-firing cases: exact F32 values (copies and x + x), so only the firing order can
change the output."""


def sample(name: str, dtype: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Deterministic, exactly representable values for one buffer (indices and levels in range)."""
    from amkspec.semantics import storage_shape

    shape = storage_shape(dtype, shape)
    if name == "ids":
        return rng.integers(0, 16, shape).astype(np.int32)
    if name == "pos":
        return rng.integers(0, 8, shape).astype(np.int32)
    if name == "scales":
        return rng.uniform(0.01, 0.1, shape).astype(np.float16).astype(np.float32)
    if dtype.is_float:
        values = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
        if name.startswith("p") and len(shape) == 2 and shape[-1] == 6:  # combine partials: l > 0
            values[:, -1] = values[:, -1].abs() + 0.5
        return values.to(torch_dtype(dtype)).float().numpy()
    if dtype is DType.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype is I8:
        return rng.integers(-8, 8, shape).astype(np.int8)
    if dtype in (I4, DType.U8):
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.integers(-1000, 1000, shape).astype(np.int32)


class Writer:
    """Collects the case files and ``.npy`` blobs of one generation (name → bytes)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def tensor(self, stem: str, array: np.ndarray, dtype: DType) -> dict[str, Any]:
        if array.size <= INLINE_MAX:
            return encode(array, dtype.name)
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
        rel = f"{DATA}/{stem}.npy"
        self.files[rel] = buf.getvalue()
        return {"dtype": dtype.name, "shape": list(array.shape), "npy": rel}

    def json(self, rel: str, doc: Any) -> None:
        self.files[rel] = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def _bind(prog: MegakernelProgram, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], ...]:
    weights, inputs, kv = {}, {}, {}
    for b in prog.buffers:
        target = {BufferKind.WEIGHT: weights, BufferKind.IO_INPUT: inputs, BufferKind.KV_CACHE: kv}.get(
            b.kind
        )
        if target is not None:
            target[b.source or b.name if b.kind is BufferKind.WEIGHT else b.name] = sample(
                b.name, b.dtype, b.shape, rng
            )
    return weights, inputs, kv


def _tensors(w: Writer, stem: str, prog: MegakernelProgram, arrays: dict[str, Any]) -> dict[str, Any]:
    by_name = {(b.source or b.name): b for b in prog.buffers}
    return {k: w.tensor(f"{stem}.{k}", np.asarray(v), by_name[k].dtype) for k, v in arrays.items()}


def _outputs(prog: MegakernelProgram, out: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    dtypes = {b.name: b.dtype for b in prog.buffers}
    return {k: (v.float().numpy() if dtypes[k].is_float else v.numpy()) for k, v in out.items()}


def op_case(w: Writer, op: InstructionKind, dt: DType, build: Build, variant: str = "",
            rule: str | None = None) -> None:
    """One opcode × dtype case; a ``variant`` (a form of the opcode with a ``rule`` of its own, e.g.
    the affine quantized tables) is named in the case's file name."""
    stem = "_".join(p for p in (op.name.lower(), dt.name.lower(), variant) if p)
    prog = build(dt)
    rng = np.random.default_rng(_seed(stem))
    weights, inputs, kv = _bind(prog, rng)
    out = ReferenceVM(prog).run(weights, inputs, kv)
    dtypes = sorted({b.dtype.name for b in prog.buffers})
    w.json(
        f"{stem}.json",
        {
            "kind": "run",
            "description": f"{op.name} over {dt.name} operands"
            + (f", the {variant.replace('_', ' ')} form ({rule})" if variant else "")
            + ": one task, outputs within tolerance",
            "rules": [rule or rule_id_for_op(op)],
            "requires": ["run", *(f"dtype:{d}" for d in dtypes)],
            "opcode": op.name,
            "dtype": dt.name,
            "tolerance": tolerance_table(),
            "weights": _tensors(w, stem, prog, weights),
            "kv_buffers": sorted(kv),
            "steps": [
                {
                    "program": to_dict(prog),
                    "inputs": _tensors(w, stem, prog, inputs),
                    "kv": _tensors(w, f"{stem}.kv", prog, kv),
                    "expect": {"outputs": _tensors(w, f"{stem}.out", prog, _outputs(prog, out))},
                }
            ],
        },
    )


def fire_case(w: Writer, stem: str, description: str, prog: MegakernelProgram) -> None:
    rng = np.random.default_rng(_seed(stem))
    weights, inputs, kv = _bind(prog, rng)
    out = ReferenceVM(prog).run(weights, inputs, kv)
    w.json(
        f"{stem}.json",
        {
            "kind": "run",
            "description": f"{description}: the output shows whether it started too early",
            "rules": ["EXEC-FIRE-1"],
            "requires": ["run", "dtype:F32"],
            "tolerance": tolerance_table(),
            "weights": {},
            "kv_buffers": [],
            "steps": [
                {
                    "program": to_dict(prog),
                    "inputs": _tensors(w, stem, prog, inputs),
                    "expect": {"outputs": _tensors(w, f"{stem}.out", prog, _outputs(prog, out))},
                }
            ],
        },
    )


def _seed(stem: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(stem))


def decode_case(w: Writer, name: str, dt: DType, launches: int, skip: int) -> None:
    """The toy model for ``launches`` decode steps; the first ``skip`` run here and their KV is the
    case's prior state (``skip`` 0: the case starts from empty caches)."""
    from amkspec.lower.decode import step_inputs
    from amkspec.lower.lowering import lower
    from amkspec.models import TOY, make_weights

    weights = {k: v.to(torch_dtype(dt)).float().numpy() for k, v in make_weights(TOY).items()}
    tokens = [3, 17, 42, 7, 99, 5][:launches]
    kv: dict[str, torch.Tensor] | None = None
    steps: list[dict[str, Any]] = []
    prior: dict[str, Any] = {}
    for pos, tok in enumerate(tokens):
        prog = lower(TOY, pos=pos, dtype=dt)
        inputs = step_inputs(pos, [tok])
        out = ReferenceVM(prog).run(weights, inputs, kv)
        kv_names = [b.name for b in prog.buffers if b.kind is BufferKind.KV_CACHE]
        if pos == skip and skip:
            prior = (
                _tensors(w, f"{name}.prior", prog, {k: _outputs(prog, kv)[k] for k in kv_names}) if kv else {}
            )
        if pos >= skip:
            rel = f"{DATA}/{name}.pos{pos}.program.json"
            w.files[rel] = dumps(prog).encode()
            step: dict[str, Any] = {
                "program_file": rel,
                "inputs": _tensors(w, f"{name}.pos{pos}", prog, inputs),
                "expect": {"outputs": _tensors(w, f"{name}.pos{pos}.out", prog, _outputs(prog, out))},
            }
            if pos == skip and skip:
                step = {"kv": prior, **step}
            steps.append(step)
        kv = {k: out[k] for k in kv_names}
    by = lambda: prog.buffers
    w.json(
        f"{name}.json",
        {
            "kind": "run",
            "description": (
                f"toy model ({TOY.n_layers} layer) in {dt.name}: decode positions {skip}..{launches - 1}, "
                + ("starting from a given prior KV state" if skip else "starting from empty caches")
                + "; each launch's KV caches are threaded into the next"
            ),
            "rules": ["EXEC-RESULT-1", "EXEC-KV-1"],
            "requires": ["run", f"dtype:{dt.name}", "dtype:I32"],
            "model": {"name": TOY.name, "tokens": tokens},
            "tolerance": tolerance_table(),
            "weights": {k: w.tensor(f"{name}.w.{k}", v, dt) for k, v in weights.items()},
            "kv_buffers": sorted(b.name for b in by() if b.kind is BufferKind.KV_CACHE),
            "steps": steps,
        },
    )


def build_files() -> dict[str, bytes]:
    """Relative path under ``cases/run`` → bytes, for every case and blob."""
    w = Writer()
    for op, dtypes, build in MATRIX:
        for dt in dtypes:
            op_case(w, op, dt, build)
    for op, dtypes, build, variant, rule in VARIANT_MATRIX:
        for dt in dtypes:
            op_case(w, op, dt, build, variant, rule)
    for stem, (description, build_fire) in FIRING.items():
        fire_case(w, stem, description, build_fire())
    decode_case(w, "decode_toy_f32", F32, launches=3, skip=0)
    decode_case(w, "decode_toy_f32_prior_kv", F32, launches=5, skip=3)
    decode_case(w, "decode_toy_bf16", BF16, launches=2, skip=0)
    return w.files


def main() -> int:
    files = build_files()
    if OUT_DIR.exists():
        shutil.rmtree(OUT_DIR)
    for rel, data in files.items():
        path = OUT_DIR / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    print(f"wrote {sum(1 for r in files if r.endswith('.json') and '/' not in r)} run cases to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
