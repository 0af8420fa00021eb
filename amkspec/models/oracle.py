"""Logit agreement between a run and the eager model (the lowering guide, "The decode loop and the oracle").

Both tensors go to float32 rows ``[rows, vocab]``. The check PASSES iff
``|test − ref| ≤ atol + rtol·|ref|`` everywhere, every test value is finite, and every row has the
same argmax (``top1_agreement`` is 1). The original passes at 99% of rows; amkspec does not (the
lowering differences page): one wrong next token in a batch is a wrong decode.
"""

from __future__ import annotations

import attrs
import torch

from amkspec.ir import DType

TOLERANCES: dict[DType, tuple[float, float]] = {
    DType.F32: (1e-4, 1e-4),
    DType.F16: (1e-2, 1e-2),
    DType.BF16: (2e-2, 2e-2),
}
"""(atol, rtol) by the model dtype."""

DEFAULT_TOLERANCE = (3e-2, 3e-2)
"""(atol, rtol) for any other dtype."""

REFERENCE_TOLERANCE = (5e-4, 1e-4)
"""(atol, rtol) of float32 logits against transformers' for the same checkpoint (the golden files of
``tools/make_real_golden.py``): another implementation sums in another order, so its logits differ
in the last bits (SmolLM2-135M: at most a few 1e-5); the greedy ids must be equal."""


@attrs.frozen
class LogitCheck:
    """The metrics of one comparison and its verdict."""

    passed: bool
    max_abs_err: float
    max_rel_err: float
    top1_agreement: float
    kl: float
    atol: float
    rtol: float

    def to_dict(self) -> dict[str, float | bool]:
        return attrs.asdict(self)


def _rows(t: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(t).detach().to("cpu", torch.float32)
    return t.reshape(1, -1) if t.dim() <= 1 else t.reshape(-1, t.shape[-1])


def compare_logits(test: torch.Tensor, ref: torch.Tensor, dtype: DType = DType.F32) -> LogitCheck:
    """Compare ``test`` logits with the eager ``ref`` at the tolerances of ``dtype``."""
    atol, rtol = TOLERANCES.get(dtype, DEFAULT_TOLERANCE)
    t, r = _rows(test), _rows(ref)
    if t.shape != r.shape:
        nan = float("nan")
        return LogitCheck(False, nan, nan, 0.0, nan, atol, rtol)
    diff = (t - r).abs()
    finite = torch.isfinite(diff)
    max_abs = float(diff[finite].max()) if finite.any() else float("nan")
    rel = diff / (r.abs() + 1e-12)
    max_rel = float(rel[finite].max()) if finite.any() else float("nan")
    agree = t.argmax(-1) == r.argmax(-1)
    top1 = float(agree.float().mean())
    kl = float(torch.nn.functional.kl_div(t.log_softmax(-1), r.log_softmax(-1), log_target=True,
                                          reduction="batchmean"))
    every_row = agree.numel() > 0 and bool(agree.all())  # no rows compared is no agreement
    passed = bool(torch.isfinite(t).all()) and torch.allclose(t, r, atol=atol, rtol=rtol) and every_row
    return LogitCheck(passed, max_abs, max_rel, top1, kl, atol, rtol)
