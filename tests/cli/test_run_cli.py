"""``amkspec lower``, ``weights``, ``run``, ``decode`` and the demo step (exit codes 0/1/2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import amkspec
from amkspec.cli import main
from amkspec.cli.demo_steps import run_toy_models
from amkspec.lower import lower
from amkspec.models import LogitCheck
from tests.conftest import FIXTURES
from tests.models.test_weights import assert_the_originals_weights

DEFAULT = FIXTURES / "toy1L__default.json"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_lower_reproduces_the_fixture_in_compat_mode(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    code, _, err = _invoke("lower", "toy", "--config", str(DEFAULT), "--target", "rtx5090", "--compat",
                           "-o", str(out))
    assert code == 0, err
    ours, ref = amkspec.load(out), amkspec.load(DEFAULT)
    assert ours.target is not None and ref.target is not None
    ours.target.note = ref.target.note
    assert amkspec.dumps(ours) == DEFAULT.read_text()


def test_lower_to_stdout_with_options(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"tiling": {"gemv": {"N_tile": 16}}, "page_allocation": "graph_color"}))
    code, out, _ = _invoke("lower", "toy-2L", "--config", str(cfg), "--pos", "3", "--dtype", "BF16",
                           "--batch", "2", "--target", "t4")
    assert code == 0
    prog = amkspec.loads(out)
    assert prog.meta["pos"] == 3 and prog.meta["dtype"] == "BF16" and prog.pages is not None
    assert amkspec.validate(prog).ok


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["lower", "toy", "--pos", "999"], "outside"),
        (["lower", "toy", "--config", "/nonexistent.json"], "cannot read"),
        (["lower", "toy", "--config", str(FIXTURES / "README.md")], "cannot read"),
        (["weights", "toy", "-o", "w.txt"], ".npz or .safetensors"),
        (["decode", "toy", "--prompt-ids", "1,x"], "comma-separated"),
        (["decode", "toy", "--prompt-ids", "999"], "prompt tokens"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    code, _, err = _invoke(*[a.replace("w.txt", str(tmp_path / "w.txt")) for a in args])
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1


def test_bad_config_value_names_the_field(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"pipelining_depth": "deep"}))
    code, _, err = _invoke("lower", "toy", "--config", str(cfg))
    assert code == 2 and "pipelining_depth" in err


@pytest.mark.numerics
@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_weights_export_matches_the_original(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"w{suffix}"
    code, _, _ = _invoke("weights", "toy", "-o", str(path))
    assert code == 0
    ref = np.load(FIXTURES / "toy-1L.weights.npz")
    if suffix == ".npz":
        got = dict(np.load(path))
    else:
        from safetensors.numpy import load_file

        got = load_file(str(path))
    assert_the_originals_weights({k: got[k] for k in ref.files}, {k: ref[k] for k in ref.files})


@pytest.mark.numerics
def test_run_three_steps_reproduces_the_original_outputs(tmp_path: Path) -> None:
    inputs = tmp_path / "in.json"
    inputs.write_text(json.dumps({"token_id": [7], "pos": [0], "reshape_id0": [0]}))
    out = tmp_path / "out.npz"
    code, stdout, err = _invoke("run", str(DEFAULT), "--weights", str(FIXTURES / "toy-1L.weights.npz"),
                                "--inputs", str(inputs), "--steps", "3", "-o", str(out))
    assert code == 0, err
    assert "argmax [25]" in stdout and "argmax [202]" in stdout
    got, expected = np.load(out), np.load(FIXTURES / "toy1L__default.expected.npz")
    for key in expected.files:
        assert np.allclose(got[key], expected[key], atol=1e-5), key


def test_run_once_with_kv_and_random_policy(tmp_path: Path) -> None:
    prog = tmp_path / "p1.json"
    amkspec.dump(lower("toy", "rtx5090", None, pos=1), prog)
    expected = np.load(FIXTURES / "toy1L__default.expected.npz")
    kv = tmp_path / "kv.npz"
    np.savez(kv, **{"L0.kcache": expected["s0__L0.kcache"], "L0.vcache": expected["s0__L0.vcache"]})
    feed = tmp_path / "in.npz"
    np.savez(feed, token_id=np.array([25], np.int32), pos=np.array([1], np.int32),
             reshape_id0=np.array([0], np.int32))
    out = tmp_path / "out.npz"
    code, _, err = _invoke("run", str(prog), "--weights", str(FIXTURES / "toy-1L.weights.npz"), "--inputs",
                           str(feed), "--kv", str(kv), "--policy", "random", "--seed", "3", "-o", str(out))
    assert code == 0, err
    assert np.allclose(np.load(out)["logits"], expected["s1__logits"], atol=1e-5)


def test_run_refuses_what_it_cannot_advance_or_validate(tmp_path: Path) -> None:
    weights, feed = str(FIXTURES / "toy-1L.weights.npz"), tmp_path / "in.json"
    feed.write_text(json.dumps({"token_id": [7], "pos": [0], "reshape_id0": [0]}))
    edited = amkspec.load(DEFAULT)
    edited.tasks[0].label = "renamed"
    path = tmp_path / "edited.json"
    amkspec.dump(edited, path)
    code, _, err = _invoke("run", str(path), "--weights", weights, "--inputs", str(feed), "--steps", "2")
    assert code == 2 and "re-lowered" in err
    edited.tasks[1].waits = []
    amkspec.dump(edited, path)
    code, _, err = _invoke("run", str(path), "--weights", weights, "--inputs", str(feed))
    assert code == 1 and "refused" in err and len(err.strip().splitlines()) == 1
    code, _, err = _invoke("run", str(DEFAULT), "--weights", weights, "--inputs", str(FIXTURES / "README.md"))
    assert code == 2


def test_decode_prints_agreement_and_json() -> None:
    code, out, _ = _invoke("decode", "toy", "--prompt-ids", "7", "--steps", "3")
    assert code == 0 and "agree" in out and "vm→[25]" in out
    code, out, _ = _invoke("decode", "toy-2L", "--prompt-ids", "1,2", "--steps", "2", "--json", "--dtype",
                           "F16",
                           "--target", "rtx5090")
    report = json.loads(out)
    assert code == 0 and report["agree"] and len(report["steps"]) == 3 and len(report["new_ids"]) == 2
    assert report["prompt_ids"] == [1, 2] and report["text"] is None


def test_decode_exits_1_on_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("amkspec.lower.decode.compare_logits",
                        lambda *a, **k: LogitCheck(False, 1.0, 1.0, 0.0, 0.1, 1e-4, 1e-4))
    code, out, _ = _invoke("decode", "toy", "--prompt-ids", "7", "--steps", "1")
    assert code == 1 and "DISAGREE" in out


def test_demo_step_reports_agreement(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_toy_models(Path("."))
    out = capsys.readouterr().out
    assert "toy-2L" in out and "DISAGREE" not in out


def test_quantized_lower_weights_and_run(tmp_path: Path) -> None:
    prog, weights, feed = tmp_path / "q.json", tmp_path / "qw.npz", tmp_path / "in.json"
    assert _invoke("lower", "toy", "--quant", "4", "--group", "32", "-o", str(prog))[0] == 0
    assert _invoke("weights", "toy", "--quant", "4", "--group", "32", "-o", str(weights))[0] == 0
    feed.write_text(json.dumps({"token_id": [7], "pos": [0], "reshape_id0": [0]}))
    code, out, err = _invoke("run", str(prog), "--weights", str(weights), "--inputs", str(feed),
                             "--steps", "2")
    assert code == 0, err
    assert out.count("argmax") == 2
    code, out, _ = _invoke("decode", "toy", "--prompt-ids", "7", "--steps", "2", "--quant", "8")
    assert code == 0 and "agree" in out
    assert _invoke("lower", "toy", "--quant", "4", "--group", "0")[0] == 2


@pytest.mark.parametrize("suffix", [".npz", ".safetensors", ".bin"])
def test_unreadable_weights_exit_2(tmp_path: Path, suffix: str) -> None:
    bad, feed = tmp_path / f"w{suffix}", tmp_path / "in.json"
    bad.write_text("garbage")
    feed.write_text(json.dumps({"token_id": [7], "pos": [0], "reshape_id0": [0]}))
    code, _, err = _invoke("run", str(DEFAULT), "--weights", str(bad), "--inputs", str(feed))
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1
