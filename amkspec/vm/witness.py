"""Replaying a trace or a witness on the ReferenceVM without real data (spec §2.2, §2.4).

A witness from the Z3 layer comes with no weights and no inputs. :func:`replay_trace`
binds whatever the caller does not supply with synthetic data — seeded normal
values for float WEIGHT/CONST/IO_INPUT buffers, zeros for integer ones (valid as
token ids and positions) — and replays the trace with shadow state, so the report
shows which reads were stale and the values they saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import torch

from amkspec.ir import READONLY_KINDS, Buffer, BufferKind, MegakernelProgram
from amkspec.semantics import storage_shape, torch_dtype
from amkspec.vm.errors import DeadlockError
from amkspec.vm.machine import ReferenceVM
from amkspec.vm.policies import Replay
from amkspec.vm.replay import ReplayReport
from amkspec.vm.stats import RunStats

Tensor = torch.Tensor


@attrs.frozen
class ReplayResult:
    """The outputs of a replayed launch, its stats, and the shadow-state report."""

    outputs: dict[str, Tensor]
    stats: RunStats
    report: ReplayReport


def synthetic(buffer: Buffer, generator: torch.Generator) -> Tensor:
    """Seeded standard-normal values for a float buffer, zeros for any other."""
    shape = storage_shape(buffer.dtype, buffer.shape)
    if buffer.dtype.is_float:
        return torch.randn(shape, generator=generator).to(torch_dtype(buffer.dtype))
    return torch.zeros(shape, dtype=torch_dtype(buffer.dtype))


def replay_trace(
    program: MegakernelProgram, trace: Any, *, weights: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None, kv: Mapping[str, Any] | None = None, seed: int = 0,
    finish: bool = True,
) -> ReplayResult:
    """Replay ``trace`` on ``program`` with shadow state, whether or not ``validate()`` accepts it
    (witnesses are traces of rejected programs); missing weights and inputs are synthesised."""
    generator = torch.Generator().manual_seed(seed)
    weights, inputs = dict(weights or {}), dict(inputs or {})
    for buf in program.buffers:
        if buf.kind in READONLY_KINDS:
            is_input = buf.kind is BufferKind.IO_INPUT
            table = inputs if is_input else weights
            key = buf.name if is_input else buf.source or buf.name
            if key not in table:
                table[key] = synthetic(buf, generator)
    vm = ReferenceVM(program, _unsafe_skip_validation=True)
    outputs = vm.run(weights, inputs, kv, policy=Replay(trace, finish=finish))
    assert vm.last_stats is not None and vm.last_stats.replay is not None
    return ReplayResult(outputs, vm.last_stats, vm.last_stats.replay)


def confirm_witness(program: MegakernelProgram, witness: Mapping[str, Any], seed: int = 0) -> str | None:
    """Drive the ReferenceVM by a witness's trace (shadow state, synthetic data) and check that it
    reproduces what the witness claims: the stale read, the overlapping writes, the clobbered
    page, or — after the trace, with every runnable task run — the stuck state (spec §2.2, §3).

    Returns None when it does, else the reason it does not (never raises on a malformed witness).
    """
    if not isinstance(witness, Mapping):
        return "the witness is not an object"
    kind, roles = witness.get("kind"), witness.get("roles")
    if not isinstance(roles, Mapping):
        return "the witness has no roles object"
    stuck = kind in ("deadlock", "cycle")
    try:
        result = replay_trace(program, witness.get("events", []), seed=seed, finish=stuck)
    except DeadlockError:
        return None if stuck else "the replay deadlocked before showing the claimed race"
    except Exception as exc:  # noqa: BLE001 - any failure to replay means "not confirmed"
        return f"the ReferenceVM cannot replay it: {type(exc).__name__}: {exc}"
    if stuck:
        return "after the trace the ReferenceVM runs every task: nothing is stuck"
    return _shows(result.report, str(kind), roles)


def _shows(report: ReplayReport, kind: str, roles: Mapping[str, Any]) -> str | None:
    stale = report.stale_reads
    if kind in ("read-race", "kv-race"):
        reader, buffer, writer = roles.get("reader"), roles.get("buffer"), roles.get("writer")
        hit = any(r.reader == reader and r.buffer == buffer and writer in r.pending for r in stale)
        return None if hit else "the replayed read sees every overlapping write complete"
    if kind == "unwritten-read":
        reader, buffer = roles.get("reader"), roles.get("buffer")
        hit = any(r.reader == reader and r.buffer == buffer and r.unwritten for r in stale)
        return None if hit else "the replayed read sees only written elements"
    if kind == "write-race":
        pair = {roles.get("first"), roles.get("second")}
        hit = any({c.first, c.second} == pair and c.buffer == roles.get("buffer") for c in report.conflicts)
        return None if hit else "the replayed writers never overlap on a common element"
    if kind == "page-clobber":
        hit = any(
            r.reader == roles.get("reader") and r.buffer == roles.get("buffer")
            and r.clobbered_by == roles.get("clobberer")
            for r in stale
        )
        return None if hit else "the replayed read sees its page intact"
    return f"no replay check for witness kind {kind!r}"
