"""One fact, one place: the opcode defaults and the ABI's caps and launch facts are typed only in
``amkspec.ir`` and read from there everywhere else (spec §7, §8).

Each rule scans the sources for a copy of a fact; the last checks the device side's meaning of a
default: the packer fills it, so the ``.cuh`` files can read the field as it is.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from amkspec.ir import PARAM_DEFAULTS, PARAM_FIELDS, PARAM_LAYOUT, BufferKind, DType, InstructionKind
from amkspec.ir.builder import ProgramBuilder
from amkspec.ir.opcodes import OP_REGISTRY, default_text
from vm_cuda.pack import Packer

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "amkspec"
OPCODES = PACKAGE / "ir" / "opcodes.py"
ENUMS = PACKAGE / "ir" / "enums.py"
LIMITS = PACKAGE / "ir" / "limits.py"
DEFAULTS = [(kind, key, value) for kind, values in PARAM_DEFAULTS.items() for key, value in values.items()]
NAMES_OF_LAUNCH_FACTS = ("WARP", "BLOCK", "THREADS")
OTHER_BLOCKS = {PACKAGE / "models" / "ggml_blocks.py"}
"""Files whose ``BLOCK = 32`` is another fact (GGML's 32-weight quantisation block)."""


def _sources(*globs: str, skip: frozenset[Path] = frozenset()) -> Iterator[Path]:
    for pattern in globs:
        yield from (p for p in sorted(ROOT.glob(pattern)) if p not in skip)


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def _number(node: ast.AST) -> float | None:
    """The value of a numeric literal (``1e-6``, ``-1``), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    return None


def test_no_call_passes_a_default_as_a_literal() -> None:
    """Rule 1: ``f(…, "eps", …, 1e-6)`` (a param name beside its default) outside ``ir/opcodes.py``."""
    found = []
    for path in _sources("amkspec/**/*.py", skip=frozenset({OPCODES})):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            args = [*node.args, *(k.value for k in node.keywords)]
            keys = {a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
            numbers = {n for n in map(_number, args) if n is not None}
            found += [
                f"{_where(path, node)} {key}={value!r}"
                for _, key, value in DEFAULTS
                if key in keys and value in numbers
            ]
    assert not found, "defaults typed again (read amkspec.ir.param_default):\n" + "\n".join(found)


def _prose(path: Path) -> Iterator[tuple[ast.AST, str]]:
    """Every string constant of a module (docstrings and the literal parts of f-strings included)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node, node.value


def _shown(kind: InstructionKind, key: str) -> str:
    """A regex for the default as prose writes it: the spec's rendering or ASCII minus."""
    text = default_text(kind, key).split(" = ", 1)[1]
    return "|".join(re.escape(v) for v in {text, text.replace("\N{MINUS SIGN}", "-")})


def test_no_prose_states_a_default() -> None:
    """Rule 2: ``eps = 1e-6`` / ``eps default 1e-6`` in a string or docstring (render it with
    :func:`amkspec.ir.default_text`)."""
    patterns = [
        (key, re.compile(rf"\b{key}\s*(=|default)\s*({_shown(kind, key)})(?![\d.])"))
        for kind, key, _ in DEFAULTS
    ]
    found = [
        f"{_where(path, node)} {key}: {text!r}"
        for path in _sources("amkspec/**/*.py", skip=frozenset({OPCODES}))
        for node, text in _prose(path)
        for key, pattern in patterns
        if pattern.search(text)
    ]
    assert not found, "defaults stated in prose:\n" + "\n".join(found)


DEVICE_DEFAULT = re.compile(
    r"amk_param_[fi]\([^;]*AMK_P_(EPS|THETA|SCALE|DIM)\s*,\s*[-+]?[\d.]+(e[-+]?\d+)?f?\s*\)"
)
DEVICE_LAUNCH_DEFINE = re.compile(
    r"#define\s+AMK_(WARP|OP_MAX_THREADS|MAX_INPUTS|MAX_OUTPUTS|MAX_WAITS|MAX_RANK)\b"
)


def test_the_device_reads_defaults_the_packer_filled() -> None:
    """Rule 3: no ``.cuh`` passes a literal default for a PARAM_DEFAULTS param, and the launch and
    capacity macros are defined once, in ``abi.h`` (checked against ``amkspec.ir`` by the drift test)."""
    found = []
    for path in _sources("vm_cuda/**/*.cuh", "vm_cuda/**/*.cu", "vm_cuda/**/*.h"):
        text = path.read_text()
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in DEVICE_DEFAULT.finditer(text)]
        if path.name != "abi.h":
            found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in DEVICE_LAUNCH_DEFINE.finditer(text)]
    assert not found, "device literals of amkspec.ir facts:\n" + "\n".join(found)


CAP_PROSE = re.compile(
    r"\b[48] (inputs|outputs|waits)\b|rank (≤|<=) ?4\b|\b[12]\.\.8\b|\"(inputs|outputs|waits)\": ?[48]\b"
    r"|multiple of 32\b|\[32, 1024\]|AMK_BLOCK_THREADS=\d"
)


def _launch_literals(path: Path) -> Iterator[str]:
    """Assignments of 32 or 1024 to a name that says warp, block or threads."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = (
                zip(target.elts, node.value.elts, strict=False)
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                else [(target, node.value)]
            )
            for name, value in pairs:
                if (
                    isinstance(name, ast.Name)
                    and any(word in name.id.upper() for word in NAMES_OF_LAUNCH_FACTS)
                    and _number(value) in (32.0, 1024.0)
                ):
                    yield f"{_where(path, node)} {name.id}"


def test_abi_caps_and_launch_facts_are_read_from_amkspec_ir() -> None:
    """Rule 4: the ABI caps (8 inputs, 4 outputs, 8 waits, rank 4) and the launch facts (warp 32,
    block ≤ 1024) are typed in ``ir/enums.py`` only."""
    found = []
    scanned = ("amkspec/**/*.py", "vm_cuda/*.py", "conformance/*.py", "corpus/*.py")
    for path in _sources(*scanned, skip=frozenset({ENUMS})):
        text = path.read_text()
        found += [
            f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1} {m.group(0)!r}"
            for m in CAP_PROSE.finditer(text)
        ]
        if path not in OTHER_BLOCKS:
            found += list(_launch_literals(path))
    assert not found, "ABI caps or launch facts typed again:\n" + "\n".join(found)


def test_the_float32_bound_is_typed_once() -> None:
    """Rule 4, last fact: the largest finite float32 (S111, the certificate checker) is
    ``amkspec.ir.limits.FLOAT32_MAX``."""
    found = [
        str(path.relative_to(ROOT))
        for path in _sources("amkspec/**/*.py", "vm_cuda/*.py", skip=frozenset({LIMITS}))
        if re.search(r"3\.40282346\d*e\+?38", path.read_text())
    ]
    assert not found, f"FLOAT32_MAX typed again in {found}"


def _one_task(kind: InstructionKind, fused: bool) -> Packer:
    """A program of one ``kind`` task (or one FUSED task whose single step is ``kind``) that gives
    no params, packed without validation (only the params rows are read)."""
    b = ProgramBuilder()
    n_in = OP_REGISTRY[kind].min_inputs
    ins = [b.new_buffer(f"x{i}", BufferKind.IO_INPUT, DType.F32, (1, 8)) for i in range(n_in)]
    out = b.new_buffer("out", BufferKind.IO_OUTPUT, DType.F32, (1, 8))
    if fused:
        step = {"op": kind.name, "args": [{"in": i} for i in range(n_in)], "out": "final"}
        b.add_task(InstructionKind.FUSED, ins, [out], params={"recipe": {"steps": [step]}})
    else:
        b.add_task(kind, ins, [out])
    return Packer(b.build(), _unsafe_skip_validation=True)


@pytest.mark.parametrize("fused", [False, True], ids=["task", "fused-step"])
@pytest.mark.parametrize(("kind", "key", "value"), DEFAULTS, ids=[f"{k.name}-{p}" for k, p, _ in DEFAULTS])
def test_the_packer_fills_every_default(kind: InstructionKind, key: str, value: float, fused: bool) -> None:
    """Rule 5: what lets the device read a defaulted field as it is: a task (or FUSED step) that
    leaves the param out packs it with its mask bit set and the default's value."""
    row = _one_task(kind, fused).instructions[1 if fused else 0]
    assert int(row["op"]) == kind
    assert int(row["param_mask"]) >> PARAM_LAYOUT.index(key) & 1, f"{kind.name} {key} not marked filled"
    expect = np.float32(value) if PARAM_FIELDS[key] == "f" else int(value)
    assert row["params"][key] == expect
