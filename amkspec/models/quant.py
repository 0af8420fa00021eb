"""Weight-only quantization of a model's weights (spec §7.7, §7.9).

Two ways to get quantized weights into a program:

* :class:`QuantSpec` re-quantizes a float model: the seven projections of every layer become
  symmetric I4/I8 levels with float16 scales (the embedding and lm head stay in floating point);
* :class:`NativeQuant` lowers weights that already are quantized (:class:`QuantTensor`, e.g. a
  GGUF file's Q4_1 / Q8_0 blocks, :mod:`amkspec.models.ggml_blocks`), any projection, the token
  table and the lm head, keeping their stored levels and tables bit for bit.

Either way each quantized key ``K`` is two WEIGHT buffers: the levels ``K`` and the table ``K.scales``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
import torch

from amkspec.ir import DType, QuantFlags
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

    @property
    def format(self) -> QuantFormat:
        """The symmetric format every quantized projection gets."""
        return QuantFormat(f"I{self.bits}", self.qdtype, self.group, affine=False)

    def format_of(self, key: str, config: ModelConfig) -> QuantFormat | None:
        """The format of weight ``key`` (None: it stays floating point)."""
        return self.format if key in quantized_keys(config) else None

    def to_meta(self, config: ModelConfig) -> dict[str, object]:
        """The ``meta.quant`` record of a quantized program."""
        n_keys = len(quantized_keys(config))
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


@attrs.frozen
class QuantFormat:
    """How a quantized ``[N, K]`` weight is stored (spec §7.9): levels of
    ``qdtype`` (I4 packed two per byte, low nibble = even column; I8), grouped by ``group`` along K,
    and a float16 table of scales ``[N, n_groups]`` or, when ``affine``, of (scale, offset) pairs
    ``[N, n_groups, 2]``. Symmetric: ``w = level · scale`` (I4 level = nibble − 8); affine:
    ``w = level · scale + offset`` (I4 level = the raw nibble)."""

    name: str
    qdtype: DType
    group: int
    affine: bool

    def params(self) -> dict[str, int]:
        """The task params that select this format (``flags`` only for the affine form)."""
        extra = {"flags": int(QuantFlags.AFFINE)} if self.affine else {}
        return {"qdtype": int(self.qdtype), "group": self.group, **extra}

    def q_shape(self, n: int, k: int) -> tuple[int, int]:
        """The stored shape of the levels of an ``[n, k]`` weight."""
        return (n, (k + 1) // 2) if self.qdtype is DType.I4 else (n, k)

    def table_shape(self, n: int, k: int) -> tuple[int, ...]:
        """The table's shape for an ``[n, k]`` weight (an IR buffer shape, stored as is)."""
        groups = math.ceil(k / self.group)
        return (n, groups, 2) if self.affine else (n, groups)

    def row_bytes(self, k: int) -> int:
        """Bytes one weight row occupies (levels and table)."""
        return math.ceil(k * self.qdtype.bits / 8) + 2 * math.prod(self.table_shape(1, k))


Q4_1 = QuantFormat("Q4_1", DType.I4, 32, affine=True)
"""GGUF's Q4_1: 4-bit levels 0..15 in groups of 32, ``w = d · q + m`` (float16 d, m)."""
Q8_0 = QuantFormat("Q8_0", DType.I8, 32, affine=False)
"""GGUF's Q8_0: int8 levels in groups of 32, ``w = d · q`` (float16 d): the spec's symmetric I8."""
NATIVE_FORMATS: dict[str, QuantFormat] = {f.name: f for f in (Q4_1, Q8_0)}
"""The formats imported as they are stored, by GGML type name."""

_Q_DTYPES = {DType.I4: np.uint8, DType.I8: np.int8}


@attrs.frozen(eq=False)
class QuantTensor:
    """A quantized ``[N, K]`` weight as a program stores it: ``q`` (uint8 packed I4 ``[N,
    ceil(K/2)]`` or int8 ``[N, K]``) and ``table`` (float16, :meth:`QuantFormat.table_shape`).
    Construction checks dtypes and shapes (``ValueError``)."""

    format: QuantFormat
    q: np.ndarray
    table: np.ndarray
    k: int

    def __attrs_post_init__(self) -> None:
        n = self.q.shape[0] if self.q.ndim == 2 else -1
        want_q, want_t = self.format.q_shape(n, self.k), self.format.table_shape(n, self.k)
        q_dtype = _Q_DTYPES[self.format.qdtype]
        if self.q.dtype != q_dtype or self.q.shape != want_q:
            raise ValueError(f"{self.format.name} levels must be {np.dtype(q_dtype).name} {list(want_q)}, "
                             f"got {self.q.dtype} {list(self.q.shape)}")
        if self.table.dtype != np.float16 or self.table.shape != want_t:
            raise ValueError(f"{self.format.name} table must be float16 {list(want_t)}, got "
                             f"{self.table.dtype} {list(self.table.shape)}")

    @property
    def shape(self) -> tuple[int, int]:
        """The logical ``(N, K)``."""
        return (self.q.shape[0], self.k)

    def dequantize(self) -> torch.Tensor:
        """The float32 ``[N, K]`` weights, computed by the semantics' dequantization (spec §7.7)."""
        f = self.format
        return dequantize(torch.from_numpy(self.q), torch.from_numpy(self.table), None, int(f.qdtype),
                          f.group, self.k, affine=f.affine)

    def take_rows(self, index: Any) -> QuantTensor:
        """The rows ``index`` (a permutation or selection; rows are quantized independently)."""
        rows = np.asarray(index)
        return QuantTensor(self.format, np.ascontiguousarray(self.q[rows]),
                           np.ascontiguousarray(self.table[rows]), self.k)

    def arrays(self, key: str) -> dict[str, np.ndarray]:
        """What a program binds for weight ``key``: the levels and ``<key>.scales``."""
        return {key: self.q, f"{key}.scales": self.table}


def _formats(formats: Mapping[str, QuantFormat]) -> dict[str, QuantFormat]:
    return dict(formats)


@attrs.frozen
class NativeQuant:
    """Weights already quantized, by state-dict key: each listed key is lowered with its format
    (projections as quantized GEMV tiles, ``embed.weight`` as EMBED of levels and table then
    DEQUANT, ``lm_head.weight`` as a quantized GEMV)."""

    formats: Mapping[str, QuantFormat] = attrs.field(converter=_formats)

    def format_of(self, key: str, config: ModelConfig) -> QuantFormat | None:
        """The format of weight ``key`` (None: floating point)."""
        return self.formats.get(key)

    def unsupported(self, config: ModelConfig) -> list[str]:
        """The listed keys the lowering cannot store quantized: anything but the projections,
        ``embed.weight`` and ``lm_head.weight`` of ``config``."""
        allowed = {*quantized_keys(config), "embed.weight", "lm_head.weight"}
        return sorted(k for k in self.formats if k not in allowed)

    def to_meta(self, config: ModelConfig) -> dict[str, object]:
        """The ``meta.quant`` record: how many keys have each format."""
        return {"native": dict(sorted(Counter(f.name for f in self.formats.values()).items()))}


def native_weights(weights: Mapping[str, Any]) -> tuple[NativeQuant, dict[str, Any]]:
    """The layout of ``weights`` (its :class:`QuantTensor` values' formats) and the arrays a
    program lowered with that layout binds (every other value as given)."""
    formats: dict[str, QuantFormat] = {}
    vm: dict[str, Any] = {}
    for key, value in weights.items():
        if isinstance(value, QuantTensor):
            formats[key] = value.format
            vm.update(value.arrays(key))
        else:
            vm[key] = value
    return NativeQuant(formats), vm


def dequantized_weights(weights: Mapping[str, Any]) -> dict[str, Any]:
    """``weights`` with every :class:`QuantTensor` replaced by its float32 value (the eager model's)."""
    return {k: v.dequantize() if isinstance(v, QuantTensor) else v for k, v in weights.items()}
