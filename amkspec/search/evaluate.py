"""``evaluate``: one ScheduleConfig → one honest verdict (the Loop-2 verdict; search guide, "The verdict").

The pipeline, first failure wins: check the knobs (:mod:`amkspec.lower.knobs`, launch feasibility
included) → lower → :func:`amkspec.validate` → run one decode step at position 0 on the chosen VM →
compare the logits with the eager model (:func:`amkspec.models.compare_logits`) → latency. The
latency is ``measured-gpu`` only when the CUDA megakernel ran on a real GPU, its output matched
eager, and CUDA events timed it; otherwise it is the cost model's prediction
(:func:`amkspec.lower.cost.predicted_latency_us`), labelled ``predicted``.

Nothing a config can contain makes :meth:`Evaluator.evaluate` raise: malformed knobs, lowering
failures, validator rejections, VM faults and timeouts all come back as a verdict that says so.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from amkspec.ir import AmkspecError, GpuTarget, MegakernelProgram, ScheduleConfig
from amkspec.ir.jsonio import program_sha256
from amkspec.lower import knobs
from amkspec.lower.errors import LoweringError
from amkspec.lower.lowering import lower_checked, resolve_model, resolve_target
from amkspec.models.config import ModelConfig
from amkspec.proofs import ValidationResult
from amkspec.search.verdict import Verdict
from amkspec.search.witnesses import Rejection, write_rejection
from amkspec.vms import MEGAKERNEL_BACKENDS, VM_NAMES, make_vm

Lowering = Callable[[ModelConfig, GpuTarget, ScheduleConfig, int], MegakernelProgram]
"""``(model, target, config, pos) -> program``: the lowering under test (pluggable)."""

VmRunner = Callable[[MegakernelProgram, Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]
"""``(program, weights, inputs) -> outputs by buffer name`` (what ``ReferenceVM.run`` returns)."""

VMS = VM_NAMES
TOKEN = 7
"""The probe token (the original's default)."""
GPU_WARMUP, GPU_ITERS = 5, 30


def default_lowering(model: ModelConfig, target: GpuTarget, config: ScheduleConfig, pos: int
                     ) -> MegakernelProgram:
    """amkspec's own lowering (:func:`amkspec.lower.lower`) in the model's dtype, of a config the knob
    checks built already (:func:`~amkspec.lower.lowering.lower_checked`)."""
    return lower_checked(model, target, config, pos=pos, dtype=model.dtype)




def _finite(x: float | None, digits: int) -> float | None:
    return round(x, digits) if x is not None and math.isfinite(x) else None


class _BuiltinRunner:
    """A built-in runner: also given the program's :class:`~amkspec.proofs.ValidationResult`, so the
    VM does not validate it again (a plugged-in :data:`VmRunner` is called with three arguments)."""


class _ReferenceRunner(_BuiltinRunner):
    def __call__(self, prog: MegakernelProgram, weights: Mapping[str, Any], inputs: Mapping[str, Any],
                 validation: ValidationResult | None = None) -> Mapping[str, Any]:
        from amkspec.vm import ReferenceVM

        return ReferenceVM(prog, validation=validation).run(weights, inputs)


class _MegakernelRunner(_BuiltinRunner):
    """``vm_cuda.MegakernelVM`` on the CPU build or a GPU; keeps the last VM for GPU timing."""

    def __init__(self, vm: str, timeout_s: float) -> None:
        self.vm, self.timeout_s = vm, timeout_s
        self.last: Any = None

    def __call__(self, prog: MegakernelProgram, weights: Mapping[str, Any], inputs: Mapping[str, Any],
                 validation: ValidationResult | None = None) -> Mapping[str, Any]:
        # no vm_cuda → "vm-unavailable"
        self.last = make_vm(self.vm, prog, timeout_s=self.timeout_s, validation=validation)
        return self.last.run(weights, inputs)


def make_runner(vm: str, timeout_s: float) -> VmRunner:
    """The runner of a VM by name (``reference``, ``cpu-kernel``, ``cuda``)."""
    if vm == "reference":
        return _ReferenceRunner()
    if vm in MEGAKERNEL_BACKENDS:
        return _MegakernelRunner(vm, timeout_s)
    raise LoweringError(f"unknown VM {vm!r} (use {', '.join(VMS)})")


def describe(exc: BaseException, limit: int = 300) -> str:
    """``Type: first line of the message``, printable whatever the exception holds."""
    try:
        first = (str(exc).splitlines() or [""])[0]
    except Exception:  # noqa: BLE001 - a message that cannot be rendered (an over-long int, ...)
        first = "(unprintable message)"
    return f"{type(exc).__name__}: {knobs.clip(first, limit)}"


UNAVAILABLE_ERRORS = ("BuildError", "CudaUnavailable")
"""Class names of VM errors that mean the environment lacks the VM (its build failed, no usable GPU
or pycuda): ``vm-unavailable``, never a verdict on the schedule (and never cached)."""


def _vm_failure(exc: BaseException) -> str:
    """The failure kind of a VM exception (timeouts and faults by the error's class name)."""
    name = type(exc).__name__
    if isinstance(exc, ImportError) or name in UNAVAILABLE_ERRORS:  # not installed, or unusable here
        return "vm-unavailable"
    if "Timeout" in name or "Deadlock" in name:
        return "timeout"
    if isinstance(exc, AmkspecError) or "Fault" in name:
        return "fault"
    return "error"


def runner_identity(runner: object) -> str:
    """What identifies a plugged-in VM runner in the cache context (search guide, "The cache").

    Its ``cache_identity`` string where it has one; otherwise its class (or, for a function, its
    qualified name and the hash of its code) and a hash of its attributes, so that two runners of
    the same name but other parameters (``PerturbedVM(0.0)`` and ``PerturbedVM(1.0)``) never share
    entries. An attribute rendered with its address makes every run a new identity: never a false hit.
    """
    explicit = getattr(runner, "cache_identity", None)
    if isinstance(explicit, str):
        return explicit
    code = getattr(runner, "__code__", None)
    if code is not None:
        who = f"{getattr(runner, '__module__', '?')}.{getattr(runner, '__qualname__', '?')}"
        state = code.co_code.hex() + repr(code.co_consts)
    else:
        cls = type(runner)
        who = f"{cls.__module__}.{cls.__qualname__}"
        state = json.dumps(getattr(runner, "__dict__", {}), sort_keys=True, default=repr)
    return f"{who}#{hashlib.sha256(state.encode('utf-8', 'replace')).hexdigest()[:12]}"


def plugin_name(plugin: object) -> str | None:
    """``module:qualname`` of a plugged-in lowering or runner (of its class for a callable object),
    None for the built-in one: what a resumed search must be given again (search guide)."""
    if plugin is None:
        return None
    named = plugin if hasattr(plugin, "__qualname__") else type(plugin)
    return f"{getattr(named, '__module__', '?')}:{getattr(named, '__qualname__', '?')}"


def _schedule_id(config: object) -> str:
    """``knobs.schedule_id`` for the last-resort boundary, which must not raise itself."""
    try:
        return knobs.schedule_id(config)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a config that cannot even be hashed
        return UNHASHABLE_ID


INTERNAL = "an unexpected error, reported instead of raised"
"""The note of an internal error's verdict."""

UNHASHABLE_ID = "sch_unhashable"
"""The schedule id of a config whose canonical form cannot be computed (an internal error's verdict)."""


@attrs.define
class Prepared:
    """A config that passed the knob checks and lowered: what a cache lookup needs."""

    config: ScheduleConfig
    program: MegakernelProgram
    schedule_id: str
    sha256: str


class Evaluator:
    """Evaluates configs of one model on one target and VM; weights and eager logits are made once.

    ``lowering`` and ``runner`` plug in another lowering or VM (tests use a deliberately wrong
    one). ``witness_dir``: where each distinct rejection's counterexample is written.
    """

    def __init__(self, model: ModelConfig | str | os.PathLike[str], target: GpuTarget | str, *,
                 vm: str = "reference", timeout_s: float = 10.0, lowering: Lowering | None = None,
                 runner: VmRunner | None = None, witness_dir: str | Path | None = None,
                 token: int = TOKEN) -> None:
        self.model = resolve_model(model)
        tgt = resolve_target(target)
        if tgt is None:
            raise LoweringError("evaluate needs a target")
        self.target = tgt
        self.vm = vm if runner is None else getattr(runner, "name", "custom")
        self.vm_identity = self.vm if runner is None else f"{self.vm}@{runner_identity(runner)}"
        self.runner = runner or make_runner(vm, timeout_s)
        self.lowering = lowering or default_lowering
        self.witness_dir = Path(witness_dir) if witness_dir is not None else None
        self.token = token
        self._reference: tuple[dict[str, Any], Any] | None = None

    @property
    def context(self) -> str:
        """What besides the program a verdict depends on (part of a cache entry's identity): a built-in
        VM by its name, a plugged-in runner by its name and :func:`runner_identity`."""
        return f"{self.model.name}|{self.target.name}|{self.vm_identity}|token={self.token}"

    def _base(self, sid: str) -> dict[str, Any]:
        return {"schedule_id": sid, "model": self.model.name, "target": self.target.name, "vm": self.vm}

    def reject(self, sid: str, rejection: Rejection, reason: str, note: str, failure: str = "rejected",
               **sizes: Any) -> Verdict:
        """A rejection verdict; its counterexample is written when a witness directory is set."""
        return self.attach(self._rejected(sid, rejection, reason, note, failure, **sizes), rejection)

    def _rejected(self, sid: str, rejection: Rejection, reason: str, note: str, failure: str = "rejected",
                  **sizes: Any) -> Verdict:
        return Verdict(valid=False, rejected_reason=reason, rejected_codes=rejection.codes, failure=failure,
                       notes=(note,), **self._base(sid), **sizes)

    def attach(self, verdict: Verdict, rejection: Rejection | None) -> Verdict:
        """``verdict`` naming the counterexample file of ``rejection``, written into the witness
        directory (if set) unless a file of that rejection's key is there already."""
        if rejection is None or self.witness_dir is None:
            return verdict
        try:
            witness = write_rejection(self.witness_dir, rejection)
        except OSError as exc:  # the verdict stands without its file
            return attrs.evolve(verdict, notes=(*verdict.notes, "the counterexample could not be "
                                                f"written: {describe(exc)}"))
        return attrs.evolve(verdict, witness=witness)

    def prepare(self, config: ScheduleConfig | Mapping[str, Any] | None) -> Prepared | Verdict:
        """Check the knobs and lower: a :class:`Prepared` program, or a rejection verdict."""
        sid = knobs.schedule_id(config)
        parsed, issues = knobs.parse(config, self.target)
        if parsed is None:
            reason = "; ".join(str(i) for i in issues[:4])
            return self.reject(sid, Rejection.from_issues(sid, config, issues), reason,
                               "config refused by the knob checks before lowering, nothing launched")
        try:
            prog = self.lowering(self.model, self.target, parsed, 0)
            if not isinstance(prog, MegakernelProgram):
                raise TypeError(f"the lowering returned a {type(prog).__name__}, not a MegakernelProgram")
            sha = program_sha256(prog)
        except Exception as exc:  # noqa: BLE001 - a plugged-in lowering may raise anything
            reason = f"lowering failed: {describe(exc)}"
            return self.reject(sid, Rejection.from_lowering(sid, parsed, reason, exc), reason,
                               "lower() raised, config rejected, nothing launched", failure="lowering")
        return Prepared(parsed, prog, sid, sha)

    def evaluate(self, config: ScheduleConfig | Mapping[str, Any] | None) -> Verdict:
        """The verdict of ``config`` (None: the default config). Never raises on any config."""
        try:
            prepared = self.prepare(config)
            return prepared if isinstance(prepared, Verdict) else self.finish(prepared)
        except Exception as exc:  # noqa: BLE001 - the boundary: an internal error is still a verdict
            return self.error(_schedule_id(config), describe(exc), INTERNAL)

    def error(self, sid: str, reason: str, note: str, **sizes: Any) -> Verdict:
        """The verdict of an evaluation that failed for a reason outside the schedule (failure
        ``error``, never cached): an internal error, or a search's worker that died."""
        return Verdict(valid=False, rejected_reason=f"internal error: {reason}", failure="error",
                       notes=(note,), **self._base(sid), **sizes)

    __call__ = evaluate

    def _sizes(self, prog: MegakernelProgram) -> dict[str, Any]:
        wb = prog.total_weight_bytes()
        return {"program_sha256": program_sha256(prog), "tasks": len(prog.tasks),
                "n_buffers": len(prog.buffers), "n_counters": len(prog.counters),
                "weight_mb": round(wb / 1e6, 4), "bound_us": _finite(self.target.bandwidth_bound_us(wb), 4)}

    def finish(self, p: Prepared) -> Verdict:
        """Validate, run, compare with eager and attach the latency of a lowered config."""
        return self.attach(*self.judge(p))

    def judge(self, p: Prepared) -> tuple[Verdict, Rejection | None]:
        """:meth:`finish` without writing: the verdict (no ``witness`` yet) and, for a program
        ``validate()`` rejected, its :class:`Rejection` (what a search's workers return)."""
        from amkspec.proofs import validate

        sizes = self._sizes(p.program)
        result = validate(p.program)
        if not result.ok:
            rejection = Rejection.from_program(p.schedule_id, p.config, p.program, result)
            reason = "; ".join(f"{d.code} {d.message}" for d in rejection.diagnostics[:4])
            note = "validate() rejected the lowered program, it never launches"
            return self._rejected(p.schedule_id, rejection, reason, note, **sizes), rejection
        return self._run(p, sizes, result), None

    def reference(self) -> tuple[dict[str, Any], Any]:
        """The model's weights and the eager logits of the probe token at position 0."""
        if self._reference is None:
            from amkspec.models import EagerDecoder
            from amkspec.models.quant import native_weights
            from amkspec.models.registry import eager_weights, model_weights

            weights = native_weights(model_weights(self.model))[1]  # a native checkpoint's arrays
            logits = EagerDecoder(self.model, eager_weights(self.model)).prefill([self.token])[-1:]
            self._reference = (weights, logits)
        return self._reference

    def _run(self, p: Prepared, sizes: dict[str, Any], validation: ValidationResult) -> Verdict:
        from amkspec.lower.decode import step_inputs
        from amkspec.models import compare_logits

        weights, eager = self.reference()
        base = {**self._base(p.schedule_id), **sizes}
        try:
            inputs = step_inputs(0, [self.token])
            if isinstance(self.runner, _BuiltinRunner):
                out = self.runner(p.program, weights, inputs, validation)
            else:
                out = self.runner(p.program, weights, inputs)
            logits = out["logits"]
        except Exception as exc:  # noqa: BLE001 - VM faults, timeouts, a missing VM: a verdict
            return Verdict(valid=True, failure=_vm_failure(exc), notes=(f"{self.vm} VM: {describe(exc)}",),
                           **base)
        check = compare_logits(logits, eager, self.model.dtype)
        metrics: dict[str, Any] = {"max_abs_err": _finite(check.max_abs_err, 8),
                                   "top1_agreement": _finite(check.top1_agreement, 4)}
        if not check.passed:
            return Verdict(valid=True, failure="mismatch", notes=("correctness FAIL vs eager, no latency "
                                                                  "emitted",), **metrics, **base)
        return self._latency(p, {**base, **metrics})

    def _latency(self, p: Prepared, base: dict[str, Any]) -> Verdict:
        from amkspec.lower.cost import predicted_latency_us

        notes: list[str] = []
        measured = self._gpu_time(notes)
        if measured is not None:
            latency, kind = measured, "measured-gpu"
        else:
            latency, kind = predicted_latency_us(p.program, self.target), "predicted"
            notes.append("latency predicted by the cost model (no GPU-timed run matched eager)")
        lat, bound = _finite(latency, 4), base["bound_us"]
        if lat is None or (bound is not None and lat < bound):
            notes.append(f"latency {latency!r} µs is below the bandwidth floor or not finite: dropped")
            return Verdict(valid=True, correct=True, notes=tuple(notes), **base)
        ratio = _finite(lat / bound, 3) if bound else None
        return Verdict(valid=True, correct=True, latency_us=lat, latency_kind=kind, latency_over_bound=ratio,
                       gpu_timed=kind == "measured-gpu", notes=tuple(notes), **base)

    def _gpu_time(self, notes: list[str]) -> float | None:
        """Median CUDA-event time (µs) of the megakernel just run, only if it ran on a real GPU and
        every timed run's logits still match eager; None otherwise."""
        runner = self.runner
        if not isinstance(runner, _MegakernelRunner) or runner.vm != "cuda" or runner.last is None:
            return None
        try:
            from amkspec.lower.decode import step_inputs
            from amkspec.models import compare_logits

            weights, eager = self.reference()
            inputs = step_inputs(0, [self.token])
            times = []
            for i in range(GPU_WARMUP + GPU_ITERS):
                out = runner.last.run(weights, inputs)
                if i >= GPU_WARMUP:  # the kernel's own CUDA events (vm_cuda.cuda.CudaRuntime)
                    times.append(runner.last.runtime.last_kernel_s * 1e6)
                if not compare_logits(out["logits"], eager, self.model.dtype).passed:
                    notes.append("a timed GPU run disagreed with eager: latency not measured")
                    return None
            return statistics.median(times)
        except Exception as exc:  # noqa: BLE001 - timing is best effort: fall back to predicted
            notes.append(f"GPU timing failed ({type(exc).__name__}): falling back to the cost model")
            return None


def evaluate(model: ModelConfig | str | os.PathLike[str], target: GpuTarget | str,
             config: ScheduleConfig | Mapping[str, Any] | None = None, *, vm: str = "reference",
             timeout_s: float = 10.0, lowering: Lowering | None = None,
             witness_dir: str | Path | None = None) -> Verdict:
    """Evaluate one config of ``model`` on ``target`` (see :class:`Evaluator`); never raises on a config.

    Raises :class:`~amkspec.lower.LoweringError` only for an unknown model, target or VM name.
    """
    return Evaluator(model, target, vm=vm, timeout_s=timeout_s, lowering=lowering,
                     witness_dir=witness_dir).evaluate(config)
