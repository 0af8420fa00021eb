"""Model names and ``--checkpoint PATH`` in every model command; ``decode`` of text (exit codes 0/1/2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import amkspec
from amkspec.cli import main
from amkspec.cli.options import BUILTINS, LOWERING_ONLY, MODEL_NAMES, PRESETS
from amkspec.models import MODELS, tiny
from amkspec.models.checkpoint import BUILTIN_CHECKPOINTS
from amkspec.models.registry import MODEL_NAMES as REGISTRY_NAMES
from tests.conftest import ROOT

GOLDEN = json.loads((ROOT / "tests" / "fixtures" / "real" / "tiny-hf.golden.json").read_text())


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.write_hf(tmp_path_factory.mktemp("cli") / "tiny-hf")


def test_the_cli_lists_every_model() -> None:
    assert list(PRESETS) == list(MODELS) and list(BUILTINS) == list(BUILTIN_CHECKPOINTS)
    assert list(MODEL_NAMES.choices) == list(REGISTRY_NAMES)
    assert set(LOWERING_ONLY) <= set(PRESETS)


def test_decode_text_json_is_transformers_greedy(ckpt: Path) -> None:
    row = GOLDEN["prompts"][0]
    code, out, err = _invoke("decode", "--checkpoint", str(ckpt), "--prompt", row["text"], "--tokens", "4",
                             "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["prompt_ids"] == row["prompt_ids"] and doc["new_ids"] == row["new_ids"][:4]
    assert doc["agree"] is True and doc["lowered"] == 1
    assert isinstance(doc["text"], str) and doc["text"]


def test_decode_prints_text_and_ids(ckpt: Path) -> None:
    row = GOLDEN["prompts"][1]
    code, out, _ = _invoke("decode", "--checkpoint", str(ckpt), "--prompt", row["text"], "--tokens", "2",
                           "--no-check")
    assert code == 0
    assert f"new ids: {row['new_ids'][:2]}" in out and f"prompt ids: {row['prompt_ids']}" in out
    assert "text: <|endoftext|>" + row["text"] in out and "no eager check" in out


def test_decode_keeps_the_id_form() -> None:
    code, out, _ = _invoke("decode", "toy-2L", "--prompt-ids", "3,141", "--steps", "2")
    assert code == 0 and "prompt ids: [3, 141]" in out


@pytest.mark.parametrize(("args", "needle"), [
    (["decode", "toy", "--prompt", "hello"], "has no tokenizer"),
    (["decode", "toy", "--prompt", "a", "--prompt-ids", "1"], "not both"),
    (["decode", "toy", "--prompt-ids", "a,b"], "--prompt-ids: expected comma-separated integers"),
    (["decode"], "give a MODEL name or --checkpoint PATH"),
    (["lower", "toy", "--checkpoint", "x"], "not both"),
    (["lower", "--checkpoint", "/nonexistent/m.gguf"], "no such file or directory"),
    (["evaluate", "small", "--target", "h100"], "lowering-only preset"),
    (["weights", "nope", "-o", "w.npz"], "'nope' is not one of"),
])
def test_bad_model_arguments_exit_2(args: list[str], needle: str) -> None:
    code, _, err = _invoke(*args)
    assert code == 2 and needle in err and err.count("\n") == 1, err


def test_lower_weights_and_run_a_checkpoint(ckpt: Path, tmp_path: Path) -> None:
    prog_path, weights_path = tmp_path / "p.json", tmp_path / "w.safetensors"
    assert _invoke("lower", "--checkpoint", str(ckpt), "--pos", "2", "-o", str(prog_path))[0] == 0
    prog = amkspec.load(prog_path)
    assert prog.meta["model"] == "hf:tiny-hf" and amkspec.validate(prog).ok
    code, out, _ = _invoke("weights", "--checkpoint", str(ckpt), "-o", str(weights_path))
    assert code == 0 and "21 tensors" in out
    assert _invoke("weights", "--checkpoint", str(ckpt), "--seed", "3", "-o", str(weights_path))[0] == 2
    inputs = tmp_path / "in.json"
    inputs.write_text(json.dumps({"token_id": [5], "pos": [2], "reshape_id0": [0]}))
    by_file = _invoke("run", str(prog_path), "--weights", str(weights_path), "--inputs", str(inputs))
    by_model = _invoke("run", str(prog_path), "--checkpoint", str(ckpt), "--inputs", str(inputs))
    assert by_file[0] == by_model[0] == 0
    assert by_file[1].split(" (")[0] == by_model[1].split(" (")[0]
    code, out, _ = _invoke("run", str(prog_path), "--checkpoint", str(ckpt), "--inputs", str(inputs),
                           "--steps", "3")
    assert code == 0 and out.count("launch") == 3
    assert _invoke("run", str(prog_path), "--inputs", str(inputs))[0] == 2


def test_info_propose_evaluate_and_search_take_a_checkpoint(ckpt: Path, tmp_path: Path) -> None:
    code, out, _ = _invoke("info", "--checkpoint", str(ckpt), "--json")
    assert code == 0 and json.loads(out)["validation"]["valid"]
    code, out, _ = _invoke("propose", "--checkpoint", str(ckpt), "--target", "h100")
    assert code == 0 and json.loads(out)["model"] == "tiny-hf"
    code, out, err = _invoke("evaluate", "--checkpoint", str(ckpt), "--target", "h100")
    verdict: dict[str, Any] = json.loads(out)
    assert code == 0 and verdict["correct"] and verdict["model"] == "tiny-hf", err
    code, out, err = _invoke("search", "--checkpoint", str(ckpt), "--target", "h100", "--budget", "3",
                             "--quiet", "--json", "--out", str(tmp_path / "s"))
    assert code == 0, err
    rows = (tmp_path / "s" / "results.tsv").read_text().splitlines()[1:]
    kept = [r.split("\t") for r in rows if "\tkept\t" in r or "\tkeep\t" in r]
    assert kept and all(r[4] == "True" for r in kept)
    assert json.loads(out)["statuses"]["kept"] >= 1


@pytest.fixture(scope="module")
def gguf_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.write_gguf(tmp_path_factory.mktemp("cli") / "tiny.gguf")


def test_a_gguf_runs_natively_unless_dequantized(gguf_ckpt: Path, tmp_path: Path) -> None:
    golden = json.loads((ROOT / "tests" / "fixtures" / "real" / "tiny-gguf.golden.json").read_text())
    row = golden["prompts"][0]
    reports = []
    for extra in ([], ["--dequantize"]):
        code, out, err = _invoke("decode", "--checkpoint", str(gguf_ckpt), "--prompt", row["text"],
                                 "--tokens", "3", "--json", *extra)
        assert code == 0, err
        reports.append(json.loads(out))
    assert reports[0]["new_ids"] == reports[1]["new_ids"] == row["new_ids"][:3]
    native, dense = (amkspec.loads(_invoke("lower", "--checkpoint", str(gguf_ckpt), *extra)[1])
                     for extra in ([], ["--dequantize"]))
    assert native.meta["quant"] == {"native": {"Q4_1": 14, "Q8_0": 1}} and "quant" not in dense.meta
    assert native.meta["weight_bytes"] < dense.meta["weight_bytes"] / 4
    out = tmp_path / "w.npz"
    assert _invoke("weights", "--checkpoint", str(gguf_ckpt), "-o", str(out))[0] == 0
    with np.load(out) as stored:
        assert stored["embed.weight"].dtype == np.int8 and "embed.weight.scales" in stored.files
    code, _, err = _invoke("lower", "--checkpoint", str(gguf_ckpt), "--quant", "4")
    assert code == 2 and "--dequantize" in err
    code, _, err = _invoke("lower", "--checkpoint", str(gguf_ckpt), "--batch", "2")
    assert code == 2 and "--dequantize" in err
    assert _invoke("lower", "--checkpoint", str(gguf_ckpt), "--batch", "2", "--dequantize")[0] == 0
