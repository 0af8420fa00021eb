"""Expected outputs of the run cases are not just what the ReferenceVM said (spec §9.2).

Every opcode × dtype case is recomputed here from its inputs with plain PyTorch formulas in
float64 (``torch.nn.functional`` and the eager model's helpers, never :mod:`amkspec.semantics`),
and every decode case with the eager model (:class:`amkspec.models.EagerDecoder`); both must agree
with the committed expectations within the case's tolerance. A ReferenceVM bug therefore cannot
silently become the standard.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from amkspec.conformance.cases import Case, default_cases_dir, discover, program_text
from amkspec.conformance.judge import compare
from amkspec.conformance.tensors import decode
from amkspec.ir import DType, loads
from amkspec.models import TOY, EagerDecoder, compare_logits
from amkspec.models.eager import apply_rope, rms_norm

T = torch.Tensor
RUN = [c for c in discover(default_cases_dir()) if c.kind == "run"]
OP_CASES = [c for c in RUN if "opcode" in c.body]
DECODE_CASES = [c for c in RUN if "model" in c.body]


def _dequant(q: T, scales: T, p: dict[str, Any], k: int) -> T:
    """Levels times scales; with flags 4 (the affine extension) levels times scales plus offsets,
    the table holding (scale, offset) pairs and an I4 level being the raw nibble."""
    affine, group = bool(p.get("flags", 0) & 4), p["group"]
    if p["qdtype"] == 7:  # packed nibbles, low nibble = even column, level = nibble - 8 (symmetric)
        b = q.to(torch.int64)
        nibbles = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(*b.shape[:-1], -1)[..., :k]
        levels = nibbles if affine else nibbles - 8
    else:
        levels = q.to(torch.int64)
    table = scales.double().repeat_interleave(group, dim=-2 if affine else -1)
    if affine:
        return levels.double() * table[..., :k, 0] + table[..., :k, 1]
    return levels.double() * table[..., :k]


def _attention(q: T, kc: T, vc: T, p: dict[str, Any]) -> T:
    rep = p["n_heads"] // p["n_kv_heads"]
    window = slice(p["kv_start"], p["kv_start"] + p["kv_len"])
    k = kc[window].repeat_interleave(rep, dim=1).transpose(0, 1)  # [heads, L, hd]
    v = vc[window].repeat_interleave(rep, dim=1).transpose(0, 1)
    probs = torch.softmax((q[:, None, :] @ k.transpose(1, 2)).squeeze(1) * p["scale"], dim=-1)
    return (probs[:, None, :] @ v).reshape(1, -1)


def _combine(parts: list[T], hd: int) -> T:
    m = torch.stack([x[:, hd] for x in parts])
    weights = torch.exp(m - m.max(0).values) * torch.stack([(x[:, hd + 1] > 0).double() for x in parts])
    acc = sum(w[:, None] * x[:, :hd] for w, x in zip(weights, parts, strict=True))
    mass = sum(w * x[:, hd + 1] for w, x in zip(weights, parts, strict=True))
    return (acc / mass[:, None]).reshape(1, -1)


def _rope(x: T, pos: T, p: dict[str, Any]) -> T:
    half = p["head_dim"] // 2
    inv = 1.0 / (p["theta"] ** (torch.arange(half, dtype=torch.float64) / half))
    ang = torch.cat([pos[:1].double()[:, None] * inv] * 2, dim=-1)
    return apply_rope(x[None], ang.cos(), ang.sin())[0]


def _kv_append(new: T, cache: T, p: dict[str, Any]) -> T:
    out = cache.clone()
    rows = new.reshape(-1, *cache.shape[1:])
    out[p["pos"] : p["pos"] + rows.shape[0]] = rows
    return out


Formula = Callable[[list[T], dict[str, Any]], T]
FORMULAS: dict[str, Formula] = {
    "NOP": lambda i, p: i[0],  # the NOP case copies x after the NOP
    "COPY": lambda i, p: i[0],
    "EMBED": lambda i, p: i[1][i[0].long()],
    "RMSNORM": lambda i, p: rms_norm(i[0], i[1], p["eps"]),
    "LAYERNORM": lambda i, p: F.layer_norm(i[0], (i[0].shape[-1],), i[1], i[2], p["eps"]),
    "GEMV_TILE": lambda i, p: (
        i[0]
        @ (_dequant(i[1], i[2], p, p["K"]) if p.get("qdtype") in (6, 7) else i[1]).T
    ),
    "GEMM_TILE": lambda i, p: i[0] @ i[1].T,
    "ATTENTION_TILE": lambda i, p: _attention(i[0], i[1], i[2], p),
    "ROPE": lambda i, p: _rope(i[0], i[1], p),
    "SILU_MUL": lambda i, p: F.silu(i[0]) * i[1],
    "GELU": lambda i, p: F.gelu(i[0]),
    "ADD": lambda i, p: i[0] + i[1],
    "MUL": lambda i, p: i[0] * i[1],
    "DEQUANT": lambda i, p: _dequant(i[0], i[1], p, 8),
    "SOFTMAX": lambda i, p: torch.softmax(i[0], dim=p.get("dim", -1)),
    "ALLREDUCE_SHARD": lambda i, p: sum(i[1:], i[0]),
    "KV_APPEND": lambda i, p: _kv_append(i[0], i[1], p),
    "SAMPLE_ARGMAX": lambda i, p: torch.from_numpy(np.argmax(i[0].numpy(), axis=-1)),
    "ATTENTION_COMBINE": lambda i, p: _combine(i, p["head_dim"]),
    "FUSED": lambda i, p: i[0] @ i[1].T + i[2],
}
"""Opcode → its formula over float64 inputs (integer inputs stay integer)."""


def _operands(case: Case) -> tuple[list[T], dict[str, Any], str, str]:
    step = case.body["steps"][0]
    prog = loads(program_text(step, case.base))
    task = prog.tasks[-1]
    arrays = {**case.body["weights"], **step["inputs"], **step.get("kv", {})}
    ins = []
    for b in (prog.buffers[i] for i in task.inputs):
        a = torch.from_numpy(np.array(decode(arrays[b.source or b.name], case.base)))
        ins.append(a.double() if b.dtype.is_float else a)
    out = prog.buffers[task.outputs[0]]
    return ins, dict(task.params), out.name, out.dtype.name


@pytest.mark.parametrize("case", OP_CASES, ids=[c.id for c in OP_CASES])
def test_numeric_case_agrees_with_an_independent_formula(case: Case) -> None:
    ins, params, name, dtype = _operands(case)
    value = FORMULAS[case.body["opcode"]](ins, params)
    want = case.body["steps"][0]["expect"]["outputs"][name]
    expected = decode(want, case.base)
    if DType[dtype].is_float:  # round the float64 result to the output dtype, as a VM must
        from amkspec.semantics import torch_dtype

        value = value.to(torch_dtype(DType[dtype])).double()
    got = {"dtype": dtype, "shape": list(expected.shape), "data": value.reshape(-1).tolist()}
    assert compare(got, want, case, case.body["tolerance"]) == ""


@pytest.mark.parametrize("case", DECODE_CASES, ids=[c.id for c in DECODE_CASES])
def test_decode_case_agrees_with_the_eager_model(case: Case) -> None:
    dtype = DType[next(r for r in case.requires if r.startswith("dtype:") and r != "dtype:I32")[6:]]
    from amkspec.semantics import torch_dtype

    weights = {
        k: torch.from_numpy(decode(v, case.base)).to(torch_dtype(dtype))
        for k, v in case.body["weights"].items()
    }
    tokens = case.body["model"]["tokens"]
    first = len(tokens) - len(case.body["steps"])
    eager = EagerDecoder(TOY, weights, dtype)
    for pos, token in enumerate(tokens):
        logits = eager.step([token])
        if pos >= first:
            want = case.body["steps"][pos - first]["expect"]["outputs"]["logits"]
            check = compare_logits(torch.from_numpy(decode(want, case.base)), logits, dtype)
            assert check.passed, (pos, check)
    assert math.isfinite(float(logits.float().abs().max()))
