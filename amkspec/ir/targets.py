"""GPU targets as data (spec §5.2): add a chip by adding a record."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

import attrs


@attrs.define
class GpuTarget:
    """One GPU described as data (spec §5.2)."""

    name: str
    sm_arch: int
    num_sms: int
    smem_bytes_per_sm: int
    smem_bytes_per_block_optin: int
    regs_per_sm: int
    max_threads_per_sm: int
    max_regs_per_thread: int
    l2_bytes: int
    hbm_bytes: int
    hbm_bandwidth_gbs: float
    fp16_tflops: float
    clock_ghz: float = 0.0
    supports_cooperative: bool = True
    wddm_tdr: bool = False
    measured_bw_gbs: float = 0.0
    note: str = ""
    extra: dict[str, Any] = attrs.field(factory=dict, repr=False, kw_only=True)

    def bandwidth_bound_us(self, weight_bytes: int) -> float:
        """The single-stream decode floor: weight bytes over spec HBM bandwidth, in µs."""
        return _bound_us(weight_bytes, self.hbm_bandwidth_gbs)

    def measured_bandwidth_bound_us(self, weight_bytes: int) -> float:
        """As :meth:`bandwidth_bound_us`, using ``measured_bw_gbs`` when it is known (> 0)."""
        bw = self.measured_bw_gbs if self.measured_bw_gbs > 0 else self.hbm_bandwidth_gbs
        return _bound_us(weight_bytes, bw)


def _bound_us(weight_bytes: int, gbs: float) -> float:
    """µs to stream ``weight_bytes`` at ``gbs`` GB/s: NaN without a bandwidth, inf when the
    byte count is too large for a float (a program that loads may declare such a shape)."""
    if not gbs > 0:
        return math.nan
    try:
        return weight_bytes / (gbs * 1e9) * 1e6
    except OverflowError:
        return math.inf


_GIB = 1 << 30
_MIB = 1 << 20
_SPEC = "Spec-sheet figures; measured_bw_gbs is 0 where no measurement exists."

class TargetRegistry(MutableMapping[str, GpuTarget]):
    """Target name → :class:`GpuTarget` (spec §5.2).

    Every lookup returns a fresh copy, so a program that edits its ``target`` (a note, a
    measured bandwidth) never changes the registry or another program's target. Add a chip
    with ``TARGETS[name] = record``; the registry keeps its own copy.
    """

    def __init__(self, records: Iterable[GpuTarget]) -> None:
        self._records = {t.name: t for t in records}

    def __getitem__(self, name: str) -> GpuTarget:
        return copy.deepcopy(self._records[name])

    def __setitem__(self, name: str, target: GpuTarget) -> None:
        self._records[name] = copy.deepcopy(target)

    def __delitem__(self, name: str) -> None:
        del self._records[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"TargetRegistry({list(self._records)})"


TARGETS = TargetRegistry(
    (
        GpuTarget("rtx5090", 120, 82, 102400, 101376, 65536, 2048, 255, 64 * _MIB, 24 * _GIB,
                  896.0, 210.0, 1.597, True, True, 731.0,
                  "Blackwell laptop GB203 behind WDDM; measured_bw_gbs is a D2D-copy median."),
        GpuTarget("b200", 100, 148, 233472, 232448, 65536, 2048, 255, 126 * _MIB, 180 * _GIB,
                  8000.0, 2250.0, 1.965, True, False, 0.0, _SPEC),
        GpuTarget("h100", 90, 132, 233472, 232448, 65536, 2048, 255, 50 * _MIB, 80 * _GIB,
                  3350.0, 989.0, 1.98, True, False, 3089.0, "H100 SXM5. " + _SPEC),
        GpuTarget("h200", 90, 132, 233472, 232448, 65536, 2048, 255, 50 * _MIB, 141 * 10**9,
                  4800.0, 989.0, 1.98, True, False, 0.0,
                  "H200 SXM (GH100, 141 GB HBM3e at 4.8 TB/s; dense FP16 989 TFLOPS): NVIDIA H200 Tensor "
                  "Core GPU datasheet; SM, shared-memory and register figures as the H100 SXM5 (same die). "
                  + _SPEC),
        GpuTarget("a100", 80, 108, 167936, 166912, 65536, 2048, 255, 40 * _MIB, 80 * _GIB,
                  1555.0, 312.0, 1.41, True, False, 1382.0, "A100 SXM4. " + _SPEC),
        GpuTarget("l4", 89, 58, 102400, 101376, 65536, 1536, 255, 48 * _MIB, 24 * _GIB,
                  300.0, 242.0, 2.04, True, False, 0.0, _SPEC),
        GpuTarget("t4", 75, 40, 65536, 65536, 65536, 1024, 255, 4 * _MIB, 16 * _GIB,
                  320.0, 65.0, 1.59, True, False, 0.0, _SPEC),
        GpuTarget("a10g", 86, 80, 102400, 101376, 65536, 1536, 255, 6 * _MIB, 24 * _GIB,
                  600.0, 125.0, 1.71, True, False, 0.0, _SPEC),
        GpuTarget("l40s", 89, 142, 102400, 101376, 65536, 1536, 255, 96 * _MIB, 48 * _GIB,
                  864.0, 362.0, 2.52, True, False, 0.0, _SPEC),
    )
)
"""The nine built-in targets."""
