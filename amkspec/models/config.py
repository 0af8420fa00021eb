"""Model configurations of the Llama-style decoders the lowering understands (lowering guide, "Models")."""

from __future__ import annotations

import attrs

from amkspec.ir import DType


@attrs.frozen
class ModelConfig:
    """Dimensions of a bias-free Llama-style decoder (embed, N × attention+SwiGLU layers, lm head)."""

    name: str
    vocab: int
    hidden: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate: int
    rms_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_seq: int = 256
    dtype: DType = DType.F32
    seed: int = 0
    source: str = "models.toy.ToyLlama"
    """The ``meta.model`` string a lowered program records (the original's class path)."""
    tied: bool = False
    """The lm head is the token embedding (tied embeddings): one table, stored and bound once."""
    checkpoint: str | None = None
    """The checkpoint file or directory the weights come from (None: deterministic weights)."""
    native_quant: bool = False
    """The checkpoint's Q4_1 / Q8_0 tensors are stored as they are (spec §7.9): :func:`~amkspec.lower.lower`
    lowers them quantized. False: every weight is its float32 dequantization."""

    def __attrs_post_init__(self) -> None:
        if min(self.vocab, self.hidden, self.n_layers, self.n_heads, self.n_kv_heads, self.head_dim,
               self.intermediate, self.max_seq) < 1:
            raise ValueError(f"model {self.name!r}: every dimension must be positive")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"model {self.name!r}: n_heads must be a multiple of n_kv_heads")
        if self.head_dim % 2:
            raise ValueError(f"model {self.name!r}: head_dim must be even (rotate-half RoPE)")

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def scale(self) -> float:
        """The attention scale ``head_dim ** -0.5``."""
        return float(self.head_dim) ** -0.5

    @property
    def lm_head_key(self) -> str:
        """The state-dict key of the lm head's table: the embedding's when tied."""
        return "embed.weight" if self.tied else "lm_head.weight"

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """State-dict key → shape, in state-dict order (the lowering guide, "Models"); a tied model
        has no ``lm_head.weight``."""
        h, i = self.hidden, self.intermediate
        shapes: dict[str, tuple[int, ...]] = {"embed.weight": (self.vocab, h)}
        for n in range(self.n_layers):
            p = f"layers.{n}"
            shapes[f"{p}.input_norm"] = (h,)
            shapes[f"{p}.attn.q_proj.weight"] = (self.q_dim, h)
            shapes[f"{p}.attn.k_proj.weight"] = (self.kv_dim, h)
            shapes[f"{p}.attn.v_proj.weight"] = (self.kv_dim, h)
            shapes[f"{p}.attn.o_proj.weight"] = (h, self.q_dim)
            shapes[f"{p}.post_norm"] = (h,)
            shapes[f"{p}.mlp.gate_proj.weight"] = (i, h)
            shapes[f"{p}.mlp.up_proj.weight"] = (i, h)
            shapes[f"{p}.mlp.down_proj.weight"] = (h, i)
        shapes["final_norm"] = (h,)
        shapes[self.lm_head_key] = (self.vocab, h)
        return shapes


TOY = ModelConfig("toy", vocab=256, hidden=64, n_layers=1, n_heads=4, n_kv_heads=2, head_dim=16,
                  intermediate=128)
"""The one-layer toy decoder (``toy`` / ``toy-1L`` in the original)."""

TOY_2L = attrs.evolve(TOY, name="toy-2L", n_layers=2)
"""The two-layer toy decoder."""

MEDIUM = ModelConfig("medium", vocab=4096, hidden=1024, n_layers=4, n_heads=8, n_kv_heads=2,
                     head_dim=128, intermediate=2816, source="amkspec.models.medium")
"""A larger decoder for benchmarks (about 53 M parameters, 212 MB in F32)."""

SMALL = ModelConfig("small", vocab=32000, hidden=2048, n_layers=4, n_heads=16, n_kv_heads=4,
                    head_dim=128, intermediate=5632, dtype=DType.BF16)
"""The original's ``small`` preset (lowering only: its weights are large)."""

MODELS: dict[str, ModelConfig] = {
    m.name: m for m in (TOY, attrs.evolve(TOY, name="toy-1L"), TOY_2L, MEDIUM, SMALL)
}
"""Presets by name, as the CLI accepts them."""
