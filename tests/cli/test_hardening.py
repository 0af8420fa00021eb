"""Regression tests of issue 12 (hardening): one test per defect, each failed before the fix.

Every bad input gives exit 0, 1 or 2 (130 on Ctrl-C), one ``amkspec: error:`` line on stderr
and no traceback; no command destroys its input or leaves a half-written file.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from amkspec.cli import main
from amkspec.ir.limits import MAX_INT_DIGITS, MAX_JSON_DEPTH, MAX_SHAPE_DIMS
from tests.conftest import EXAMPLES, ROOT

PROGRAM = EXAMPLES / "decoder_layer.json"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def one_error(result: Result, code: int = 2) -> str:
    """The single stderr line of a failed command (asserting exit code and no traceback)."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amkspec: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def program_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(PROGRAM.read_text())
    return doc


def write_json(path: Path, doc: Any) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


# -- 1: atomic writes, never over an input ------------------------------------------------------


_REAL_OPEN = io.open


class _FullDisk(io.RawIOBase):
    """A writable file whose every write fails like a full disk (the file was still created)."""

    def __init__(self, name: str) -> None:
        _REAL_OPEN(name, "wb").close()  # truncates, as a real open for writing does

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _REAL_OPEN

    def fake_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(m in mode for m in "wax"):
            raw = _FullDisk(os.fspath(file))
            return io.TextIOWrapper(io.BufferedWriter(raw)) if "b" not in mode else io.BufferedWriter(raw)
        return real(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr("builtins.open", fake_open)


def test_fmt_in_place_on_a_full_disk_leaves_the_program_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prog = tmp_path / "p.json"
    prog.write_text(json.dumps(program_doc()))  # not canonical: fmt has something to write
    before = prog.read_bytes()
    _full_disk(monkeypatch)
    line = one_error(run("fmt", str(prog), "-o", str(prog)))
    assert "No space left" in line
    assert prog.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"], "a temporary file was left behind"


def test_ctrl_c_while_writing_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "schema.json"
    out.write_text("old")
    import amkspec.ir.atomic as atomic

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic, "_fsync", interrupted)
    assert one_error(run("schema", "-o", str(out)), 130).endswith("interrupted")
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["schema.json"]


def test_fmt_in_place_rewrites_atomically(tmp_path: Path) -> None:
    prog = tmp_path / "p.json"
    prog.write_text(json.dumps(program_doc()))
    os.chmod(prog, 0o640)
    assert run("fmt", str(prog), "-o", str(prog)).exit_code == 0
    assert run("fmt", "--check", str(prog)).exit_code == 0
    assert os.stat(prog).st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    "args",
    [
        ("certify", "{prog}", "-o", "{prog}"),
        ("lower", "toy", "--config", "{prog}", "-o", "{prog}"),
    ],
)
def test_a_command_refuses_to_overwrite_its_input(tmp_path: Path, args: tuple[str, ...]) -> None:
    prog = tmp_path / "p.json"
    prog.write_bytes(PROGRAM.read_bytes())
    line = one_error(run(*(a.format(prog=prog) for a in args)))
    assert "refusing to overwrite the input file" in line
    assert prog.read_bytes() == PROGRAM.read_bytes()


# -- 2: buffers bounded by the target's memory; the VM refuses what it cannot allocate -----------


def test_validate_rejects_a_buffer_larger_than_the_target_memory(tmp_path: Path) -> None:
    doc = program_doc()
    doc["buffers"].append({**doc["buffers"][-1], "id": len(doc["buffers"]), "name": "huge",
                           "kind": "ACTIVATION", "shape": [2**31 - 1, 2**31 - 1], "source": None})
    result = run("validate", write_json(tmp_path / "huge.json", doc))
    assert result.exit_code == 1 and "S117" in result.stdout


def test_the_vm_refuses_a_program_it_cannot_allocate(tmp_path: Path) -> None:
    prog, weights, inputs = _toy(tmp_path)
    line = one_error(run("run", prog, "--weights", weights, "--inputs", inputs,
                         env={"AMKSPEC_VM_MAX_BYTES": "4096"}))
    assert "more than the ReferenceVM may allocate" in line


def test_a_failed_allocation_is_a_binding_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from amkspec.lower import lower
    from amkspec.vm import ReferenceVM
    from amkspec.vm.errors import BindingError

    vm = ReferenceVM(lower("toy", None, None))

    def no_memory(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("DefaultCPUAllocator: not enough memory")

    monkeypatch.setattr(torch, "zeros", no_memory)
    with pytest.raises(BindingError, match="cannot allocate"):
        vm.run({}, {})


# -- 3: duplicate keys and int-key aliases ----------------------------------------------------------


def test_a_duplicate_key_is_a_format_error_with_its_path(tmp_path: Path) -> None:
    text = PROGRAM.read_text().replace('"label": ', '"label": "x", "label": ', 1)
    bad = tmp_path / "dup.json"
    bad.write_text(text)
    line = one_error(run("validate", str(bad)))
    assert 'tasks[0]: duplicate key "label"' in line


def test_int_keyed_map_aliases_are_a_format_error(tmp_path: Path) -> None:
    doc = program_doc()
    doc["config"] = {**(doc.get("config") or {}), "sm_assignment": {"3": 0, "03": 1}}
    line = one_error(run("validate", write_json(tmp_path / "alias.json", doc)))
    assert 'config.sm_assignment["03"]' in line and "both mean 3" in line


# -- 4: KV positions -------------------------------------------------------------------------------


def _toy(tmp_path: Path, pos: int = 0) -> tuple[str, str, str]:
    prog, weights, inputs = tmp_path / "toy.json", tmp_path / "w.npz", tmp_path / "in.npz"
    assert run("lower", "toy", "--pos", str(pos), "-o", str(prog)).exit_code == 0
    assert run("weights", "toy", "-o", str(weights)).exit_code == 0
    np.savez(inputs, token_id=np.array([1], np.int32), pos=np.array([pos], np.int32),
             reshape_id0=np.array([0], np.int32))
    return str(prog), str(weights), str(inputs)


def _damaged_npy() -> bytes:
    """A ``.npy`` whose header dict lost its closing brace (numpy's header parser then raises
    ``tokenize.TokenError``, found by ``tools/fuzz_cli.py``)."""
    buf = io.BytesIO()
    np.save(buf, np.zeros(3, np.float32))
    return buf.getvalue().replace(b"}", b" ", 1)


def test_weights_with_a_damaged_npy_header_are_unusable_input(tmp_path: Path) -> None:
    import zipfile

    prog, _, inputs = _toy(tmp_path)
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("embed.npy", _damaged_npy())
    line = one_error(run("run", prog, "--weights", str(bad), "--inputs", inputs))
    assert "not a readable .npz file" in line


def test_a_uint64_position_does_not_wrap_around(tmp_path: Path) -> None:
    prog, weights, _ = _toy(tmp_path)
    wrap = tmp_path / "wrap.npz"
    np.savez(wrap, token_id=np.array([1], np.int32), pos=np.array([2**64 - 1], np.uint64),
             reshape_id0=np.array([0], np.int32))
    line = one_error(run("run", prog, "--weights", weights, "--inputs", str(wrap)))
    assert "18446744073709551615" in line and "outside the KV caches' rows" in line


def test_binding_refuses_an_integer_outside_the_buffer_dtype() -> None:
    from amkspec.ir import Buffer, BufferKind, DType, MemSpace
    from amkspec.vm.binding import convert
    from amkspec.vm.errors import BindingError

    buf = Buffer(0, "pos", BufferKind.IO_INPUT, DType.I32, (1,), MemSpace.HBM, None)
    with pytest.raises(BindingError, match="losslessly"):
        convert(np.array([2**64 - 1], np.uint64), buf, "input 'pos'", True)
    assert convert(np.array([7], np.uint64), buf, "input 'pos'", True).tolist() == [7]


def test_steps_past_the_maximum_position_are_refused_before_running(tmp_path: Path) -> None:
    prog, weights, inputs = _toy(tmp_path, pos=250)
    out = tmp_path / "out.npz"
    result = run("run", prog, "--weights", weights, "--inputs", inputs, "--steps", "10", "-o", str(out))
    line = one_error(result)
    assert "needs positions up to 259" in line and "nothing was run" in line
    assert "launch" not in result.stdout and not out.exists()


def test_a_failed_launch_writes_what_completed_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amkspec.vm import ExecutionError, ReferenceVM

    prog, weights, inputs = _toy(tmp_path)
    real_run, calls = ReferenceVM.run, []

    def second_fails(self: ReferenceVM, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise ExecutionError("task 3:x failed: boom")
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(ReferenceVM, "run", second_fails)
    out = tmp_path / "out.npz"
    result = run("run", prog, "--weights", weights, "--inputs", inputs, "--steps", "3", "-o", str(out))
    line = one_error(result, 1)
    assert "launches 0..0" in line and str(out) in line
    with np.load(out) as saved:
        assert saved.files and all(k.startswith("s0__") for k in saved.files)


# -- 5, 6, 7 ---------------------------------------------------------------------------------------


def test_an_empty_object_is_not_a_trace(tmp_path: Path) -> None:
    line = one_error(run("replay", str(PROGRAM), write_json(tmp_path / "t.json", {})))
    assert "not a trace" in line


@pytest.mark.parametrize("knobs", [{"tiling": {"gemv": {"N_tile": 0}}}, {"tiling": {"gemv": {"N_tile": -4}}}])
def test_lower_refuses_a_bad_tile_size(tmp_path: Path, knobs: dict[str, Any]) -> None:
    one_error(run("lower", "toy", "--config", write_json(tmp_path / "c.json", knobs)))


def test_lower_with_sm_assignment_needs_a_target(tmp_path: Path) -> None:
    config = write_json(tmp_path / "c.json", {"sm_assignment": "round_robin"})
    one_error(run("lower", "toy", "--config", config))


def test_decode_has_a_default_prompt() -> None:
    result = run("decode", "toy", "--steps", "1")
    assert result.exit_code == 0, result.output
    assert "VM and eager agree" in result.stdout


# -- 8: size caps ----------------------------------------------------------------------------------


def test_a_gzip_bomb_is_refused_by_the_decompressed_size_cap(tmp_path: Path) -> None:
    bomb = tmp_path / "p.json.gz"
    bomb.write_bytes(gzip.compress(PROGRAM.read_bytes() + b" " * 200_000))
    assert bomb.stat().st_size < 20_000
    line = one_error(run("validate", str(bomb), env={"AMKSPEC_MAX_DECOMPRESSED_BYTES": "100000"}))
    assert "decompressed data is larger than 100000 bytes" in line
    assert "AMKSPEC_MAX_DECOMPRESSED_BYTES" in line


def test_an_endless_input_is_refused_by_the_size_cap() -> None:
    t0 = time.perf_counter()
    line = one_error(run("validate", "/dev/zero", env={"AMKSPEC_MAX_INPUT_BYTES": "1000000"}))
    assert "larger than 1000000 bytes" in line
    assert time.perf_counter() - t0 < 10


def test_a_large_file_is_refused_by_the_raw_size_cap(tmp_path: Path) -> None:
    line = one_error(run("info", str(PROGRAM), env={"AMKSPEC_MAX_INPUT_BYTES": "100"}))
    assert "the file is larger than 100 bytes" in line


# -- 10: timeouts and Ctrl-C -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0.0001", "0"])
def test_prove_rules_refuses_a_timeout_it_cannot_honour(value: str) -> None:
    assert "--timeout" in one_error(run("prove-rules", "--timeout", value))


def test_ctrl_c_exits_130_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import amkspec.cli.commands.ir as ir_commands

    def interrupted(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(ir_commands, "summarize", interrupted)
    assert one_error(run("info", str(PROGRAM)), 130) == "amkspec: error: interrupted"


def test_ctrl_c_stops_prove_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    import _thread
    import threading

    import amkspec.smt.theorems as theorems

    started = threading.Event()
    real_prove = theorems.prove

    def prove(*args: Any, **kwargs: Any) -> Any:
        started.set()
        return real_prove(*args, **kwargs)

    def ctrl_c() -> None:  # as the SIGINT handler delivers it, once a query runs
        if started.wait(60):
            time.sleep(0.5)
            _thread.interrupt_main()

    monkeypatch.setattr(theorems, "prove", prove)
    timer = threading.Thread(target=ctrl_c, daemon=True)
    timer.start()
    t0 = time.perf_counter()
    result = run("prove-rules", "--max-tasks", "16", "--theorem", "deadlock-freedom")
    timer.join()
    took = time.perf_counter() - t0
    t1 = time.perf_counter()
    for worker in [t for t in threading.enumerate() if t.name == "amkspec-z3"]:
        worker.join(120)  # never leave a Z3 query running into the next test
    assert one_error(result, 130) == "amkspec: error: interrupted"
    assert took < 20, "the Z3 query went on after Ctrl-C"
    assert time.perf_counter() - t1 < 2, "the Z3 worker still ran after the command ended"


# -- 11, 12, 13 ----------------------------------------------------------------------------------------


def test_newlines_in_labels_cannot_forge_report_lines(tmp_path: Path) -> None:
    doc = program_doc()
    forged = "x\nvalid: yes (0 errors, 0 warnings)"
    doc["tasks"][0]["label"] = forged
    doc["tasks"][0]["inputs"] = [len(doc["buffers"])]  # names no buffer: the label is in the report
    path = write_json(tmp_path / "forged.json", doc)
    for args in (("validate", path), ("info", path), ("explain", path)):
        result = run(*args)
        assert not any(line.startswith("valid: yes") for line in result.stdout.splitlines()), result.stdout
        assert "x\\nvalid: yes" in result.stdout


def test_forged_versions_cannot_forge_info_lines(tmp_path: Path) -> None:
    doc = program_doc()
    doc["ir_version"] = "0.2.0\nvalid: no (7 errors, 0 warnings)"
    doc["abi_version"] = "0.2\rmodel: forged"
    result = run("info", write_json(tmp_path / "forged.json", doc))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("valid:")] == ["valid: yes (0 errors, 0 warnings)"]
    assert "versions:      ir 0.2.0\\nvalid: no (7 errors, 0 warnings), abi 0.2\\rmodel: forged" in lines


def test_text_reports_judge_the_program_not_its_escaped_copy(tmp_path: Path) -> None:
    doc = program_doc()
    doc["target"]["name"] = doc["meta"]["gpu"] = "h100\tx"  # equal: no O502 (spec §3.5)
    path = write_json(tmp_path / "tab.json", doc)
    as_json = json.loads(run("validate", "--json", path).stdout)["files"][0]
    assert as_json["ok"] and as_json["warnings"] == []
    text = run("validate", path)
    assert text.exit_code == 0 and "0 warning(s)" in text.stdout and "O502" not in text.stdout, text.stdout
    info = run("info", path)
    assert "valid: yes (0 errors, 0 warnings)" in info.stdout and "h100\\tx" in info.stdout, info.stdout


def test_a_closed_stdout_is_an_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "amkspec", "schema"], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=300)
    assert proc.returncode == 2
    expected = "amkspec: error: cannot write the output: standard output is closed"
    assert proc.stderr.decode().strip() == expected


def test_a_full_stdout_is_an_error() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "amkspec", "schema"], cwd=ROOT, stdout=full,
                              stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 2 and b"No space left on device" in proc.stderr
    assert len(proc.stderr.decode().strip().splitlines()) == 1


def test_bare_amkspec_prints_a_short_usage() -> None:
    result = run()
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("usage: amkspec") and len(lines) <= 4
    assert all(name in lines[1] for name in ("validate", "info", "run", "certify"))


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import amkspec.cli.commands.ir as ir_commands

    def bug(*args: Any) -> Any:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(ir_commands, "summarize", bug)
    quiet = run("info", str(PROGRAM))
    assert quiet.exit_code == 3 and "internal error: ZeroDivisionError: a bug" in quiet.stderr
    assert isinstance(run("--debug", "info", str(PROGRAM)).exception, ZeroDivisionError)


# -- the tracebacks -----------------------------------------------------------------------------------


def test_an_integer_over_4300_digits_is_a_format_error(tmp_path: Path) -> None:
    doc_text = PROGRAM.read_text().replace('"meta": {', '"meta": {"big": ' + "9" * 5000 + ", ", 1)
    bad = tmp_path / "big.json"
    bad.write_text(doc_text)
    assert "(4300 digits)" in one_error(run("info", str(bad)))


def test_an_integer_field_is_bounded_by_the_digit_cap(tmp_path: Path) -> None:
    doc = program_doc()
    doc["buffers"][0]["shape"] = [10**MAX_INT_DIGITS.default]
    line = one_error(run("info", write_json(tmp_path / "dim.json", doc)))
    assert f"buffers[0].shape[0]: an integer has more than {MAX_INT_DIGITS.default} digits" in line


def test_a_lone_surrogate_in_a_label_is_a_format_error(tmp_path: Path) -> None:
    text = PROGRAM.read_text().replace('"label": "', '"label": "\\udc80', 1)
    bad = tmp_path / "s.json"
    bad.write_text(text)
    for command in ("info", "validate", "fmt"):
        assert "tasks[0].label: a string holds a lone UTF-16 surrogate" in one_error(run(command, str(bad)))


@pytest.mark.parametrize("dims", [2, 4, 9, 64, 120])
def test_huge_weight_shapes_in_info(tmp_path: Path, dims: int) -> None:
    doc = program_doc()
    weight = next(b for b in doc["buffers"] if b["kind"] == "WEIGHT")
    weight["shape"] = [10**39] * dims  # 9 dims: too many bytes for a float; 120: 4,680 digits
    path = write_json(tmp_path / "w.json", doc)
    for args in (("info", path), ("info", "--json", path)):
        result = run(*args)
        if dims > MAX_SHAPE_DIMS.default:
            assert f"more than {MAX_SHAPE_DIMS.default} dims" in one_error(result)
        else:
            assert result.exit_code == 0 and result.exception is None, result.output


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "command",
    [
        ("check-cert", str(PROGRAM), "{f}"),
        ("replay", str(PROGRAM), "{f}"),
        ("replay", str(PROGRAM), "{t}", "--weights", "{f}"),
        ("lower", "toy", "--config", "{f}"),
        ("run", str(PROGRAM), "--weights", "{f}", "--inputs", "{f}"),
        ("info", "{f}"),
    ],
    ids=["certificate", "trace", "weights", "config", "inputs", "program"],
)
@pytest.mark.parametrize(
    "content",
    [_deep(MAX_JSON_DEPTH.default + 5), _deep(100_000), "[" + "9" * 5000 + "]", '{"a": 1e999999}'],
    ids=["deep", "very-deep", "huge-int", "huge-float"],
)
def test_deep_nesting_and_huge_numbers_in_every_file_kind(
    tmp_path: Path, command: tuple[str, ...], content: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    trace = write_json(tmp_path / "trace.json", [])
    one_error(run(*(a.format(f=bad, t=trace) for a in command)))


@pytest.mark.parametrize("seed", [str(2**64), str(2**70), "-1"])
@pytest.mark.parametrize(
    "command",
    [
        ("weights", "toy", "-o", "{d}/w.npz"),
        ("replay", str(PROGRAM), "{t}"),
        ("search", "toy", "--target", "h100", "--budget", "1", "--out", "{d}/s"),
    ],
    ids=["weights", "replay", "search"],
)
def test_seeds_outside_uint64_are_usage_errors(tmp_path: Path, command: tuple[str, ...], seed: str) -> None:
    trace = write_json(tmp_path / "trace.json", [])
    assert "--seed" in one_error(run(*(a.format(d=tmp_path, t=trace) for a in command), "--seed", seed))


def test_the_largest_seed_works(tmp_path: Path) -> None:
    result = run("weights", "toy", "-o", str(tmp_path / "w.npz"), "--seed", str(2**64 - 1))
    assert result.exit_code == 0, result.output
    search = ("search", "toy", "--target", "h100", "--budget", "2", "--out", str(tmp_path / "s"), "--quiet",
              "--json")
    result = run(*search, "--seed", str(2**64 - 1))
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["trials"] == 2


def test_info_json_is_valid_json_for_a_nan_target(tmp_path: Path) -> None:
    doc = json.loads(PROGRAM.read_text())
    doc["meta"]["model"] = float("nan")
    doc["target"]["hbm_bandwidth_gbs"] = float("nan")
    path = write_json(tmp_path / "nan.json", doc)
    result = run("info", "--json", path)
    assert result.exit_code == 0, result.output
    json.loads(result.stdout, parse_constant=lambda name: pytest.fail(f"{name} in info --json"))


_INTERRUPT_AT_IMPORT = """
import sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "amkspec.cli":
            raise KeyboardInterrupt
        return None
sys.meta_path.insert(0, Interrupt())
from amkspec.launch import main
main()
"""


def test_ctrl_c_while_the_command_line_loads_is_one_line_and_exit_130() -> None:
    done = subprocess.run([sys.executable, "-c", _INTERRUPT_AT_IMPORT, "validate", "x.json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (130, "amkspec: error: interrupted\n", "")


def test_python_dash_m_amkspec_runs_the_command_line_through_launch() -> None:
    done = subprocess.run([sys.executable, "-m", "amkspec", "--version"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip().endswith("0.1.0"), done.stderr
