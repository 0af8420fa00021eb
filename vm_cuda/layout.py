"""The ABI image records as numpy structured dtypes (spec §8.1–§8.3).

The field order of ``amk_params_t`` is derived from ``amkspec.ir.PARAM_LAYOUT`` and its
types from ``PARAM_FIELDS``; the other records mirror ``vm_cuda/abi.h``. The ABI drift
test compiles a probe of the header and compares every size and offset with these dtypes.
"""

from __future__ import annotations

import numpy as np

from amkspec.ir import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    PARAM_FIELDS,
    PARAM_LAYOUT,
)

IMAGE_MAGIC = 0x494B4D41
"""``AMK_IMAGE_MAGIC``: "AMKI" read as a little-endian uint32."""
IMAGE_ALIGN = 256
"""``AMK_IMAGE_ALIGN``: alignment of every image section and every tensor in the data section."""
DT_F64 = 32
"""``AMK_DT_F64``: ABI-only dtype code of a FUSED scratch declared ``float64``."""

_NUMPY_OF = {"i": "<i4", "f": "<f4"}

PARAMS = np.dtype([(name, _NUMPY_OF[PARAM_FIELDS[name]]) for name in PARAM_LAYOUT])
"""``amk_params_t``."""

BUFFER = np.dtype(
    [
        ("ptr", "<u8"),
        ("numel", "<i8"),
        ("rank", "<i4"),
        ("dtype", "<i4"),
        ("space", "<i4"),
        ("kind", "<i4"),
        ("shape", "<i8", (ABI_MAX_RANK,)),
        ("stride", "<i8", (ABI_MAX_RANK,)),
    ]
)
"""``amk_buffer_t`` (``ptr`` is image-relative until :func:`vm_cuda.pack.relocate`)."""

INSTRUCTION = np.dtype(
    [
        ("op", "<i4"),
        ("n_inputs", "<i4"),
        ("n_outputs", "<i4"),
        ("n_waits", "<i4"),
        ("inputs", "<i4", (ABI_MAX_INPUTS,)),
        ("outputs", "<i4", (ABI_MAX_OUTPUTS,)),
        ("wait_counter", "<i4", (ABI_MAX_WAITS,)),
        ("wait_threshold", "<i4", (ABI_MAX_WAITS,)),
        ("out_counter", "<i4"),
        ("sm", "<i4"),
        ("params", PARAMS),
        ("step_first", "<i4"),
        ("n_steps", "<i4"),
        ("param_mask", "<i4"),
    ]
)
"""``amk_instruction_t``."""

STATUS = np.dtype(
    [
        ("abort", "<i4"),
        ("fault_code", "<i4"),
        ("instruction", "<i4"),
        ("sm", "<i4"),
        ("counter", "<i4"),
        ("value", "<i4"),
        ("threshold", "<i4"),
        ("blocks_done", "<i4"),
        ("executed", "<i8"),
        ("reserved", "<i8", (3,)),
    ]
)
"""``amk_status_t``."""

HEADER = np.dtype(
    [
        ("magic", "<u4"),
        ("abi_major", "<i4"),
        ("abi_minor", "<i4"),
        ("num_sms", "<i4"),
        ("n_buffers", "<i4"),
        ("n_counters", "<i4"),
        ("n_instructions", "<i4"),
        ("n_steps", "<i4"),
        ("threads_per_block", "<i4"),
        ("reserved0", "<i4"),
        ("image_bytes", "<i8"),
        ("timeout_ns", "<i8"),
        ("status_off", "<i8"),
        ("buffers_off", "<i8"),
        ("instructions_off", "<i8"),
        ("queue_off_off", "<i8"),
        ("queue_len_off", "<i8"),
        ("queue_flat_off", "<i8"),
        ("counters_off", "<i8"),
        ("data_off", "<i8"),
        ("data_bytes", "<i8"),
    ]
)
"""``amk_image_header_t``."""

RECORDS: dict[str, np.dtype] = {
    "amk_params_t": PARAMS,
    "amk_buffer_t": BUFFER,
    "amk_instruction_t": INSTRUCTION,
    "amk_status_t": STATUS,
    "amk_image_header_t": HEADER,
}
"""C struct name → its dtype (what the drift test and the generated doc tables walk)."""

ABORT_CODES = {"NONE": 0, "TIMEOUT": 1, "FAULT": 2, "HOST": 3}
"""``amk_abort_t``: the value of ``amk_status_t.abort``."""


def align(n: int) -> int:
    """``n`` rounded up to :data:`IMAGE_ALIGN`."""
    return -(-n // IMAGE_ALIGN) * IMAGE_ALIGN
