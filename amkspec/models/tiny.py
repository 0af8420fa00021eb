"""Tiny Llama checkpoints for the tests and tools: an HF directory and a GGUF file, random but the same
bytes on every machine (numpy's PCG64, then BF16 or gguf's own quantizers).

``tools/make_real_golden.py`` writes the same files and records transformers' answers for them in
``tests/fixtures/real/``; the tests write them again and compare amkspec's answers with those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
MERGES = [
    ("h", "e"), ("Ġ", "t"), ("Ġt", "he"), ("T", "he"), ("Ġ", "a"), ("i", "s"), ("Ġ", "is"), ("a", "p"),
    ("c", "ap"), ("Ġ", "cap"), ("i", "t"), ("a", "l"), ("Ġcap", "it"), ("Ġcapit", "al"), ("o", "f"),
    ("Ġ", "of"), ("r", "a"), ("n", "c"), ("Ġ", "F"), ("ĠF", "ra"), ("ĠFra", "nc"), ("ĠFranc", "e"),
    ("Ċ", "Ċ"), ("Ġ", "Ġ"),
]
"""Byte-level BPE merges of the tiny tokenizer (``Ġ`` is a space, ``Ċ`` a newline)."""

DIMS: dict[str, Any] = {"hidden": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "head_dim": 16,
                        "intermediate": 96, "rope_theta": 50000.0, "rms_eps": 1e-5, "context": 128}


def vocabulary() -> list[str]:
    """Specials, then the 256 byte symbols, then each merge's result."""
    from tokenizers import pre_tokenizers

    return [*SPECIALS, *sorted(pre_tokenizers.ByteLevel.alphabet()), *(a + b for a, b in MERGES)]


def tokenizer(bos: bool) -> Any:
    """The tiny byte-level BPE ``tokenizers.Tokenizer`` (``<|endoftext|>`` prepended when ``bos``)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = vocabulary()
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(vocab)}, MERGES))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    if bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{SPECIALS[0]} $A",
                                                           special_tokens=[(SPECIALS[0], 0)])
    return tok


def weights(seed: int, tied: bool) -> dict[str, np.ndarray]:
    """HF-named float32 weights (q/k rows in rotate-half order)."""
    rng = np.random.default_rng(seed)
    d = DIMS
    h, q, kv, i, v = d["hidden"], d["n_heads"] * d["head_dim"], d["n_kv_heads"] * d["head_dim"], \
        d["intermediate"], len(vocabulary())

    def mat(rows: int, cols: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    def norm() -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(h)).astype(np.float32)

    out = {"model.embed_tokens.weight": mat(v, h, 0.1)}
    for n in range(d["n_layers"]):
        p = f"model.layers.{n}"
        out[f"{p}.input_layernorm.weight"] = norm()
        out[f"{p}.self_attn.q_proj.weight"] = mat(q, h, h ** -0.5)
        out[f"{p}.self_attn.k_proj.weight"] = mat(kv, h, h ** -0.5)
        out[f"{p}.self_attn.v_proj.weight"] = mat(kv, h, h ** -0.5)
        out[f"{p}.self_attn.o_proj.weight"] = mat(h, q, q ** -0.5)
        out[f"{p}.post_attention_layernorm.weight"] = norm()
        out[f"{p}.mlp.gate_proj.weight"] = mat(i, h, h ** -0.5)
        out[f"{p}.mlp.up_proj.weight"] = mat(i, h, h ** -0.5)
        out[f"{p}.mlp.down_proj.weight"] = mat(h, i, i ** -0.5)
    out["model.norm.weight"] = norm()
    if not tied:
        out["lm_head.weight"] = mat(v, h, h ** -0.5)
    return out


def hf_config(tied: bool, **overrides: Any) -> dict[str, Any]:
    """A transformers LlamaConfig document of the tiny model."""
    d = DIMS
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": d["hidden"],
            "num_hidden_layers": d["n_layers"], "num_attention_heads": d["n_heads"],
            "num_key_value_heads": d["n_kv_heads"], "head_dim": d["head_dim"],
            "intermediate_size": d["intermediate"], "vocab_size": len(vocabulary()),
            "rms_norm_eps": d["rms_eps"], "rope_theta": d["rope_theta"],
            "max_position_embeddings": d["context"], "hidden_act": "silu", "tie_word_embeddings": tied,
            "attention_bias": False, "mlp_bias": False, "bos_token_id": 0, "eos_token_id": 2,
            "torch_dtype": "bfloat16", **overrides}


def write_hf(directory: Path, *, seed: int = 1, tied: bool = False, config: dict[str, Any] | None = None,
             tensors: dict[str, Any] | None = None) -> Path:
    """An HF checkpoint directory: ``config.json`` (``config`` overrides keys), the weights in BF16
    as ``model.safetensors`` (``tensors`` replaces or adds tensors; a None value drops one), and a
    ``tokenizer.json`` that prepends ``<|endoftext|>``."""
    import torch
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(hf_config(tied, **(config or {})), indent=2))
    state: dict[str, Any] = {k: torch.from_numpy(v).to(torch.bfloat16)
                             for k, v in weights(seed, tied).items()}
    for k, v in (tensors or {}).items():
        if v is None:
            state.pop(k, None)
        else:
            state[k] = v
    save_file(state, str(directory / "model.safetensors"))
    tokenizer(bos=True).save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": SPECIALS[0], "eos_token": SPECIALS[2],
         "clean_up_tokenization_spaces": False}))
    return directory


def permute_rows(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter's q/k row order: within each head, the two rotate-half halves interleaved."""
    rows = w.shape[0]
    return w.reshape(heads, 2, rows // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


GGUF_NAMES = {
    "embed_tokens": "token_embd", "input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down", "norm": "output_norm", "lm_head": "output",
}


def gguf_name(hf: str) -> str:
    """``model.layers.3.self_attn.q_proj.weight`` → ``blk.3.attn_q.weight``."""
    base = hf.removeprefix("model.").removesuffix(".weight")
    if base.startswith("layers."):
        _, n, rest = base.split(".", 2)
        return f"blk.{n}.{GGUF_NAMES[rest]}.weight"
    return f"{GGUF_NAMES[base]}.weight"


def write_gguf(path: Path, *, seed: int = 2, tied: bool = True, arch: str = "llama",
               extra: dict[str, Any] | None = None, tensors: dict[str, Any] | None = None) -> Path:
    """A GGUF file as llama.cpp's converter writes a Llama model: q/k rows permuted, the projections
    Q4_1, the embedding (and an untied output) Q8_0, norms F32, a gpt2 tokenizer in the metadata.
    ``extra`` adds metadata (``{key: value}`` by ``gguf`` writer method name); ``tensors`` replaces
    or adds tensors by GGUF name (``(array, type)``; None drops one)."""
    import gguf

    d = DIMS
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(d["n_layers"])
    w.add_context_length(d["context"])
    w.add_embedding_length(d["hidden"])
    w.add_feed_forward_length(d["intermediate"])
    w.add_head_count(d["n_heads"])
    w.add_head_count_kv(d["n_kv_heads"])
    w.add_rope_freq_base(d["rope_theta"])
    w.add_layer_norm_rms_eps(d["rms_eps"])
    w.add_rope_dimension_count(d["head_dim"])
    vocab = vocabulary()
    w.add_vocab_size(len(vocab))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(vocab)
    w.add_token_types([3 if t in SPECIALS else 1 for t in vocab])
    w.add_token_merges([f"{a} {b}" for a, b in MERGES])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    for method, value in (extra or {}).items():
        getattr(w, method)(*value) if isinstance(value, tuple) else getattr(w, method)(value)
    Q = gguf.GGMLQuantizationType
    planned: dict[str, Any] = {}
    for hf, value in weights(seed, tied).items():
        name = gguf_name(hf)
        if "q_proj" in hf:
            value = permute_rows(value, d["n_heads"])
        elif "k_proj" in hf:
            value = permute_rows(value, d["n_kv_heads"])
        table = hf.endswith(("embed_tokens.weight", "lm_head.weight"))
        kind = Q.F32 if value.ndim == 1 else Q.Q8_0 if table else Q.Q4_1
        planned[name] = (value, kind)
    for name, item in (tensors or {}).items():
        if item is None:
            planned.pop(name, None)
        else:
            planned[name] = item
    for name, (value, kind) in planned.items():
        if kind in (Q.F32, Q.F16, Q.I32):
            w.add_tensor(name, value.astype({Q.F32: np.float32, Q.F16: np.float16, Q.I32: np.int32}[kind]))
        else:
            w.add_tensor(name, gguf.quants.quantize(value, kind), raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
