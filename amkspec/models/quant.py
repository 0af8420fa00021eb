"""Weight-only quantization of a model's projections (spec §7.7), for quantized lowering.

Only symmetric quantization is supported: it is the only form whose GEMV arity (``x, qW, scales``)
``validate()`` accepts. The seven projections of every layer are quantized; the embedding and the
lm head stay in floating point.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import torch

from amkspec.ir import DType
from amkspec.models.config import ModelConfig
from amkspec.semantics.quant import dequantize, quantize

PROJECTIONS = ("attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
               "mlp.down_proj")


@attrs.frozen
class QuantSpec:
    """How to quantize: ``bits`` 4 (I4, packed) or 8 (I8), groups of ``group`` columns along K."""

    bits: int = 4
    group: int = 128

    def __attrs_post_init__(self) -> None:
        if self.bits not in (4, 8):
            raise ValueError(f"quantization bits must be 4 or 8, got {self.bits}")
        if self.group < 1:
            raise ValueError(f"quantization group must be positive, got {self.group}")

    @property
    def qdtype(self) -> DType:
        return DType.I4 if self.bits == 4 else DType.I8

    def to_meta(self, n_keys: int) -> dict[str, object]:
        """The ``meta.quant`` record of a quantized program."""
        return {"group": self.group, "bits": self.bits, "symmetric": True, "n_keys": n_keys}


def quantized_keys(config: ModelConfig) -> list[str]:
    """State-dict keys of the weights that get quantized."""
    return [f"layers.{n}.{p}.weight" for n in range(config.n_layers) for p in PROJECTIONS]


def quantize_weights(config: ModelConfig, weights: Mapping[str, torch.Tensor], spec: QuantSpec
                     ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """``(vm_weights, eager_weights)``: the stored levels plus ``<key>.scales`` for a program, and
    the same model with every quantized weight replaced by its dequantized float32 value."""
    vm = dict(weights)
    eager = dict(weights)
    for key in quantized_keys(config):
        qw = quantize(weights[key], spec.bits, spec.group)
        vm[key] = qw.q
        vm[f"{key}.scales"] = qw.scales
        eager[key] = dequantize(qw.q, qw.scales, None, spec.qdtype, spec.group, qw.k)
    return vm, eager
