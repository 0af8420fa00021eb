"""Output and launch obligations (codes O5xx, spec §3.5, §5.1).

Every IO_OUTPUT is produced, the GPU label agrees with the target, and when the
program carries a ``config`` the launch is feasible: ``threads_per_block`` a
multiple of :data:`~amkspec.ir.WARP` up to :data:`~amkspec.ir.MAX_THREADS_PER_BLOCK` and
``smem_bytes_per_block`` a non-negative int within the target's opt-in limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import compress, repeat
from operator import is_

from amkspec.ir import MAX_THREADS_PER_BLOCK, WARP, BufferKind, ScheduleConfig
from amkspec.proofs.diagnostics import Diagnostic, Family, Severity, diag, register
from amkspec.proofs.index import ProgramIndex, is_int

_O = Family.OUTPUTS
OUTPUT_NOT_PRODUCED = register(
    "O501", _O, Severity.ERROR, "an IO_OUTPUT buffer is written by no task"
)
GPU_LABEL = register("O502", _O, Severity.WARNING, "meta['gpu'] differs from target.name")
BLOCK_SIZE = register(
    "O503", _O, Severity.ERROR,
    f"threads_per_block is not a multiple of {WARP} in [{WARP}, {MAX_THREADS_PER_BLOCK}]",
)
SMEM_OPTIN = register(
    "O504", _O, Severity.ERROR, "smem_bytes_per_block is not an int in [0, target opt-in limit]"
)


def check_outputs(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Output reachability: every IO_OUTPUT has a writer (spec §3.5)."""
    for bid in compress(ix.buffers, map(is_, ix.buffer_kinds, repeat(BufferKind.IO_OUTPUT))):
        if not ix.writers.get(bid):
            yield diag(
                OUTPUT_NOT_PRODUCED,
                f"IO_OUTPUT buffer {ix.buffer_name(bid)} is never produced",
                buffers=[bid],
            )


def check_gpu_label(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """``meta['gpu']`` names the target (spec §3.5: the flywheel derives the GPU from target.name)."""
    meta, target = ix.prog.meta, ix.prog.target
    gpu = meta.get("gpu") if isinstance(meta, dict) else None
    name = getattr(target, "name", None)
    if gpu is not None and name is not None and gpu != name:
        yield diag(GPU_LABEL, f"meta['gpu'] = {gpu!r} but target.name = {name!r}")


def block_size_error(tpb: object) -> str | None:
    """Why ``tpb`` threads per block cannot launch (O503, spec §5.1), or None: the one rule the
    validator checks and the megakernel's loader applies (it builds a kernel for every size it allows)."""
    if not is_int(tpb) or not WARP <= tpb <= MAX_THREADS_PER_BLOCK:
        return f"threads_per_block = {tpb!r} is out of range [{WARP}, {MAX_THREADS_PER_BLOCK}]"
    if tpb % WARP:
        return f"threads_per_block = {tpb} is not a multiple of the warp size ({WARP})"
    return None


def check_launch(ix: ProgramIndex) -> Iterator[Diagnostic]:
    """Launch feasibility of ``config`` against ``target`` (spec §3.5, §5.1)."""
    config = ix.prog.config
    if not isinstance(config, ScheduleConfig):
        return
    problem = block_size_error(config.threads_per_block)
    if problem is not None:
        yield diag(BLOCK_SIZE, f"config.{problem}")
    smem = config.smem_bytes_per_block
    target = ix.prog.target
    cap = getattr(target, "smem_bytes_per_block_optin", None) if target is not None else None
    if not is_int(smem) or smem < 0:
        yield diag(SMEM_OPTIN, f"config.smem_bytes_per_block = {smem!r} is not a non-negative int")
    elif is_int(cap) and smem > cap:
        yield diag(
            SMEM_OPTIN,
            f"config.smem_bytes_per_block = {smem} exceeds the opt-in limit of target "
            f"{getattr(target, 'name', '?')} ({cap} bytes)",
        )
