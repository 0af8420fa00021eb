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
from amkspec.ir.opcodes import INT32_MAX
from amkspec.models.config import ModelConfig
from amkspec.semantics.quant import dequantize, quantize

PROJECTIONS = ("attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
               "mlp.down_proj")


@attrs.frozen
class QuantSpec:
    """How to quantize: ``bits`` 4 (I4, packed) or 8 (I8), groups of ``group`` columns along K.

    Both are plain ints (a bool or a float is refused): ``group`` becomes the GEMV's int32 param
    ``group`` (spec §7.7), so it must lie in ``[1, INT32_MAX]``; anything else raises ValueError.
    """

    bits: int = 4
    group: int = 128

    def __attrs_post_init__(self) -> None:
        for name, value in (("bits", self.bits), ("group", self.group)):
            if type(value) is not int:
                raise ValueError(f"quantization {name} must be an int, got {type(value).__name__}")
        if self.bits not in (4, 8):
            raise ValueError(f"quantization bits must be 4 or 8, got {_shown(self.bits)}")
        if not 1 <= self.group <= INT32_MAX:
            raise ValueError(f"quantization group must be in [1, {INT32_MAX}] (an int32 param), "
                             f"got {_shown(self.group)}")

    @property
    def qdtype(self) -> DType:
        return DType.I4 if self.bits == 4 else DType.I8

    def to_meta(self, n_keys: int) -> dict[str, object]:
        """The ``meta.quant`` record of a quantized program."""
        return {"group": self.group, "bits": self.bits, "symmetric": True, "n_keys": n_keys}


def _shown(value: int) -> str:
    """``value`` in decimal, or its size when the decimal would be unreadably (or unprintably) long."""
    return str(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"


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
