"""The real-checkpoint oracle, offline: amkspec's decode against transformers' greedy ids and top-k
logits recorded in ``tests/fixtures/real/*.golden.json`` by ``tools/make_real_golden.py``.

Token for token on the ReferenceVM and the megakernel's CPU build, with a GGUF file's Q4_1 / Q8_0
tensors run natively (the default) and dequantized; the top-k logits within
:data:`amkspec.models.oracle.REFERENCE_TOLERANCE`; the tokenizers' ids and text exactly. The tiny
checkpoints (``amkspec/models/tiny.py``) are written again and must be the very files the golden was
made from (their SHA-256). SmolLM2-135M runs the coarse schedule (one tile per projection) for CI time.
The ReferenceVM tests are ``numerics`` tests (run again on torch's plain CPU path); the megakernel's
arithmetic is its own.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from amkspec.lower.decode import greedy_decode
from amkspec.lower.knobs import coarse_config
from amkspec.models import tiny
from amkspec.models.checkpoint import Checkpoint, builtin_path, load_checkpoint
from amkspec.models.oracle import REFERENCE_TOLERANCE
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "fixtures" / "real"


def golden(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((GOLDEN / f"{name}.golden.json").read_text())
    return doc


def megakernel(prog: Any) -> Any:
    """The megakernel's CPU build (``python3 -m vm_cuda`` builds it)."""
    import vm_cuda

    return vm_cuda.MegakernelVM(prog, "cpu", timeout_s=600)


def check_prompt(ck: Checkpoint, row: dict[str, Any], tokens: int, make_vm: Any = None,
                 config: Any = None) -> None:
    """Greedy ids equal transformers'; each step's top-k logits within the reference tolerance."""
    run = greedy_decode(ck.config, row["prompt_ids"], tokens, config=config, weights=ck.weights, eager=False,
                        make_vm=make_vm)
    assert run.vm_generated[0] == row["new_ids"][:tokens]
    atol, rtol = REFERENCE_TOLERANCE
    generated = run.steps[len(row["prompt_ids"]) - 1:]
    for got, step in zip(generated, row["steps"][:tokens], strict=True):
        assert got.logits is not None
        top = got.logits.reshape(-1)[step["top_ids"]]
        assert torch.allclose(top, torch.tensor(step["top_logits"]), atol=atol, rtol=rtol), \
            (top - torch.tensor(step["top_logits"])).abs().max()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory: pytest.TempPathFactory) -> Checkpoint:
    path = tiny.write_hf(tmp_path_factory.mktemp("real") / "tiny-hf")
    assert sha256(path / "model.safetensors") == golden("tiny-hf")["sha256"], \
        "the tiny HF checkpoint changed: regenerate its golden with tools/make_real_golden.py"
    return load_checkpoint(path)


@pytest.fixture(scope="module")
def tiny_gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tiny.write_gguf(tmp_path_factory.mktemp("real") / "tiny.gguf")
    assert sha256(path) == golden("tiny-gguf")["sha256"], \
        "the tiny GGUF checkpoint changed: regenerate its golden with tools/make_real_golden.py"
    return path


@pytest.fixture(scope="module")
def tiny_gguf(tiny_gguf_path: Path) -> Checkpoint:
    return load_checkpoint(tiny_gguf_path)


@pytest.fixture(scope="module")
def tiny_gguf_dequantized(tiny_gguf_path: Path) -> Checkpoint:
    return load_checkpoint(tiny_gguf_path, dequantize=True)


@pytest.fixture(scope="module")
def smollm2() -> Checkpoint:
    ck = load_checkpoint(builtin_path("smollm2-135m"), name="smollm2-135m")
    assert ck.config.native_quant and ck.weights  # read once for the module
    return ck


@pytest.fixture(scope="module")
def smollm2_dequantized(smollm2: Checkpoint) -> Checkpoint:
    return load_checkpoint(builtin_path("smollm2-135m"), name="smollm2-135m", dequantize=True)


@pytest.mark.parametrize("name", ["tiny-hf", "tiny-gguf", "smollm2-135m"])
def test_tokenizer_matches_transformers(name: str, request: pytest.FixtureRequest) -> None:
    ck = request.getfixturevalue(name.replace("-", "_").replace("smollm2_135m", "smollm2"))
    for row in golden(name)["tokenizer"]:
        assert ck.tokenizer.encode(row["text"]) == row["ids"], row["text"]
        assert ck.tokenizer.decode(row["ids"]) == row["decoded"], row["text"]
    for row in golden(name)["prompts"]:
        assert ck.tokenizer.encode(row["text"]) == row["prompt_ids"]


TINY = ["tiny_hf", "tiny_gguf", "tiny_gguf_dequantized"]


def _golden_of(fixture: str) -> dict[str, Any]:
    return golden("-".join(fixture.split("_")[:2]))


@pytest.mark.numerics
@pytest.mark.parametrize("fixture", TINY)
def test_tiny_checkpoints_match_transformers(fixture: str, request: pytest.FixtureRequest) -> None:
    ck = request.getfixturevalue(fixture)
    assert ck.config.native_quant == (fixture == "tiny_gguf")
    for row in _golden_of(fixture)["prompts"]:
        check_prompt(ck, row, len(row["new_ids"]))


@pytest.mark.parametrize("fixture", TINY)
def test_tiny_checkpoints_on_the_megakernel(fixture: str, request: pytest.FixtureRequest) -> None:
    ck = request.getfixturevalue(fixture)
    check_prompt(ck, _golden_of(fixture)["prompts"][0], 3, make_vm=megakernel)


@pytest.mark.numerics
def test_smollm2_native_on_the_reference_vm(smollm2: Checkpoint) -> None:
    row = golden("smollm2-135m")["prompts"][0]
    check_prompt(smollm2, row, len(row["new_ids"]), config=coarse_config())


@pytest.mark.numerics
def test_smollm2_dequantized_on_the_reference_vm(smollm2_dequantized: Checkpoint) -> None:
    rows = golden("smollm2-135m")["prompts"]
    check_prompt(smollm2_dequantized, rows[0], len(rows[0]["new_ids"]), config=coarse_config())
    check_prompt(smollm2_dequantized, rows[2], 3, config=coarse_config())


@pytest.mark.parametrize("fixture", ["smollm2", "smollm2_dequantized"])
def test_smollm2_on_the_megakernel(fixture: str, request: pytest.FixtureRequest) -> None:
    row = golden("smollm2-135m")["prompts"][1]
    assert len(row["prompt_ids"]) == 1
    check_prompt(request.getfixturevalue(fixture), row, 2, make_vm=megakernel, config=coarse_config())
