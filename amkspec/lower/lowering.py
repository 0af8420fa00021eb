"""``lower()``: a decoder and a ScheduleConfig → one decode step as a MegakernelProgram (spec §5).

The emission follows the original lowering exactly (the lowering guide). Unlike the original, amkspec
then *consumes* three knobs the original only records: ``fusion_grouping`` emits each listed
group as one FUSED task per layer (:mod:`amkspec.lower.emit`), ``sm_assignment`` is resolved into
``Task.sm`` (a named policy needs a target for the SM count) and ``page_allocation`` into a
PageAllocation. Every config is first checked by :mod:`amkspec.lower.knobs`.
``compat=True`` skips all three and reproduces the original's output byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from amkspec.ir import TARGETS, DType, GpuTarget, MegakernelProgram, ScheduleConfig
from amkspec.lower.emit import StepEmitter
from amkspec.lower.errors import LoweringError
from amkspec.lower.knobs import MAX_BATCH, require_valid
from amkspec.lower.pages import allocate_pages
from amkspec.lower.sm_assign import assign_sms
from amkspec.models.config import ModelConfig
from amkspec.models.quant import NativeQuant, QuantSpec
from amkspec.models.registry import UnknownModel, model_layout, resolve

LOWERABLE_DTYPES = (DType.F32, DType.F16, DType.BF16)


def resolve_model(model: ModelConfig | str | os.PathLike[str]) -> ModelConfig:
    """The config itself, a model by name (a preset or a built-in checkpoint,
    :data:`~amkspec.models.registry.MODEL_NAMES`) or the checkpoint at a path
    (:mod:`amkspec.models.registry`)."""
    if not isinstance(model, ModelConfig | str | os.PathLike):
        raise LoweringError(f"unknown model {model!r} (give a name, a checkpoint path or a ModelConfig)")
    try:
        return resolve(model)
    except UnknownModel as exc:
        raise LoweringError(str(exc)) from None


def resolve_target(target: GpuTarget | str | None) -> GpuTarget | None:
    """A built-in target by name, or the record itself, whose ``num_sms`` must be an int ≥ 1: the
    lowering places tasks on SMs ``[0, num_sms)`` and caps split-KV shards by it (spec §5)."""
    if target is None:
        return None
    if not isinstance(target, GpuTarget):
        try:
            return TARGETS[target]
        except (KeyError, TypeError):
            raise LoweringError(f"unknown target {target!r} (known: {', '.join(TARGETS)})") from None
    sms = target.num_sms
    if type(sms) is not int or sms < 1:
        shown = sms if type(sms) is int and sms.bit_length() <= 64 else f"a {type(sms).__name__}"
        raise LoweringError(f"target {target.name!r} has num_sms {shown}: it must be an int of at least 1")
    return target


def _dtype(dtype: DType | str) -> DType:
    if isinstance(dtype, DType):
        return dtype
    try:
        return DType[dtype]
    except (KeyError, TypeError):
        raise LoweringError(f"unknown dtype {dtype!r}") from None


def _quant(quant: QuantSpec | NativeQuant | Mapping[str, int] | None) -> QuantSpec | NativeQuant | None:
    if quant is None or isinstance(quant, QuantSpec | NativeQuant):
        return quant
    if not isinstance(quant, Mapping):
        raise LoweringError(f"bad quant (a {type(quant).__name__}): give a QuantSpec, a NativeQuant or "
                            "{'bits': 4|8, 'group': G}")
    try:
        return QuantSpec(**quant)
    except (TypeError, ValueError) as exc:
        raise LoweringError(f"bad quant: {exc}") from None


def _check(model: ModelConfig, pos: int, dtype: DType, batch: int) -> None:
    for name, value in (("pos", pos), ("B", batch)):
        if type(value) is not int:  # a bool, float or string would emit a program validate() rejects
            raise LoweringError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not 0 <= pos < model.max_seq:
        raise LoweringError(f"pos {pos} is outside [0, {model.max_seq}) for model {model.name!r}")
    if not 1 <= batch <= MAX_BATCH:
        raise LoweringError(f"batch must be in [1, {MAX_BATCH}], got {batch}")
    if dtype not in LOWERABLE_DTYPES:
        raise LoweringError(f"cannot lower to {dtype.name}: use F32, F16 or BF16")


def lower(model: ModelConfig | str | os.PathLike[str], target: GpuTarget | str | None = None,
          config: ScheduleConfig | Mapping[str, Any] | None = None, *, pos: int = 0,
          dtype: DType | str = DType.F32, B: int = 1,
          quant: QuantSpec | NativeQuant | Mapping[str, int] | None = None,
          compat: bool = False) -> MegakernelProgram:
    """Lower one decode step of ``model`` for the token at absolute position ``pos`` (the lowering guide).

    ``B`` sequences decode in lockstep (GEMM_TILE projections, batched attention). ``quant``
    (a QuantSpec or ``{"bits": 4|8, "group": G}``) stores the layers' projections as I4/I8 levels
    with F16 scales; a :class:`~amkspec.models.quant.NativeQuant` stores each weight it lists in its
    own format (Q4_1, Q8_0: spec §7.9), the token table and lm head included
    (single sequence only, either way). ``dtype`` may be given by name. ``config``
    None means the original's auto tiling (width 32). With a target, ``config.sm_assignment`` is
    resolved into ``Task.sm``; ``config.page_allocation`` always yields ``program.pages`` (None
    for ``"none"``), unless ``compat`` is set. Raises :class:`LoweringError` on bad arguments (a
    ``quant`` :class:`QuantSpec` refuses, a target record whose ``num_sms`` is not an int ≥ 1) and
    :class:`~amkspec.lower.knobs.ConfigError` on a config :func:`~amkspec.lower.knobs.check` refuses
    (a named ``sm_assignment`` without a target included, unless ``compat``). ``config`` may be
    a JSON-style mapping; either way what is lowered and recorded is the config the knob checks
    build (:func:`~amkspec.lower.knobs.require_valid`), so ``{"12": 3}`` means task 12 on SM 3.
    """
    return _lower(model, target, config, pos, dtype, B, quant, compat, checked=False)


def lower_checked(model: ModelConfig | str | os.PathLike[str], target: GpuTarget | str | None,
                  config: ScheduleConfig, *, pos: int = 0, dtype: DType | str = DType.F32
                  ) -> MegakernelProgram:
    """:func:`lower` of a ``config`` that :func:`~amkspec.lower.knobs.parse` built on ``target``
    already (a search's :meth:`~amkspec.search.Evaluator.prepare`): its knobs are not checked again."""
    return _lower(model, target, config, pos, dtype, 1, None, False, checked=True)


def _lower(model: ModelConfig | str | os.PathLike[str], target: GpuTarget | str | None,
           config: ScheduleConfig | Mapping[str, Any] | None, pos: int, dtype: DType | str, B: int,
           quant: QuantSpec | NativeQuant | Mapping[str, int] | None, compat: bool, *, checked: bool
           ) -> MegakernelProgram:
    m = resolve_model(model)
    tgt = resolve_target(target)
    dtype, quant = _dtype(dtype), _quant(quant)
    _check(m, pos, dtype, B)
    if m.native_quant:
        if isinstance(quant, QuantSpec):
            raise LoweringError(f"model {m.name!r} keeps its checkpoint's quantized tensors: dequantize it "
                                "(--dequantize) to quantize it again")
        quant = quant if quant is not None else model_layout(m)
    if quant is not None and B > 1:
        hint = " (--dequantize runs the checkpoint in float32)" if m.native_quant else ""
        raise LoweringError(f"quantized lowering supports one sequence only (B = 1){hint}")
    if isinstance(quant, NativeQuant) and quant.unsupported(m):
        raise LoweringError(f"cannot store {', '.join(quant.unsupported(m)[:3])} quantized: only the "
                            "projections, embed.weight and lm_head.weight of the model can be")
    if config is not None:
        if not isinstance(config, ScheduleConfig | Mapping):
            raise LoweringError(f"config must be a ScheduleConfig or a mapping, got {type(config).__name__}")
        if not (checked and isinstance(config, ScheduleConfig)):
            config = require_valid(config, tgt, places_sms=not compat)
    tiling = dict(config.tiling) if config is not None else {}
    fusion = tuple(tuple(g) for g in config.fusion_grouping) if config is not None and not compat else ()
    emitter = StepEmitter(m, dtype, pos, B, tiling, tgt.num_sms if tgt else None, quant, fusion)
    meta = {"model": m.source, "gpu": tgt.name if tgt else "?", "regime": "decode", "pos": pos,
            "kv_len": pos + 1, "dtype": dtype.name, "n_layers": m.n_layers}
    prog = emitter.emit().build(meta=meta, target=tgt, config=config)
    prog.meta["weight_bytes"] = prog.total_weight_bytes()
    if quant is not None:
        prog.meta["quantized"] = True
        prog.meta["quant"] = quant.to_meta(m)
    if B > 1:
        prog.meta["batch"] = B
    if config is not None and not compat:
        try:
            assign_sms(prog, config.sm_assignment)
            prog.pages = allocate_pages(prog, config.page_allocation)
        except ValueError as exc:
            raise LoweringError(str(exc)) from None
    return prog
