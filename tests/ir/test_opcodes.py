"""The recipe scratch dtypes are one fact (spec §7): every layer derives its table from
:data:`amkspec.ir.opcodes.RECIPE_DTYPES`, and the chapter's list names exactly those."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from amkspec.ir import DType
from amkspec.ir.opcodes import RECIPE_DTYPES
from amkspec.lower.emit import SCRATCH_DTYPE
from amkspec.semantics.dtypes import torch_dtype
from amkspec.semantics.fused import SCRATCH_DTYPES
from vm_cuda import layout
from vm_cuda.pack import SCRATCH_DTYPES as ABI_SCRATCH_DTYPES

CHAPTER = Path(__file__).resolve().parents[2] / "docs" / "spec" / "07-instructions.md"


def test_every_layer_names_the_same_recipe_dtypes() -> None:
    names = set(RECIPE_DTYPES)
    assert set(SCRATCH_DTYPES) == set(ABI_SCRATCH_DTYPES) == names
    assert set(SCRATCH_DTYPE.values()) <= names


def test_each_layer_maps_a_name_to_the_same_dtype() -> None:
    for name, dtype in RECIPE_DTYPES.items():
        if dtype is None:
            assert SCRATCH_DTYPES[name] is torch.float64 and ABI_SCRATCH_DTYPES[name] == layout.DT_F64
        else:
            assert SCRATCH_DTYPES[name] is torch_dtype(dtype) and ABI_SCRATCH_DTYPES[name] == int(dtype)
            assert SCRATCH_DTYPE[dtype] == name
    assert SCRATCH_DTYPE[DType.BF16] == "bfloat16"


def test_the_chapter_lists_exactly_the_recipe_dtypes() -> None:
    text = " ".join(CHAPTER.read_text().split())
    sentence = re.search(r"`out_dtype` is one of (.*?), and at least one step", text)
    assert sentence is not None
    assert re.findall(r"`(\w+)`", sentence.group(1)) == list(RECIPE_DTYPES)
