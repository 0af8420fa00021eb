"""Data movement: NOP, COPY, EMBED (gather and reshape bridge), KV_APPEND (spec §7)."""

from __future__ import annotations

import torch

from amkspec.ir import InstructionKind
from amkspec.semantics.edges import cast, copy_into
from amkspec.semantics.registry import OpError, Params, Tensor, arity, int_param, semantics, store

_K = InstructionKind


@semantics(
    _K.NOP, family="Data movement", inputs="—", outputs="—", params="—", shapes="—",
    formula="no effect (the VM still increments the task's out_counter)",
)
def nop(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 NOP: does nothing."""


@semantics(
    _K.COPY, family="Data movement", inputs="src", outputs="dst", params="—",
    shapes="src broadcastable to dst (no reshape)",
    formula="dst ← src converted directly to dst's dtype (float → integer: §7.10)",
)
def copy(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 COPY: a direct dtype conversion with broadcasting, never a reshape."""
    arity(inputs, outputs, _K.COPY, 1, 1)
    try:
        copy_into(outputs[0], inputs[0])
    except RuntimeError as exc:
        shapes = f"{tuple(inputs[0].shape)} to {tuple(outputs[0].shape)}"
        raise OpError(f"COPY: cannot broadcast {shapes}") from exc


@semantics(
    _K.EMBED, family="Data movement", inputs="ids (int), table [V, …]", outputs="out",
    params="hidden (required by the registry, not read)",
    shapes="out.numel = len(ids) · row length; rows reinterpreted as out's shape",
    formula="out ← table[ids] (row gather, cast directly to out's dtype, reshaped row-major); "
    "with ids = [0] and a flat activation as table it is the reshape bridge",
)
def embed(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 EMBED: gather rows of ``table`` by ``ids``; an id out of range is an error."""
    arity(inputs, outputs, _K.EMBED, 2, 1)
    ids = cast(inputs[0], torch.int64).flatten()
    table = inputs[1]
    if table.dim() == 0:
        raise OpError("EMBED: the table must have at least one dimension")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= table.shape[0]):
        raise OpError(f"EMBED: ids {ids.tolist()} out of range for a table of {table.shape[0]} rows")
    rows = cast(table.index_select(0, ids), outputs[0].dtype)
    if rows.numel() != outputs[0].numel():
        shape = tuple(outputs[0].shape)
        raise OpError(f"EMBED: {rows.numel()} gathered elements do not fill an output of shape {shape}")
    outputs[0].copy_(rows.reshape(outputs[0].shape))


@semantics(
    _K.KV_APPEND, family="Data movement", inputs="new, cache (declared for ordering only)",
    outputs="cache", params="pos (required)",
    shapes="cache [max_seq, n_kv, hd] with new holding whole rows ([r, n_kv, hd] or [r, n_kv·hd]); "
    "batched: cache [B, max_seq, n_kv, hd], new [B, n_kv, hd] or [B, n_kv·hd]",
    formula="cache[pos : pos+r] ← new (cast directly); batched: cache[:, pos] ← new; nothing else changes",
)
def kv_append(inputs: list[Tensor], outputs: list[Tensor], params: Params) -> None:
    """Spec §7 KV_APPEND: write whole rows of new k/v into the cache at ``pos``."""
    arity(inputs, outputs, _K.KV_APPEND, 1, 1)
    pos = int_param(params, "pos", _K.KV_APPEND)
    cache, new = outputs[0], inputs[0]
    if cache.dim() not in (3, 4):
        raise OpError(f"KV_APPEND: cache must be rank 3 or 4, got shape {tuple(cache.shape)}")
    row = cache.shape[-2] * cache.shape[-1]
    if cache.dim() == 4:
        slot, count = cache[:, pos : pos + 1], 1
        if new.numel() != cache.shape[0] * row:
            raise OpError(f"KV_APPEND: new of shape {tuple(new.shape)} is not one row per sequence")
        value = new.reshape(cache.shape[0], 1, *cache.shape[-2:])
    else:
        if row == 0 or new.numel() % row:
            raise OpError(f"KV_APPEND: new of shape {tuple(new.shape)} is not whole cache rows")
        count = new.numel() // row
        slot, value = cache[pos : pos + count], new.reshape(count, *cache.shape[-2:])
    if pos < 0 or pos + count > cache.shape[-3]:
        raise OpError(f"KV_APPEND: rows {pos}..{pos + count - 1} outside a cache of {cache.shape[-3]} rows")
    store(slot, value)
