"""Advancing a lowered decode step to another position (spec §2.3: "positions advance via params
(pos, kv_start, kv_len) between launches"; the lowering guide, "Decoding without waste").

A program :func:`~amkspec.lower.lower` makes for position ``p`` differs from the one for ``q`` only
in its positional params (KV_APPEND ``pos``; ATTENTION_TILE ``kv_start``/``kv_len``), the attention
tasks' cost annotations and ``meta.pos``/``meta.kv_len`` — as long as split-KV attention gets as
many shards at both positions (a *position bucket*). :func:`at_position` makes that program from any
one of the bucket without lowering again; the tasks' SM placement is kept as it was (any placement
is safe: the task list is a topological order).
"""

from __future__ import annotations

import attrs

from amkspec.ir import AttentionFlags, DType, InstructionKind, MegakernelProgram
from amkspec.lower.emit import attention_cost
from amkspec.lower.tiling import kv_shards, n_partitions

Op = InstructionKind


def _shards(prog: MegakernelProgram, kv_len: int) -> list[tuple[int, int]]:
    """The ``(kv_start, kv_len)`` windows of each layer's attention at ``kv_len`` (one when unsplit)."""
    tiling = prog.config.tiling if prog.config is not None else {}
    num_sms = prog.target.num_sms if prog.target is not None else None
    batch = int(prog.meta.get("batch", 1))
    return kv_shards(kv_len, n_partitions(tiling, kv_len, num_sms, batch))


def at_position(prog: MegakernelProgram, pos: int) -> MegakernelProgram | None:
    """``prog`` (a decode step :func:`~amkspec.lower.lower` made) moved to position ``pos``, or None
    when the attention's shard count differs there (lower again: a new position bucket).

    A program without the lowering's ``meta`` (``regime`` decode, ``pos``, ``dtype``) is None too.
    """
    meta = prog.meta
    lowered = meta.get("regime") == "decode" and isinstance(meta.get("pos"), int)
    if not lowered or meta.get("dtype") not in DType.__members__:
        return None
    kv_len = pos + 1
    windows = _shards(prog, kv_len)
    split = [t for t in prog.tasks if t.op is Op.ATTENTION_TILE and int(t.params.get("flags", 0))
             & AttentionFlags.PARTIAL_WRITE]
    attention = [t for t in prog.tasks if t.op is Op.ATTENTION_TILE]
    per_layer = len(split) // max(1, int(meta.get("n_layers", 1))) if split else 1
    if per_layer != len(windows) or len(attention) % len(windows):
        return None
    dbytes = max(1, DType[meta["dtype"]].bits // 8)
    batch = int(meta.get("batch", 1))
    tasks = []
    shard = 0
    for task in prog.tasks:
        if task.op is Op.KV_APPEND:
            task = attrs.evolve(task, params={**task.params, "pos": pos})
        elif task.op is Op.ATTENTION_TILE:
            start, length = windows[shard % len(windows)]
            shard += 1
            p = task.params
            est_bytes, est_flops = attention_cost(batch, length, p["n_heads"], p["n_kv_heads"], p["head_dim"],
                                                  dbytes)
            task = attrs.evolve(task, params={**p, "kv_start": start, "kv_len": length}, est_bytes=est_bytes,
                                est_flops=est_flops)
        tasks.append(task)
    return attrs.evolve(prog, tasks=tasks, meta={**meta, "pos": pos, "kv_len": kv_len})
