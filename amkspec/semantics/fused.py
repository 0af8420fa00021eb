"""FUSED: a recipe of primitive steps run as one task (spec §7.8).

``params["recipe"] = {"steps": [step, ...]}``; a step is
``{"op": opcode, "args": [ref, ...], "out": "final" | -1 | j, "params": {...},
"out_shape": [...], "out_dtype": name}`` where a ref is ``{"in": k}`` (task input
``k``) or ``{"s": j}`` (scratch ``j`` written by an earlier step). Scratch tensors
start as zeros; a step writing ``"final"`` (or −1) writes the task's output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from amkspec.ir import OP_REGISTRY, InstructionKind
from amkspec.ir.opcodes import RECIPE_DTYPES, opcode_of
from amkspec.semantics.dtypes import torch_dtype
from amkspec.semantics.registry import SEMANTICS, OpError, Params, Tensor, arity, need, semantics

_K = InstructionKind

SCRATCH_DTYPES: dict[str, torch.dtype] = {
    name: torch.float64 if dtype is None else torch_dtype(dtype) for name, dtype in RECIPE_DTYPES.items()
}
"""The torch dtype of each recipe ``out_dtype`` name (:data:`amkspec.ir.opcodes.RECIPE_DTYPES`)."""


def _opcode(value: Any) -> InstructionKind:
    try:
        return opcode_of(value)
    except ValueError as exc:
        raise OpError(f"FUSED: {exc}") from exc


def _ref(ref: Any, n_inputs: int, scratch: set[int], where: str) -> tuple[str, int]:
    if not isinstance(ref, Mapping) or len(ref) != 1:
        raise OpError(f"FUSED {where}: an arg must be {{'in': k}} or {{'s': j}}, got {ref!r}")
    (key, idx), = ref.items()
    if key == "in" and type(idx) is int and 0 <= idx < n_inputs:
        return key, idx
    if key == "s" and type(idx) is int and idx in scratch:
        return key, idx
    raise OpError(f"FUSED {where}: {ref!r} names no task input and no scratch of an earlier step")


def _out(value: Any, where: str) -> int:
    if value == "final" or (type(value) is int and value >= -1):
        return -1 if value == "final" else value
    raise OpError(f"FUSED {where}: out must be 'final', -1 or a scratch index, got {value!r}")


def check_recipe(recipe: Any, n_inputs: int) -> list[dict[str, Any]]:
    """The recipe's steps after the structural checks; any defect is an :class:`OpError`."""
    steps = recipe.get("steps") if isinstance(recipe, Mapping) else None
    if not isinstance(steps, list) or not steps:
        raise OpError("FUSED: recipe must be {'steps': [non-empty list]}")
    scratch: set[int] = set()
    finals = 0
    for i, step in enumerate(steps):
        where = f"step {i}"
        if not isinstance(step, Mapping):
            raise OpError(f"FUSED {where}: a step must be an object")
        if _opcode(step.get("op")) is _K.FUSED:
            raise OpError(f"FUSED {where}: nested FUSED is not allowed")
        args = step.get("args", [])
        if not isinstance(args, list):
            raise OpError(f"FUSED {where}: args must be a list")
        for ref in args:
            _ref(ref, n_inputs, scratch, where)
        if not isinstance(step.get("params", {}), Mapping):
            raise OpError(f"FUSED {where}: params must be an object")
        if step.get("out_dtype", "float32") not in SCRATCH_DTYPES:
            bad = step.get("out_dtype")
            raise OpError(f"FUSED {where}: out_dtype {bad!r} not in {sorted(SCRATCH_DTYPES)}")
        out = _out(step.get("out", "final"), where)
        if out == -1:
            finals += 1
        else:
            scratch.add(out)  # 'final' is the task's output, never a scratch a later step may read
    if not finals:
        raise OpError("FUSED: no step writes 'final'")
    return list(steps)


def _scratch(step: Mapping[str, Any], args: list[Tensor], where: str) -> Tensor:
    shape = step.get("out_shape")
    dtype = SCRATCH_DTYPES[step["out_dtype"]] if "out_dtype" in step else None
    if shape is None:
        if not args:
            raise OpError(f"FUSED {where}: a scratch without out_shape needs an argument to copy")
        return torch.zeros_like(args[0], dtype=dtype)
    try:
        return torch.zeros([int(d) for d in shape], dtype=dtype or (args[0].dtype if args else torch.float32))
    except (TypeError, ValueError, RuntimeError) as exc:
        raise OpError(f"FUSED {where}: bad out_shape {shape!r}") from exc


@semantics(
    _K.FUSED, family="Composite", inputs=f"{OP_REGISTRY[_K.FUSED].input_range} task inputs", outputs="out",
    params="recipe = {steps: [{op, args, out, params, out_shape, out_dtype}]} (required)",
    shapes="per step, as the step's opcode",
    formula="run the steps in order; scratch j starts as zeros; the step writing 'final' writes out",
)
def fused(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 FUSED: each step dispatches the primitive reference with its own params."""
    arity(inputs, outputs, _K.FUSED, 1, 1)
    steps = check_recipe(need(params, "recipe", _K.FUSED), len(inputs))
    scratch: dict[int, Tensor] = {}
    for i, step in enumerate(steps):
        args = [inputs[idx] if key == "in" else scratch[idx] for key, idx in
                (_ref(r, len(inputs), set(scratch), f"step {i}") for r in step.get("args", []))]
        out = _out(step.get("out", "final"), f"step {i}")
        if out == -1:
            target = outputs[0]
        else:
            target = scratch[out] if out in scratch else _scratch(step, args, f"step {i}")
            scratch[out] = target
        SEMANTICS[_opcode(step["op"])].fn(args, [target], step.get("params", {}))
