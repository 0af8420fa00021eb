"""What a checkpoint import refuses, and why (the lowering guide, "Real checkpoints").

The decoder template (:mod:`amkspec.lower.emit`) expresses one architecture: a bias-free Llama
decoder with full rotate-half RoPE of one base, GQA attention over every earlier position, SwiGLU
(SiLU) MLPs, RMSNorm, and an lm head that is its own table or the token embedding. An importer
refuses, with :class:`CheckpointRefused`, every checkpoint it cannot map onto that template
exactly; each refusal has a stable key in :data:`REFUSALS` (the docs' table is generated from it).
"""

from __future__ import annotations

from amkspec.ir import AmkspecError

REFUSALS: dict[str, str] = {
    "unreadable": "the file or directory is not a GGUF file or an HF checkpoint directory, or cannot be "
    "parsed",
    "architecture": "not a Llama decoder (GGUF ``general.architecture``, HF ``model_type`` / "
    "``architectures``)",
    "config": "a dimension the template needs is missing, not a positive integer, or inconsistent "
    "(heads not a multiple of kv heads, an odd head_dim)",
    "bias": "a bias on any projection (``attention_bias``, ``mlp_bias``, or a ``*.bias`` tensor)",
    "partial-rotary": "RoPE over part of each head (``partial_rotary_factor`` < 1, "
    "``rope.dimension_count`` ≠ head_dim)",
    "rope-scaling": "scaled RoPE (``rope_scaling``/``rope_parameters`` of a type other than default, "
    "GGUF ``rope.scaling.*`` or a ``rope_freqs`` tensor)",
    "moe": "a mixture of experts (``num_local_experts``, GGUF ``expert_count``)",
    "activation": "an MLP activation other than SiLU (``hidden_act``)",
    "sliding-window": "attention over a sliding window (``sliding_window``, GGUF "
    "``attention.sliding_window``)",
    "tie-mismatch": "the tie flag and the tensors disagree (``tie_word_embeddings`` with an "
    "``lm_head.weight`` that differs from the embedding, or untied without one)",
    "tensor-type": "a tensor stored in a type the importer cannot read exactly (a GGUF type "
    "``gguf`` cannot dequantize, a safetensors dtype other than F32/F16/BF16)",
    "missing-tensor": "a tensor the template needs is absent",
    "unexpected-tensor": "a tensor the template has no place for (it would be silently ignored)",
    "shape": "a tensor whose shape does not match the configuration",
}
"""Refusal key → what it refuses."""


class CheckpointRefused(AmkspecError, ValueError):
    """A checkpoint the decoder template cannot express (or that cannot be read): one line,
    naming the checkpoint, the refusal key of :data:`REFUSALS` and the detail."""

    def __init__(self, where: str, key: str, detail: str) -> None:
        if key not in REFUSALS:
            raise KeyError(f"unknown refusal key {key!r}")
        self.key = key
        self.detail = detail
        super().__init__(f"{where}: refused ({key}): {detail}")
