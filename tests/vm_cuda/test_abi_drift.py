"""The ABI drift test (spec §8.1): abi.h as compiled == amkspec.ir == the packer's layout."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from amkspec.ir import PARAM_FIELDS, PARAM_LAYOUT
from vm_cuda import abi_probe, layout
from vm_cuda.abi_probe import ENUM_PREFIXES, expected_constants, header_constants, probe
from vm_cuda.build import SOURCE_DIR


def _numpy_fields(dtype: np.dtype) -> dict[str, list[int]]:
    fields: Any = dtype.fields
    return {name: [int(off), int(sub.itemsize)] for name, (sub, off, *_) in fields.items()}


def test_every_record_has_the_packers_size_and_offsets(cxx: str) -> None:
    compiled = probe()["records"]
    assert set(compiled) == set(layout.RECORDS)
    for struct, dtype in layout.RECORDS.items():
        assert compiled[struct]["size"] == dtype.itemsize, struct
        assert compiled[struct]["fields"] == _numpy_fields(dtype), struct


def test_params_follow_param_layout_with_param_field_types(cxx: str) -> None:
    fields = probe()["records"]["amk_params_t"]["fields"]
    assert list(fields) == list(PARAM_LAYOUT)
    assert [off for off, _ in fields.values()] == [4 * i for i in range(len(PARAM_LAYOUT))]
    kinds = {name: layout.PARAMS.fields[name][0].kind for name in PARAM_LAYOUT}  # type: ignore[index]
    assert kinds == {name: {"i": "i", "f": "f"}[PARAM_FIELDS[name]] for name in PARAM_LAYOUT}


def test_every_enum_value_and_macro_matches_amkspec_ir(cxx: str) -> None:
    assert probe()["constants"] == expected_constants()


def test_the_header_declares_exactly_the_expected_enumerators() -> None:
    declared = header_constants()
    for enum, (prefix, values) in ENUM_PREFIXES.items():
        assert sorted(declared[enum]) == sorted(prefix + name for name in values), enum
    assert set(declared) == set(ENUM_PREFIXES)


def test_a_drifted_header_is_caught(cxx: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: swapping two params in a copy of abi.h changes the probed offsets."""
    text = (SOURCE_DIR / "abi.h").read_text()
    assert "int32_t K, N, M," in text
    (tmp_path / "abi.h").write_text(text.replace("int32_t K, N, M,", "int32_t K, M, N,"))
    monkeypatch.setattr(abi_probe, "SOURCE_DIR", tmp_path)
    drifted = abi_probe.probe.__wrapped__()["records"]["amk_params_t"]["fields"]
    assert drifted != _numpy_fields(layout.PARAMS)
    assert drifted["N"] == [8, 4]


_ASSERT = re.compile(r"AMK_STATIC_ASSERT\((?:sizeof\((\w+)\)|offsetof\((\w+), (\w+)\)) == (\d+),")


def test_the_headers_static_asserts_cover_every_record_and_agree_with_the_layout() -> None:
    """Every record asserts its size and at least one field offset, and every asserted number is the
    packer's (so abi.h refuses to compile against a drifted layout even without the probe)."""
    sizes: dict[str, int] = {}
    offsets: dict[str, dict[str, int]] = {}
    for size_of, struct, field, value in _ASSERT.findall((SOURCE_DIR / "abi.h").read_text()):
        if size_of:
            sizes[size_of] = int(value)
        else:
            offsets.setdefault(struct, {})[field] = int(value)
    assert sizes == {struct: dtype.itemsize for struct, dtype in layout.RECORDS.items()}
    assert set(offsets) == set(layout.RECORDS)
    for struct, fields in offsets.items():
        packer = _numpy_fields(layout.RECORDS[struct])
        assert {f: packer[f][0] for f in fields} == fields, struct
