"""A roofline cost model of tasks and of a program's makespan (the lowering guide, "Predicted latency").

Per task: ``t = max(bytes / (bw · 0.80) · exposed, flops / (tflops · 0.70)) + 1.5 µs`` (+0.05 µs
for GEMV_TILE), where ``exposed = max(0.5, 1 / (1 + 0.6 · pipelining_depth))`` is the share of
memory time that weight prefetching does not hide. The makespan is the longest path through the
dependency DAG (plus, when SMs are assigned, the serial order of each SM's queue), and at least
the total work spread over all SMs when none is assigned.
"""

from __future__ import annotations

from amkspec.ir import BufferKind, GpuTarget, InstructionKind, MegakernelProgram, Task
from amkspec.ir.graph import dependency_edges, kahn_order

BW_EFFICIENCY = 0.80
COMPUTE_EFFICIENCY = 0.70
LAUNCH_US = 1.5
GEMV_EXTRA_US = 0.05


def _work(task: Task, prog: MegakernelProgram) -> tuple[int, int]:
    """(bytes, flops): the task's annotations, or derived from its buffers and params."""
    if task.est_bytes or task.est_flops:
        return task.est_bytes, task.est_flops
    bufs = prog.buffer_by_id()
    nbytes = sum(bufs[i].nbytes for i in task.inputs
                 if i in bufs and bufs[i].kind in (BufferKind.WEIGHT, BufferKind.KV_CACHE))
    p = task.params
    flops = 0
    if task.op in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE):
        flops = 2 * int(p.get("M_tile", 1)) * int(p.get("K", 0)) * int(p.get("N_tile", 0))
    elif task.op is InstructionKind.ATTENTION_TILE:
        flops = 4 * int(p.get("n_heads", 0)) * int(p.get("kv_len", 0)) * int(p.get("head_dim", 0))
    return nbytes, flops


def task_us(task: Task, prog: MegakernelProgram, target: GpuTarget, pipelining_depth: int = 2) -> float:
    """Predicted duration of one task in microseconds."""
    nbytes, flops = _work(task, prog)
    exposed = max(0.5, 1.0 / (1.0 + 0.6 * pipelining_depth))
    mem = nbytes / (target.hbm_bandwidth_gbs * 1e3 * BW_EFFICIENCY) * exposed
    compute = flops / (target.fp16_tflops * 1e6 * COMPUTE_EFFICIENCY)
    extra = GEMV_EXTRA_US if task.op is InstructionKind.GEMV_TILE else 0.0
    return max(mem, compute) + LAUNCH_US + extra


def predicted_latency_us(prog: MegakernelProgram, target: GpuTarget | None = None) -> float:
    """Predicted makespan of one launch in microseconds (the target defaults to the program's)."""
    tgt = target or prog.target
    if tgt is None:
        raise ValueError("predicting latency needs a target")
    depth = prog.config.pipelining_depth if prog.config is not None else 2
    cost = {t.id: task_us(t, prog, tgt, depth) for t in prog.tasks}
    preds: dict[int, list[int]] = {t.id: [] for t in prog.tasks}
    for a, b in dependency_edges(prog):
        if a != b:
            preds[b].append(a)
    assigned = any(t.sm is not None for t in prog.tasks)
    last_on_sm: dict[int, int] = {}
    if assigned:
        for t in prog.tasks:  # an SM runs its queue in task-list order (spec §2.2)
            if t.sm is not None:
                if t.sm in last_on_sm:
                    preds[t.id].append(last_on_sm[t.sm])
                last_on_sm[t.sm] = t.id
    order = kahn_order(cost, ((a, b) for b, ps in preds.items() for a in ps))
    if order is None:
        raise ValueError("the dependency graph (with the SM queues) has a cycle")
    finish: dict[int, float] = {}
    for tid in order:
        finish[tid] = max((finish[p] for p in preds[tid]), default=0.0) + cost[tid]
    makespan = max(finish.values(), default=0.0)
    if not assigned:
        makespan = max(makespan, sum(cost.values()) / tgt.num_sms)
    return makespan
