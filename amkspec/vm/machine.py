"""The ReferenceVM: executes a validated program by counters with real numerics (spec §2, §7).

A task fires only when every wait holds (``counter >= threshold``); it then runs
its opcode's reference numerics and increments its ``out_counter`` by exactly 1.
Counters reset to their ``init`` at every launch; KV caches persist across
launches; one launch is one forward pass (one decoded token).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import torch

from amkspec.ir import BufferKind, MegakernelProgram, Task
from amkspec.ir.gcpause import gc_paused
from amkspec.ir.graph import writers_by_buffer
from amkspec.ir.snapshot import snapshot
from amkspec.semantics import OP_SEMANTICS, OpError
from amkspec.vm.binding import bind, task_operands, values
from amkspec.vm.errors import BindingError, ExecutionError, RefusedProgram
from amkspec.vm.frame import Frame
from amkspec.vm.plan import Plan
from amkspec.vm.policies import ListOrder, Policy, Replay, SeededRandom
from amkspec.vm.replay import ShadowReplay
from amkspec.vm.stats import RunStats

Tensor = torch.Tensor
_OP_FAILURES = (OpError, RuntimeError, LookupError, ValueError, TypeError, ArithmeticError)
"""What an opcode raises on operands it cannot use (reported as :class:`ExecutionError`)."""


def _graph(task: Task) -> tuple[Any, ...]:
    return task.id, task.op, task.inputs, task.outputs, task.waits, task.out_counter, task.sm


def same_graph(a: MegakernelProgram, b: MegakernelProgram) -> bool:
    """Whether two programs differ at most in task params, cost annotations, labels and ``meta``: the
    same buffers, counters, pages, target and config, and tasks with the same ids, opcodes, operands,
    waits, counters and SMs (so the same scheduling plan runs both)."""
    return (len(a.tasks) == len(b.tasks) and a.buffers == b.buffers and a.counters == b.counters
            and a.pages == b.pages and a.target == b.target and a.config == b.config
            and all(_graph(x) == _graph(y) for x, y in zip(a.tasks, b.tasks, strict=True)))


class ReferenceVM:
    """Run ``program`` (refused with :class:`RefusedProgram` if ``validate()`` rejects it).

    The VM takes a snapshot of ``program`` (:func:`amkspec.ir.snapshot.snapshot`) before it
    validates it, and validates and runs only that copy, ``self.program``: a change the caller
    makes to ``program`` afterwards is never run unvalidated. ``self.program`` is the VM's own;
    read it, never change it. (Records nested deeper than the interpreter's stack, which only
    code can build, cannot be copied: :class:`~amkspec.ir.FormatError`.)

    ``run(weights, inputs, kv=None)`` binds weights by buffer ``source``, inputs and
    KV caches by buffer name (numpy arrays or torch tensors; never written), runs
    one launch under ``policy`` and returns ``{buffer name: tensor}`` for every
    IO_OUTPUT and KV_CACHE buffer. Without ``kv`` the caches continue from this VM's
    previous launch (zeros on the first); ``kv`` replaces them by name. The caches carried over
    are the VM's own tensors, never the copies it returned. A launch that fails while binding
    leaves them as they were; one that fails while running its tasks has written them part way,
    so the VM forgets them (as :meth:`reset` does), and the caller still holds the copies the last
    completed launch returned. ``last_stats`` describes the last launch (None when it failed).
    ``validation``: the caller's result of ``validate()`` on this very program, used when its stats
    match the snapshot (:func:`amkspec.proofs.validated`; else the VM validates); a rejected program
    is refused either way. ``_unsafe_skip_validation`` exists only to replay witnesses
    (:func:`amkspec.vm.replay_trace`) and for tests, on programs the validator rightly rejects.
    """

    def __init__(
        self, program: MegakernelProgram, *, policy: Policy | None = None, validation: Any = None,
        _unsafe_skip_validation: bool = False,
    ) -> None:
        program = snapshot(program)  # spec §2.4: what runs is exactly what was validated
        self.validation: Any = None
        if not _unsafe_skip_validation:
            from amkspec.proofs import validated

            self.validation = validated(program, validation)
            if not self.validation.ok:
                raise RefusedProgram(self.validation, vm="ReferenceVM")
        self.program = program
        self.policy: Policy = policy or ListOrder()
        self.plan = Plan.build(program)
        self.last_stats: RunStats | None = None
        self._written = set(writers_by_buffer(program))
        self._kv: dict[str, Tensor] = {}
        self._frame: Frame | None = None

    def reset(self) -> None:
        """Forget the KV caches carried over from earlier launches."""
        self._kv = {}

    @property
    def caches(self) -> dict[str, Tensor]:
        """The KV caches the next launch continues from, by name (the VM's own tensors: read them,
        never change them; empty before the first launch and after :meth:`reset`)."""
        return dict(self._kv)

    def advance(self, program: MegakernelProgram) -> None:
        """Run ``program`` from now on, keeping the launch frame (the weights bound, the KV caches
        carried): the host advancing positions between launches (spec §2.3). ``program`` must have
        this program's task graph (:func:`same_graph`: it may differ only in task params, cost
        annotations, labels and ``meta``), else ValueError. It is validated like any program
        (:class:`RefusedProgram`), as the VM's own copy: the records equal to the current program's
        are the VM's own already, the others are snapshot; only the tasks whose params changed are
        prepared again."""
        if not same_graph(self.program, program):
            raise ValueError("advance() needs a program with the same tasks, buffers, counters and waits")
        old = self.program.tasks
        tasks = [mine if mine == theirs else snapshot(theirs)
                 for mine, theirs in zip(old, program.tasks, strict=True)]
        own = attrs.evolve(self.program, tasks=tasks, meta=snapshot(program.meta))
        validation = None
        if self.validation is not None:
            from amkspec.proofs import validate

            validation = validate(own)
            if not validation.ok:
                raise RefusedProgram(validation, vm="ReferenceVM")
        changed = [pos for pos, (a, b) in enumerate(zip(old, tasks, strict=True)) if a.params != b.params]
        self.program, self.validation, self.plan.program = own, validation, own
        if self._frame is not None:
            self._frame.retarget(own, changed)

    def run(
        self, weights: Mapping[str, Any], inputs: Mapping[str, Any], kv: Mapping[str, Any] | None = None,
        *, policy: Policy | None = None, kv_out: bool = True,
    ) -> dict[str, Tensor]:
        """One launch (one forward pass); see the class docstring. ``kv_out`` False: return the
        IO_OUTPUTs only (the caches are still carried to the next launch, see :attr:`caches`)."""
        t0 = time.perf_counter()
        self.last_stats = None
        weights, inputs = values(weights, "weights"), values(inputs, "inputs")
        state = {**self._kv, **(values(kv, "kv") if kv is not None else {})}
        chosen = policy or self.policy
        if isinstance(chosen, Replay):
            bound = bind(self.program, weights, inputs, state, self._written)
            bind_s = time.perf_counter() - t0
            self._kv = {}  # running the tasks: a launch that fails from here on forgets the caches
            with gc_paused():
                stats = self._replay(bound, chosen)
        else:
            frame = self._load(weights, inputs, state)
            bound = frame.tensors
            bind_s = time.perf_counter() - t0
            self._kv = {}
            with gc_paused():
                stats = self._execute(frame.steps, chosen)
        stats.bind_s = bind_s
        self.last_stats = stats
        out = {}
        for buf in self.program.buffers:
            if buf.kind is BufferKind.IO_OUTPUT:
                out[buf.name] = bound[buf.id].clone()
            elif buf.kind is BufferKind.KV_CACHE:
                self._kv[buf.name] = bound[buf.id]  # the launch's own tensor: carried without a copy
                if kv_out:
                    out[buf.name] = bound[buf.id].clone()
        return out

    def _load(self, weights: Mapping[str, Any], inputs: Mapping[str, Any], state: Mapping[str, Any]) -> Frame:
        """The launch frame with this launch's values (:mod:`amkspec.vm.frame`), rebuilt when the
        shared weights are other objects than last time."""
        frame = self._frame
        if frame is not None and frame.matches(weights):
            frame.load(weights, inputs, state)
            return frame
        self._frame = None
        try:
            frame = Frame(self.program, weights, inputs, state, self._written)
        except (MemoryError, RuntimeError) as exc:
            raise BindingError(f"cannot allocate the program's buffers: {str(exc).splitlines()[0]}") from None
        self._frame = frame
        return frame

    def _fail(self, pos: int, exc: Exception) -> ExecutionError:
        task = self.program.tasks[pos]
        return ExecutionError(f"task {task.describe()} ({task.op.name}) failed: {exc}")

    def _execute(self, steps: list[Callable[[], None]], policy: ListOrder | SeededRandom) -> RunStats:
        """Fire the tasks in the policy's schedule (:meth:`Plan.schedule`), timing each one's numerics."""
        schedule = self.plan.schedule(policy)
        spent = [0.0] * len(steps)
        clock = time.perf_counter
        start = clock()
        for pos in schedule.order:
            t1 = clock()
            try:
                steps[pos]()
            except _OP_FAILURES as exc:
                raise self._fail(pos, exc) from exc
            spent[pos] = clock() - t1
        wall = clock() - start
        if not schedule.complete:
            raise self.plan.deadlock(schedule.done, schedule.values)
        compute = sum(spent)
        ids = [t.id for t in self.program.tasks]
        task_s = {ids[p]: spent[p] for p in schedule.order}
        return RunStats(policy.name, [ids[p] for p in schedule.order], task_s, 0.0, compute, wall - compute)

    def _replay(self, bound: dict[int, Tensor], policy: Replay) -> RunStats:
        tasks = self.program.tasks
        fns = [OP_SEMANTICS[t.op] for t in tasks]
        task_operands(self.program, bound)  # a task naming an undeclared buffer fails here, before any event

        def run_task(pos: int, ins: list[Tensor], outs: list[Tensor]) -> None:
            try:
                fns[pos](ins, outs, tasks[pos].params)
            except _OP_FAILURES as exc:
                raise self._fail(pos, exc) from exc

        shadow = ShadowReplay(self.plan, bound, run_task)
        start = time.perf_counter()
        shadow.follow(policy.trace)
        if policy.finish:
            shadow.finish()
        wall = time.perf_counter() - start
        compute = sum(shadow.task_s.values())
        return RunStats(policy.name, shadow.order, shadow.task_s, 0.0, compute, wall - compute, shadow.report)
