"""The CLI fuzz harness (issue 12): byte-level mutations of real files, run through every command.

Used by ``tests/fuzz/test_cli_fuzz.py`` (a short run in CI) and ``tools/fuzz_cli.py`` (a long
run, one subprocess per case under memory and CPU limits). Each :class:`Target` is one command
reading one kind of file; :func:`mutate` makes a hostile variant of a real file of that kind;
:func:`check` runs the command and asserts the robustness contract of
docs/guides/robustness.md: exit code 0, 1 or 2, no traceback, at most one error line on stderr
(an ``amkspec:`` prefix on every line), and every input file unchanged.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
from click.testing import CliRunner
from hypothesis import strategies as st

from amkspec.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures" / "amk"

FUZZ_ENV = {
    "AMKSPEC_MAX_INPUT_BYTES": str(8 << 20),
    "AMKSPEC_MAX_DECOMPRESSED_BYTES": str(8 << 20),
    "AMKSPEC_VM_MAX_BYTES": str(256 << 20),
}
"""Small limits for fuzzing: a mutated file can ask for a lot; the limits are what is under test."""

TOKENS: tuple[bytes, ...] = (
    b'"\\ud800"', b'"\\n valid: yes"', b"1e999", b"-1e999", b"NaN", b"-1", b"0", b"4294967296",
    b"18446744073709551616", b"9" * 60, b"[" * 200, b"]" * 200, b'{"a": 1, "a": 2}', b"null", b"true",
    b'"03"', b"{}", b"[]", b'""', b"\x00", b"\xff\xfe", b"\n",
)
"""Fragments that broke (or could break) a reader: surrogates, huge numbers, deep nesting..."""


@attrs.frozen
class Target:
    """One command reading one kind of file: ``args`` with ``{f}`` for the mutated file."""

    name: str
    kind: str
    seed: Path
    args: tuple[str, ...]
    suffix: str = ".json"


def _mutation(data: st.DataObject, text: bytes) -> bytes:
    op = data.draw(st.sampled_from(["flip", "delete", "duplicate", "insert", "token", "truncate", "replace"]))
    n = len(text)
    at = data.draw(st.integers(0, max(n - 1, 0)))
    if op == "flip" and n:
        bit = data.draw(st.integers(0, 7))
        return text[:at] + bytes([text[at] ^ (1 << bit)]) + text[at + 1:]
    if op == "delete":
        return text[:at] + text[at + data.draw(st.integers(1, 64)):]
    if op == "duplicate":
        size = data.draw(st.integers(1, 256))
        return text[:at] + text[at:at + size] * data.draw(st.integers(2, 50)) + text[at:]
    if op == "insert":
        return text[:at] + data.draw(st.binary(min_size=1, max_size=16)) + text[at:]
    if op == "token":
        return text[:at] + data.draw(st.sampled_from(TOKENS)) + text[at:]
    if op == "truncate":
        return text[:at]
    return _replace_value(data, text)


def _replace_value(data: st.DataObject, text: bytes) -> bytes:
    """Replace one JSON number or string literal with a hostile token (keeps the rest well formed)."""
    import re

    literal = rb'-?\d+(\.\d+)?([eE][+-]?\d+)?|"(?:[^"\\]|\\.)*"'
    literals = [m.span() for m in re.finditer(literal, text[:200_000])]
    if not literals:
        return text
    start, end = data.draw(st.sampled_from(literals))
    return text[:start] + data.draw(st.sampled_from(TOKENS)) + text[end:]


def mutate(data: st.DataObject, original: bytes) -> bytes:
    """One to three byte-level mutations of ``original``, sometimes gzip-wrapped."""
    text = original
    for _ in range(data.draw(st.integers(1, 3))):
        text = _mutation(data, text)
    if data.draw(st.integers(0, 9)) == 0:
        text = gzip.compress(text)
    return text


def _digest(paths: Sequence[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


Runner = Callable[[list[str], dict[str, str]], tuple[int, str, str]]


def run_in_process(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``amkspec ARGS`` through click's CliRunner: exit code, stdout, stderr (a traceback if it raised)."""
    result = CliRunner().invoke(main, args, env=env)
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        err += "Traceback (in process):\n" + "".join(traceback.format_exception(result.exception))
    return result.exit_code, result.stdout, err


def check(target: Target, payload: bytes, workdir: Path, fixed: dict[str, Path],
          runner: Runner = run_in_process) -> tuple[int, str]:
    """Run ``target`` on ``payload`` and assert the robustness contract; returns (exit code, stderr)."""
    path = workdir / f"fuzzed{target.suffix}"
    path.write_bytes(payload)
    names = {k: str(v) for k, v in fixed.items()}
    args = [a.format(f=path, out=workdir / "out.bin", **names) for a in target.args]
    inputs = [path, *fixed.values()]
    before = _digest(inputs)
    code, _, err = runner(args, FUZZ_ENV)
    assert "Traceback" not in err, f"{target.name}: traceback\n{err}"
    assert code in (0, 1, 2), f"{target.name}: exit {code}\n{err}"
    lines = err.strip().splitlines()
    assert all(line.startswith("amkspec: ") for line in lines), f"{target.name}: stderr\n{err}"
    assert sum(line.startswith("amkspec: error:") for line in lines) <= 1, f"{target.name}: stderr\n{err}"
    assert code != 2 or any(line.startswith("amkspec: error:") for line in lines), f"{target.name}: {err}"
    assert _digest(inputs) == before, f"{target.name}: an input file changed"
    leftovers = [p.name for p in workdir.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, f"{target.name}: temporary files left: {leftovers}"
    return code, err


def make_side_files(workdir: Path) -> dict[str, Path]:
    """Real files of every kind, written by amkspec itself: a certificate, a trace, weights, inputs."""
    program = EXAMPLES / "spec_example.json"
    rejected = EXAMPLES / "rejected_partial_join.json"
    cert = workdir / "cert.json"
    runner = CliRunner()
    assert runner.invoke(main, ["certify", str(program), "-o", str(cert)]).exit_code == 0
    trace = workdir / "trace.json"
    explained = runner.invoke(main, ["explain", "--json", str(rejected)])
    doc: dict[str, Any] = json.loads(explained.stdout)
    trace.write_text(json.dumps(doc["findings"][0]["witness"], indent=1))
    toy = workdir / "toy.json"
    assert runner.invoke(main, ["lower", "toy", "-o", str(toy)]).exit_code == 0
    weights = workdir / "w.npz"
    assert runner.invoke(main, ["weights", "toy", "-o", str(weights)]).exit_code == 0
    inputs = workdir / "in.json"
    inputs.write_text(json.dumps({"token_id": [3], "pos": [0], "reshape_id0": [0]}))
    config = workdir / "config.json"
    config.write_text(json.dumps({"tiling": {"gemv": {"N_tile": 64}}, "sm_assignment": "load_balance"}))
    weights_json = workdir / "w.json"
    weights_json.write_text(json.dumps({"w": [[0.5] * 4] * 4, "table": [[1.0] * 8] * 16}))
    return {"program": program, "rejected": rejected, "cert": cert, "trace": trace, "toy": toy,
            "weights": weights, "inputs": inputs, "config": config, "weights_json": weights_json}


def targets(side: dict[str, Path]) -> list[Target]:
    """Every (command, file kind) pair the harness fuzzes, each seeded with a real file."""
    programs = [EXAMPLES / "decoder_layer.json", EXAMPLES / "spec_example.json",
                FIXTURES / "toy1L__default.json", FIXTURES / "toy1L__default.pos1.json.gz"]
    out = [Target(f"validate:{p.name}", "program", p, ("validate", "{f}")) for p in programs]
    out += [
        Target("info", "program", EXAMPLES / "decoder_layer.json", ("info", "{f}")),
        Target("info --json", "program", EXAMPLES / "spec_example.json", ("info", "--json", "{f}")),
        Target("validate --json", "program", EXAMPLES / "rejected_partial_join.json",
               ("validate", "--json", "{f}")),
        Target("fmt", "program", EXAMPLES / "spec_example.json", ("fmt", "{f}", "-o", "{out}")),
        Target("fmt --check", "program", EXAMPLES / "spec_example.json", ("fmt", "--check", "{f}")),
        Target("certify", "program", EXAMPLES / "spec_example.json", ("certify", "{f}", "-o", "{out}")),
        Target("check-cert", "certificate", side["cert"], ("check-cert", "{program}", "{f}")),
        Target("replay", "trace", side["trace"], ("replay", "{rejected}", "{f}")),
        Target("replay --weights", "weights", side["weights_json"],
               ("replay", "{rejected}", "{trace}", "--weights", "{f}")),
        Target("lower --config", "config", side["config"],
               ("lower", "toy", "--target", "h100", "--config", "{f}")),
        Target("run:program", "program", side["toy"],
               ("run", "{f}", "--weights", "{weights}", "--inputs", "{inputs}")),
        Target("run:weights", "weights", side["weights"],
               ("run", "{toy}", "--weights", "{f}", "--inputs", "{inputs}"), suffix=".npz"),
        Target("run:inputs", "inputs", side["inputs"],
               ("run", "{toy}", "--weights", "{weights}", "--inputs", "{f}")),
    ]
    return out
