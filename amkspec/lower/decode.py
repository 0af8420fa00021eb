"""The greedy decode loop: re-lower per position, run the ReferenceVM, thread the KV caches, and
compare every step with the eager model (the lowering guide, "The decode loop and the oracle").

Each launch is one decode step at absolute position ``pos`` (``kv_len = pos + 1``). Prompt tokens
are fed one per step; after the prompt, the next token is the argmax of the eager model's logits
(the reference), so the VM and the eager model always see the same tokens and a disagreement
shows up as a failed :class:`~amkspec.models.LogitCheck` rather than a diverged sequence. With
``eager=False`` the VM's own argmax is fed back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import torch

from amkspec.ir import BufferKind, DType, GpuTarget, MegakernelProgram, ScheduleConfig
from amkspec.lower.lowering import LoweringError, lower, resolve_model
from amkspec.models import EagerDecoder, LogitCheck, ModelConfig, compare_logits, make_weights
from amkspec.models.quant import (
    NativeQuant,
    QuantSpec,
    QuantTensor,
    dequantized_weights,
    native_weights,
    quantize_weights,
)
from amkspec.vm import Policy, ReferenceVM


@attrs.frozen
class DecodeStep:
    """One launch: what was fed, what each side predicts next, and how close the logits were."""

    pos: int
    fed: tuple[int, ...]
    vm_next: tuple[int, ...]
    eager_next: tuple[int, ...] | None
    check: LogitCheck | None
    sched_s: float
    compute_s: float


@attrs.define
class DecodeRun:
    """All steps of a decode and the generated tokens of each sequence."""

    steps: list[DecodeStep] = attrs.Factory(list)
    generated: list[list[int]] = attrs.Factory(list)

    @property
    def agree(self) -> bool:
        """Every compared step passed the oracle (the lowering guide)."""
        return all(s.check is None or s.check.passed for s in self.steps)

    @property
    def max_abs_err(self) -> float:
        errs = [s.check.max_abs_err for s in self.steps if s.check is not None]
        return max(errs, default=0.0)


def step_inputs(pos: int, tokens: Sequence[int]) -> dict[str, np.ndarray]:
    """The IO_INPUTs of one launch: ``token_id``, ``pos`` and ``reshape_id0`` (int32, one per sequence)."""
    b = len(tokens)
    return {"token_id": np.asarray(tokens, dtype=np.int32), "pos": np.full(b, pos, dtype=np.int32),
            "reshape_id0": np.arange(b, dtype=np.int32)}


def _prompts(prompt: Sequence[int] | Sequence[Sequence[int]]) -> list[list[int]]:
    rows: list[list[int]] = []
    for item in prompt:
        if isinstance(item, int):
            rows = [[int(t) for t in prompt]]  # type: ignore[arg-type]
            break
        rows.append([int(t) for t in item])
    if not rows or not rows[0] or any(len(r) != len(rows[0]) for r in rows):
        raise LoweringError("prompts must be non-empty and of equal length")
    return rows


def greedy_decode(
    model: ModelConfig | str,
    prompt: Sequence[int] | Sequence[Sequence[int]],
    steps: int,
    *,
    config: ScheduleConfig | Mapping[str, Any] | None = None,
    target: GpuTarget | str | None = None,
    dtype: DType = DType.F32,
    weights: Mapping[str, Any] | None = None,
    quant: QuantSpec | None = None,
    policy: Policy | None = None,
    eager: bool = True,
    on_step: Callable[[DecodeStep], None] | None = None,
    make_vm: Callable[[MegakernelProgram], Any] | None = None,
) -> DecodeRun:
    """Generate ``steps`` tokens after ``prompt`` (one list, or B equal-length lists) on the ReferenceVM.

    ``weights`` (default: the model's deterministic ones) are floating point; with ``quant`` the
    program gets their quantized levels and the eager model their dequantized values. Weights given
    as :class:`~amkspec.models.quant.QuantTensor` (e.g. GGUF Q4_1 / Q8_0) are lowered natively and
    the eager model gets their exact dequantized values.
    ``make_vm`` builds the VM of each launch (default: a ReferenceVM under ``policy``); any object
    with ReferenceVM's ``run`` will do (e.g. ``vm_cuda.MegakernelVM``).
    """
    m = resolve_model(model)
    rows = _prompts(prompt)
    if steps < 1:
        raise LoweringError("steps must be at least 1")
    launches = len(rows[0]) + steps - 1
    if launches > m.max_seq:
        raise LoweringError(f"prompt + steps need {launches} positions, model {m.name!r} has {m.max_seq}")
    if any(not 0 <= t < m.vocab for r in rows for t in r):
        raise LoweringError(f"prompt tokens must lie in [0, {m.vocab})")
    w: Mapping[str, Any] = make_weights(m) if weights is None else weights
    eager_w = w
    layout: QuantSpec | NativeQuant | None = quant
    if quant is not None:
        w, eager_w = quantize_weights(m, {k: torch.as_tensor(v) for k, v in w.items()}, quant)
    elif any(isinstance(v, QuantTensor) for v in w.values()):
        eager_w = dequantized_weights(w)
        layout, w = native_weights(w)
    ref = EagerDecoder(m, eager_w, dtype) if eager else None
    run = DecodeRun(generated=[[] for _ in rows])
    kv: dict[str, torch.Tensor] | None = None
    fed = [r[0] for r in rows]
    for pos in range(launches):
        prog = lower(m, target, config, pos=pos, dtype=dtype, B=len(rows), quant=layout)
        vm = make_vm(prog) if make_vm is not None else ReferenceVM(prog, policy=policy)
        out = vm.run(w, step_inputs(pos, fed), kv)
        kv = {b.name: out[b.name] for b in prog.buffers if b.kind is BufferKind.KV_CACHE}
        logits = out["logits"]
        vm_next = tuple(int(i) for i in logits.float().argmax(-1).reshape(-1))
        eager_next, check = None, None
        if ref is not None:
            expected = ref.step(fed)
            eager_next = tuple(int(i) for i in expected.float().argmax(-1).reshape(-1))
            check = compare_logits(logits, expected, dtype)
        stats = getattr(vm, "last_stats", None)
        step = DecodeStep(pos, tuple(fed), vm_next, eager_next, check,
                          stats.sched_s if stats else 0.0, stats.compute_s if stats else 0.0)
        run.steps.append(step)
        if on_step is not None:
            on_step(step)
        nxt = eager_next if eager_next is not None else vm_next
        if pos + 1 >= len(rows[0]):
            for seq, tok in zip(run.generated, nxt, strict=True):
                seq.append(tok)
        fed = [r[pos + 1] for r in rows] if pos + 1 < len(rows[0]) else list(nxt)
    return run
