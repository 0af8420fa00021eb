"""Reading the built cubin's machine code (spec §8.7, kernel design): what the SASS tests and
``tools/gpu_check.py`` pin about the GEMV hot loop and the register budget.

:func:`functions` splits ``nvdisasm``'s listing into functions (the kernel and every out-of-line
device function, ``$amk_megakernel$<mangled name>``); :func:`loops` finds the loop bodies (a
backward branch and its target); :func:`hot_loop` is the innermost loop of a function with the
most 16-byte global loads; :func:`resources` is ``cuobjdump -res-usage`` for the kernel.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import attrs

from vm_cuda.build import BuildError, cuda_tool

WIDE_LOAD = "LDG.E.128"
"""A 16-byte global load (``ld.global.nc.v4`` is ``LDG.E.128.CONSTANT``)."""
LOCAL = ("LDL", "STL")
"""Local-memory loads and stores: register spills."""


def _run(tool: str, *args: str) -> str:
    path = cuda_tool(tool)
    if path is None:
        raise BuildError(f"{tool} not found (pip install nvidia-cuda-{tool}, or put CUDA's bin on PATH)")
    proc = subprocess.run([path, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"{tool} {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return proc.stdout


def functions(cubin: Path) -> dict[str, list[str]]:
    """Function name → its lines (instructions and labels), from ``nvdisasm``."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in _run("nvdisasm", str(cubin)).splitlines():
        found = re.match(r"\s*\.type\s+([^,]+),@function", line)
        if found:
            current = out.setdefault(found.group(1).split("$")[-1], [])
        elif current is not None:
            current.append(line)
    return out


def _instruction(line: str) -> tuple[str, str] | None:
    """(opcode, operands) of a listing line, or None."""
    found = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*)", line)
    return (found.group(1), found.group(2)) if found else None


def _registers(text: str) -> set[int]:
    """The general registers an operand text names (``R28.64`` is R28 and R29)."""
    out: set[int] = set()
    for number, wide in re.findall(r"\bR(\d+)(\.64)?", text):
        out.update(range(int(number), int(number) + (2 if wide else 1)))
    return out


@attrs.frozen
class Loop:
    """The instructions of one loop body, in order, and where it lies in the function."""

    instructions: tuple[tuple[str, str], ...]
    start: int = 0
    end: int = 0

    @property
    def opcodes(self) -> tuple[str, ...]:
        return tuple(op for op, _ in self.instructions)

    def contains(self, other: Loop) -> bool:
        return self is not other and self.start <= other.start and other.end <= self.end

    def count(self, prefix: str) -> int:
        return sum(op.startswith(prefix) for op in self.opcodes)

    def loads_in_flight(self) -> int:
        """The most 16-byte loads issued and not yet read at any point of the body, running it twice
        (a load issued for the next iteration stays in flight across the back edge)."""
        pending: list[set[int]] = []
        most = 0
        for op, operands in self.instructions * 2:
            dest, _, sources = operands.partition(",")
            reads = _registers(operands if op.startswith(("ST", "BRA", "ISETP")) else sources)
            pending = [regs for regs in pending if not regs & reads]
            if op.startswith(WIDE_LOAD):
                first = min(_registers(dest))
                pending.append(set(range(first, first + 4)))
                most = max(most, len(pending))
        return most


def loops(lines: list[str]) -> list[Loop]:
    """Every loop body of a function: from a label to a branch back to it."""
    labels: dict[str, int] = {}
    ops: list[tuple[str, str]] = []  # (opcode, operands)
    for line in lines:
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            labels[label.group(1)] = len(ops)
            continue
        instruction = _instruction(line)
        if instruction is not None:
            ops.append(instruction)
    found = []
    for i, (op, operands) in enumerate(ops):
        target = re.search(r"`\((\.L_x_\d+)\)", operands)
        if op.startswith("BRA") and target and labels.get(target.group(1), i + 1) <= i:
            start = labels[target.group(1)]
            found.append(Loop(tuple(ops[start : i + 1]), start, i))
    return found


def hot_loop(lines: list[str]) -> Loop | None:
    """The innermost loop with the most 16-byte global loads (the GEMV inner loop), or None."""
    every = loops(lines)
    innermost = [a for a in every if not any(a.contains(b) for b in every)]
    best = max(innermost, key=lambda loop: loop.count(WIDE_LOAD), default=None)
    return best if best is not None and best.count(WIDE_LOAD) > 0 else None


def resources(cubin: Path, function: str = "amk_megakernel") -> dict[str, int]:
    """``cuobjdump -res-usage`` of ``function``: REG, STACK, SHARED, LOCAL, ... as ints."""
    text = _run("cuobjdump", "-res-usage", str(cubin))
    found = re.search(rf"Function {re.escape(function)}:\s*\n\s*(.*)", text)
    if found is None:
        raise BuildError(f"no resource usage for {function} in {cubin}")
    return {k: int(v) for k, v in re.findall(r"(\w+(?:\[\d+\])?):(\d+)", found.group(1))}
