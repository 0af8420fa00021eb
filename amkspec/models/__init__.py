"""Llama-style decoders: configs, deterministic weights, an eager forward, the oracle (the lowering guide).

Needs torch (the ``vm`` extra).
"""

from amkspec.models.config import MEDIUM, MODELS, SMALL, TOY, TOY_2L, ModelConfig
from amkspec.models.eager import EagerDecoder
from amkspec.models.oracle import TOLERANCES, LogitCheck, compare_logits
from amkspec.models.quant import QuantSpec, quantize_weights
from amkspec.models.weights import make_weights, torch_dtype

__all__ = [
    "MEDIUM", "MODELS", "SMALL", "TOLERANCES", "TOY", "TOY_2L", "EagerDecoder", "LogitCheck",
    "ModelConfig", "QuantSpec", "compare_logits", "make_weights", "quantize_weights", "torch_dtype",
]
