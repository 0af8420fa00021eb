"""ReferenceVM benchmark: scheduling overhead share, decode tokens/s, and page-reuse savings.

Run: ``python3 benchmarks/vm.py [--baseline PATH] [--repeats N] [--steps N] [--skip-medium]
[--write-results]``. Prints medians.

- per launch, against the real original ReferenceVM in the same process: the original's lowering
  of each model (``compat=True``), the same weights, inputs and KV caches, decode steps threaded;
  median process-CPU seconds of ``run()`` for both, the speed-up (original / amkspec), the largest
  absolute difference of their outputs (0 means bit-identical), and amkspec's scheduling overhead
  share of those launches (below), and the time to read every weight the linear tiles read once
  (:func:`weights_floor`: about the least any launch of a memory-bound model can take, so
  ``original / that`` bounds the speed-up any VM can show); ``--write-results`` writes this table
  to ``benchmarks/results/vm_vs_original.md``;
- where amkspec's launch time goes (:func:`split`): the linear tiles, the other opcodes, binding,
  scheduling and returning the outputs, medians of the same launches, next to the launch time a
  1.5x speed-up would need (``benchmarks/results/vm_time_split.md``);

- overhead share = ``sched_s / (sched_s + compute_s)`` of one launch (``vm.last_stats``): the time
  the VM spends deciding what to run versus running the opcodes' numerics (target: ≤ 10%); also
  ``sched_s`` over the whole ``run()`` call (binding weights and inputs included);
- tokens/s of the greedy decode loop: ReferenceVM launches alone, the full loop (lower +
  validate + launch per token), and the eager model;
- the time to build a VM (:func:`build_compare`): amkspec's constructor, its snapshot of the
  program and ``validate()``, next to the original's constructor;
- scratch bytes of the activations with no page reuse and with ``graph_color``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import Baseline, add_baseline_argument, open_baseline
from tables import write_result

from amkspec.ir import InstructionKind, MegakernelProgram, ScheduleConfig, dumps
from amkspec.ir.snapshot import snapshot
from amkspec.lower import lower
from amkspec.lower.decode import step_inputs
from amkspec.models import MEDIUM, TOY, TOY_2L, EagerDecoder, ModelConfig, make_weights
from amkspec.proofs import validate
from amkspec.vm import ReferenceVM, RunStats

CONFIG = ScheduleConfig(tiling={"gemv": {"N_tile": 64}})


def scratch(model: ModelConfig) -> tuple[int, int]:
    none = lower(model, "rtx5090", ScheduleConfig(page_allocation="none")).total_scratch_bytes()
    coloured = lower(model, "rtx5090", ScheduleConfig(page_allocation="graph_color")).total_scratch_bytes()
    return none, coloured


def decode_bench(model: ModelConfig, steps: int, repeats: int) -> dict[str, float]:
    weights = make_weights(model)
    shares, wall_shares, vm_tps, loop_tps, eager_tps, launches = [], [], [], [], [], []
    for _ in range(repeats):
        kv = None
        tok = 1
        vm_time = 0.0
        loop_start = time.perf_counter()
        for pos in range(steps):
            prog = lower(model, "rtx5090", CONFIG, pos=pos)
            vm = ReferenceVM(prog)
            t0 = time.perf_counter()
            out = vm.run(weights, step_inputs(pos, [tok]), kv)
            run_s = time.perf_counter() - t0
            vm_time += run_s
            kv = {k: v for k, v in out.items() if k.endswith("cache")}
            tok = int(out["logits"].argmax())
            stats = vm.last_stats
            assert stats is not None
            shares.append(stats.overhead_share)
            wall_shares.append(stats.sched_s / run_s)
            launches.append(stats.sched_s + stats.compute_s)
        loop_tps.append(steps / (time.perf_counter() - loop_start))
        vm_tps.append(steps / vm_time)
        eager = EagerDecoder(model, weights)
        t0 = time.perf_counter()
        tok = 1
        for _ in range(steps):
            tok = int(eager.step([tok]).argmax())
        eager_tps.append(steps / (time.perf_counter() - t0))
    return {
        "tasks": float(len(prog.tasks)),
        "overhead_share": statistics.median(shares),
        "overhead_of_run": statistics.median(wall_shares),
        "launch_ms": statistics.median(launches) * 1e3,
        "vm_tokens_s": statistics.median(vm_tps),
        "loop_tokens_s": statistics.median(loop_tps),
        "eager_tokens_s": statistics.median(eager_tps),
    }


def weights_floor(program: MegakernelProgram, weights: Mapping[str, torch.Tensor], repeats: int) -> float:
    """Median CPU seconds to read every weight the program's linear tiles read, once each: one
    whole-matrix product ``x @ W.T`` (one float32 row) per weight. A launch reads at least these
    bytes, so on a memory-bound model no VM's launch, the original's included, can take much less;
    ``original / floor`` is about the best speed-up any VM could show against the original."""
    by_id = {b.id: b for b in program.buffers}
    linear = {InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE}
    mats = [weights[n] for n in sorted({by_id[t.inputs[1]].name for t in program.tasks if t.op in linear})]
    rows = [torch.ones(1, m.shape[1]) for m in mats]
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for x, m in zip(rows, mats, strict=True):
            x @ m.T
        times.append(time.process_time() - t0)
    return statistics.median(times)


def split(program: MegakernelProgram, stats: RunStats, run_s: float) -> list[float]:
    """One launch's seconds: the linear tiles, the other opcodes, binding, scheduling, and the rest
    of ``run()`` (copying out what it returns), as in :data:`SPLIT`."""
    linear = {t.id for t in program.tasks if t.op in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE)}
    tiles = sum(s for tid, s in stats.task_s.items() if tid in linear)
    rest = run_s - stats.bind_s - stats.compute_s - stats.sched_s
    return [tiles, stats.compute_s - tiles, stats.bind_s, stats.sched_s, max(rest, 0.0)]


SPLIT = ("linear tiles", "other opcodes", "binding", "scheduling", "returning outputs")


def launch_compare(model: ModelConfig, steps: int, repeats: int, base: Baseline) -> tuple[str, str, str]:
    """Rows, printed and as Markdown: median CPU seconds per launch of amkspec's and the
    original's ReferenceVM, the largest output difference, and amkspec's overhead shares; and
    where amkspec's launch time goes (:func:`split`, medians)."""
    orig_vm = base.reference_vm()
    weights = make_weights(model)
    ours_s, theirs_s, shares, outside, diff = [], [], [], [], 0.0
    parts: list[list[float]] = []
    kv_ours: dict[str, torch.Tensor] | None = None
    kv_theirs: dict[str, torch.Tensor] = {}
    tok = 1
    for pos in range(steps):
        prog = lower(model, "h100", CONFIG, pos=pos, compat=True)
        ours = ReferenceVM(prog)
        theirs = orig_vm.ReferenceVM(base.program(dumps(prog)), weights)
        inputs = {k: torch.from_numpy(v) for k, v in step_inputs(pos, [tok]).items()}
        for _ in range(repeats):
            t0 = time.process_time()
            out = ours.run(weights, inputs, kv_ours)
            ours_s.append(time.process_time() - t0)
            t0 = time.process_time()
            ref = theirs.run(inputs, dict(kv_theirs))
            theirs_s.append(time.process_time() - t0)
            stats = ours.last_stats
            assert stats is not None
            shares.append(stats.overhead_share)
            outside.append(1 - stats.compute_s / (stats.sched_s + stats.compute_s + stats.bind_s))
            parts.append(split(prog, stats, ours_s[-1]))
        diff = max([diff, *(float((out[k].float() - ref[k].float()).abs().max()) for k in out)])
        kv_ours = {k: v for k, v in out.items() if k.endswith("cache")}
        kv_theirs = {k: v for k, v in ref.items() if k.endswith("cache")}
        tok = int(out["logits"].argmax())
    a, b = statistics.median(ours_s), statistics.median(theirs_s)
    share, rest = statistics.median(shares), statistics.median(outside)
    floor = weights_floor(prog, weights, 3 * repeats)
    line = (f"  {model.name:8s} launch: amkspec {a * 1e3:8.2f} ms, original {b * 1e3:8.2f} ms, "
            f"speed-up {b / a:5.2f}x, max |diff| {diff:.3g}, sched overhead {share:6.2%} "
            f"(outside the ops, binding included: {rest:6.2%}); weights read once {floor * 1e3:.2f} ms, "
            f"original / that {b / floor:.2f}x")
    row = (f"| {model.name} | {a * 1e3:.3f} | {b * 1e3:.3f} | {b / a:.2f}x | {diff:.3g} | {share:.2%} "
           f"| {rest:.2%} | {floor * 1e3:.3f} | {b / floor:.2f}x |")
    spent = [statistics.median(p[i] for p in parts) * 1e3 for i in range(len(SPLIT))]
    row_split = f"| {model.name} | " + " | ".join(f"{ms:.3f}" for ms in spent) + f" | {b / 1.5 * 1e3:.3f} |"
    return line, row, row_split


def build_compare(model: ModelConfig, repeats: int, base: Baseline | None) -> tuple[str, str]:
    """Median CPU ms to build a VM for the model's step-0 program: amkspec's constructor whole, and
    the two parts that grow with the program (its snapshot, spec §2.4, and ``validate()``), next
    to the original's constructor (which validates too, and keeps the caller's program); printed
    and as a Markdown row."""
    prog = lower(model, "h100", CONFIG, pos=0, compat=True)

    def ms(build: Callable[[], object]) -> float:
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            build()
            times.append(time.process_time() - t0)
        return statistics.median(times) * 1e3

    whole, copied = ms(lambda: ReferenceVM(prog)), ms(lambda: snapshot(prog))
    checked = ms(lambda: validate(prog))
    line = f"  {model.name:8s} {len(prog.tasks):5d} tasks: ReferenceVM() {whole:7.2f} ms "
    line += f"(snapshot {copied:6.2f}, validate {checked:6.2f})"
    original = "-"
    if base is not None:
        theirs, weights, orig_vm = base.program(dumps(prog)), make_weights(model), base.reference_vm()
        original = f"{ms(lambda: orig_vm.ReferenceVM(theirs, weights)):.2f}"
        line += f"; original {original} ms"
    row = f"| {model.name} | {len(prog.tasks)} | {whole:.2f} | {copied:.2f} | {checked:.2f} | {original} |"
    return line, row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--skip-medium", action="store_true")
    parser.add_argument("--write-results", action="store_true",
                        help="write the tables to benchmarks/results/ (vm_*.md)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (1: tiny ops are dominated by thread wake-ups)")
    add_baseline_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    models = [TOY, TOY_2L] + ([] if args.skip_medium else [MEDIUM])
    base, banner = open_baseline(args.baseline)
    print(f"per launch vs the original ReferenceVM ({banner}); {args.steps} steps x {args.repeats} repeats")
    rows = ["| model | amkspec ms | original ms | speed-up | max abs diff | sched overhead "
            "| outside the ops | weights read once ms | original / weights read once |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    splits = ["| model | " + " ms | ".join(SPLIT) + " ms | original / 1.5 ms |",
              "|---|" + "---:|" * (len(SPLIT) + 1)]
    for m in models:
        if base is None:
            print("  original not available")
            continue
        line, row, row_split = launch_compare(m, args.steps, args.repeats, base)
        print(line)
        rows.append(row)
        splits.append(row_split)
    print("where amkspec's launch time goes (median ms per launch):")
    print("\n".join(splits))
    if args.write_results and base is not None:
        write_result("vm_vs_original.md", rows)
        write_result("vm_time_split.md", splits)
    print(f"building a VM (median ms of {5 * args.repeats})")
    builds = ["| model | tasks | ReferenceVM() ms | of which snapshot ms | of which validate ms "
              "| original's constructor ms |", "|---|---:|---:|---:|---:|---:|"]
    for m in models:
        line, row = build_compare(m, 5 * args.repeats, base)
        print(line)
        builds.append(row)
    if args.write_results:
        write_result("vm_build.md", builds)
    print("scratch bytes (activations): no reuse -> graph_color")
    for m in models:
        none, coloured = scratch(m)
        print(f"  {m.name:8s} {none:9d} -> {coloured:8d}  ({coloured / none:.1%})")
    print(f"decode: {args.steps} tokens x {args.repeats} repeats, medians; N_tile 64, graph_color pages, "
          f"{args.threads} torch thread(s)")
    for m in models:
        r = decode_bench(m, args.steps, args.repeats)
        print(f"  {m.name:8s} tasks {int(r['tasks']):5d}  sched overhead {r['overhead_share']:6.2%} "
              f"(of run() {r['overhead_of_run']:6.2%})  "
              f"launch {r['launch_ms']:8.2f} ms  tokens/s: VM {r['vm_tokens_s']:7.1f}  "
              f"loop (lower+validate+VM) {r['loop_tokens_s']:7.1f}  eager {r['eager_tokens_s']:7.1f}  "
              f"VM/eager {r['vm_tokens_s'] / r['eager_tokens_s']:.2f}")


if __name__ == "__main__":
    main()
