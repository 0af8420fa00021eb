"""FUSED recipes: well-formedness (spec §7.8) and each step's own shape rules (spec §7).

A recipe is ``{"steps": [{"op", "args", "out", "params", "out_shape", "out_dtype"}, ...]}``;
args are ``{"in": k}`` (task input ``k``) or ``{"s": j}`` (scratch ``j`` of an earlier
step); ``out`` is ``"final"``/``-1`` (the task's output) or a scratch number. Scratch
tensors take ``out_shape`` (default: ``args[0]``'s shape) and ``out_dtype`` (default:
``args[0]``'s dtype), so each step is checked with the same rules as a task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from amkspec.ir import DType, FusedPattern, InstructionKind
from amkspec.ir.opcodes import OP_REGISTRY, PARAM_FIELDS, RECIPE_DTYPES, VARIADIC
from amkspec.ir.shapes import is_shape
from amkspec.proofs.shapes import codes as C
from amkspec.proofs.shapes.context import OpContext, Operand, Rule, int_param

FINAL = "final"

FUSED_RULES = (
    Rule(
        C.RECIPE_FORM,
        "`recipe` is a dict whose `steps` is a non-empty list of dicts; `out` is "
        '`"final"`, `-1` or an int; `out_shape` (if given) is a list of non-negative ints, and a '
        "scratch step without it has an arg; `out_dtype` (if given) is one of "
        + ", ".join(f"`{n}`" for n in RECIPE_DTYPES)
        + "; at least one step writes `final`",
    ),
    Rule(
        C.RECIPE_STEP_OP,
        "`op` is an int opcode other than NOP and FUSED, and `len(args)` is within its OP_REGISTRY arity",
    ),
    Rule(
        C.RECIPE_ARG_REF,
        'each arg is `{"in": k}` with `0 <= k < len(inputs)`, or `{"s": j}` '
        "naming a scratch written by an earlier step",
    ),
    Rule(
        C.RECIPE_STEP_PARAMS,
        "`params` (default `{}`) is a dict with the op's required params, each of its PARAM_FIELDS type",
    ),
    Rule("(per op)", "every step satisfies its own opcode's rules, with scratch shapes from `out_shape`"),
    Rule(
        C.DEVICE_PATTERN,
        "device pattern GEMV_ADD (`flags >> 16 == 1`, `out = x @ W.T + r`): inputs "
        "`[x, W, r, ...]`, the GEMV_TILE rules on `[x, W]` with the task's params, "
        "and `r.numel == out.numel`",
    ),
)


@attrs.frozen
class Step:
    """A recipe step that passed the structural rules."""

    index: int
    op: InstructionKind
    args: tuple[tuple[str, int], ...]
    out: int | None
    params: Mapping[str, Any]
    out_shape: tuple[int, ...] | None
    out_dtype: tuple[DType | None] | None
    """``(dtype,)`` when ``out_dtype`` was given, else None (default: args[0]'s dtype)."""


def check_fused(ctx: OpContext, dispatch: Callable[[OpContext], None]) -> None:
    """Spec §7 FUSED: a well-formed recipe whose every step passes its own op's rules."""
    _check_device_pattern(ctx, dispatch)
    steps = parse_recipe(ctx)
    if steps is None:
        return
    scratch: dict[int, Operand] = {}
    final = ctx.outputs[0]
    for step in steps:
        ins = [ctx.inputs[k] if kind == "in" else scratch[k] for kind, k in step.args]
        if step.out is None:
            out = final
        else:
            shape = step.out_shape if step.out_shape is not None else ins[0].shape
            dtype = step.out_dtype[0] if step.out_dtype is not None else ins[0].dtype
            out = Operand(f"scratch {step.out}", shape, dtype)
            scratch[step.out] = out
        where = f" recipe step {step.index} ({step.op.name})"
        dispatch(OpContext(ctx.task, step.op, ins, [out], step.params, ctx.found, where))


def _check_device_pattern(ctx: OpContext, dispatch: Callable[[OpContext], None]) -> None:
    """The device runs pattern GEMV_ADD from the task's own operands and params, not the recipe."""
    flags = ctx.param("flags", 0)
    if flags is None or (flags >> 16) & 0xFFFF != FusedPattern.GEMV_ADD:
        return
    out = ctx.outputs[0]
    if len(ctx.inputs) < 3:
        ctx.fail(
            C.DEVICE_PATTERN,
            f"selects device pattern GEMV_ADD with {len(ctx.inputs)} input(s); it reads [x, W, residual]",
        )
        return
    residual = ctx.inputs[2]
    if residual.numel != out.numel:
        ctx.fail(
            C.DEVICE_PATTERN,
            f"selects device pattern GEMV_ADD, which reads {out.numel} elements of "
            f"residual {residual.name} {list(residual.shape)} ({residual.numel} elements)",
            [residual, out],
        )
    gemv, step = InstructionKind.GEMV_TILE, " device pattern GEMV_ADD"
    dispatch(OpContext(ctx.task, gemv, ctx.inputs[:2], [out], ctx.params, ctx.found, step))


def parse_recipe(ctx: OpContext) -> list[Step] | None:
    """The recipe's steps, or None after reporting every structural error (spec §7.8)."""
    recipe = ctx.params.get("recipe")
    steps = recipe.get("steps") if isinstance(recipe, dict) else None
    if not isinstance(steps, list) or not steps:
        what = "has no recipe dict" if not isinstance(recipe, dict) else "has a recipe without steps"
        ctx.fail(C.RECIPE_FORM, f"{what} (a non-empty list under 'steps')")
        return None
    errors = len(ctx.found)
    written: set[int] = set()
    parsed = [_parse_step(ctx, i, raw, written) for i, raw in enumerate(steps)]
    if not any(s is not None and s.out is None for s in parsed) and all(s is not None for s in parsed):
        ctx.fail(C.RECIPE_FORM, "has a recipe in which no step writes 'final'")
    if len(ctx.found) > errors:
        return None
    return [s for s in parsed if s is not None]


def _parse_step(ctx: OpContext, i: int, raw: Any, written: set[int]) -> Step | None:
    """One step, or None after reporting why; its scratch counts as written either way so that
    one bad step does not make every later reference to it an error too."""
    where = f"recipe step {i}"
    if not isinstance(raw, dict):
        ctx.fail(C.RECIPE_FORM, f"has {where} that is not a dict")
        return None
    op = _parse_op(ctx, where, raw.get("op"), raw.get("args", []))
    args = _parse_args(ctx, where, raw.get("args", []), written)
    params = raw.get("params", {})
    params_ok = op is not None and _params_ok(ctx, where, op, params)
    out = _parse_out(ctx, where, raw)
    if out is None:
        return None
    target = _target(raw["out"])
    if target is not None:
        written.add(target)
    if op is None or args is None or not params_ok:
        return None
    shape, dtype = out
    if target is not None and shape is None and not args:
        ctx.fail(C.RECIPE_FORM, f"has {where} writing scratch {target} with no out_shape and no args")
        return None
    return Step(i, op, tuple(args), target, params, shape, dtype)


def _target(out: Any) -> int | None:
    return None if out in (FINAL, -1) else out


def _parse_op(ctx: OpContext, where: str, raw_op: Any, args: Any) -> InstructionKind | None:
    if type(raw_op) is not int or raw_op not in InstructionKind._value2member_map_:
        ctx.fail(C.RECIPE_STEP_OP, f"has {where} with op {raw_op!r}, not an opcode")
        return None
    op = InstructionKind(raw_op)
    if op in (InstructionKind.FUSED, InstructionKind.NOP):
        ctx.fail(C.RECIPE_STEP_OP, f"has {where} with op {op.name}, which a recipe cannot run")
        return None
    spec = OP_REGISTRY[op]
    n = len(args) if isinstance(args, list) else -1
    if n >= 0 and not (spec.min_inputs <= n and (spec.max_inputs == VARIADIC or n <= spec.max_inputs)):
        ctx.fail(
            C.RECIPE_STEP_OP,
            f"has {where} running {op.name} on {n} args (it takes {spec.min_inputs}..{spec.max_inputs})",
        )
        return None
    return op


def _parse_args(ctx: OpContext, where: str, raw: Any, written: set[int]) -> list[tuple[str, int]] | None:
    if not isinstance(raw, list):
        ctx.fail(C.RECIPE_ARG_REF, f"has {where} whose args are not a list")
        return None
    refs: list[tuple[str, int]] = []
    for j, arg in enumerate(raw):
        ref = _parse_ref(arg, len(ctx.inputs), written)
        if ref is None:
            ctx.fail(
                C.RECIPE_ARG_REF,
                f"has {where} arg {j} = {arg!r}: not {{'in': k}} with "
                f"0 <= k < {len(ctx.inputs)} nor {{'s': j}} of an earlier scratch",
            )
            return None
        refs.append(ref)
    return refs


def _parse_ref(arg: Any, n_inputs: int, written: set[int]) -> tuple[str, int] | None:
    if not isinstance(arg, dict) or len(arg) != 1:
        return None
    ((kind, k),) = arg.items()
    if type(k) is not int:
        return None
    if kind == "in" and 0 <= k < n_inputs:
        return ("in", k)
    if kind == "s" and k in written:
        return ("s", k)
    return None


def _params_ok(ctx: OpContext, where: str, op: InstructionKind, params: Any) -> bool:
    if not isinstance(params, dict):
        ctx.fail(C.RECIPE_STEP_PARAMS, f"has {where} whose params are not a dict")
        return False
    missing = [k for k in OP_REGISTRY[op].required_params if k not in params]
    bad = [k for k, v in params.items() if k in PARAM_FIELDS and not _typed(k, v, params)]
    if missing or bad:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"ill-typed {', '.join(map(str, bad))}"] if bad else []
        )
        ctx.fail(C.RECIPE_STEP_PARAMS, f"has {where} ({op.name}) with params {'; '.join(parts)}")
        return False
    return True


def _typed(key: str, value: Any, params: Mapping[str, Any]) -> bool:
    if PARAM_FIELDS[key] == "i":
        return int_param(params, key) is not None
    return type(value) in (int, float)


def _parse_out(
    ctx: OpContext, where: str, raw: dict[str, Any]
) -> tuple[tuple[int, ...] | None, tuple[DType | None] | None] | None:
    out = raw.get("out")
    if out != FINAL and type(out) is not int:
        ctx.fail(C.RECIPE_FORM, f"has {where} with out {out!r} (not 'final', -1 or an int)")
        return None
    shape: tuple[int, ...] | None = None
    if "out_shape" in raw:
        value = raw["out_shape"]
        shape = tuple(value) if isinstance(value, list) else None
        if shape is None or not is_shape(shape):
            ctx.fail(C.RECIPE_FORM, f"has {where} with out_shape {value!r} (not a list of non-negative ints)")
            return None
    dtype: tuple[DType | None] | None = None
    if "out_dtype" in raw:
        name = raw["out_dtype"]
        if not isinstance(name, str) or name not in RECIPE_DTYPES:
            allowed = ", ".join(RECIPE_DTYPES)
            ctx.fail(C.RECIPE_FORM, f"has {where} with out_dtype {name!r} (not one of {allowed})")
            return None
        dtype = (RECIPE_DTYPES[name],)
    return shape, dtype
