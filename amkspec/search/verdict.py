"""The evaluate verdict and its honesty rules (the Loop-2 verdict of the AMK agent contract).

A :class:`Verdict` cannot be built dishonest: its constructor refuses a latency without a
correctness PASS, a correctness claim for a rejected config, and a ``measured-gpu`` latency that
no real GPU-timed, eager-matching run produced. The rules, checked by :func:`honesty_violations`:

1. ``valid: false`` ⇒ ``correct: false``, no error metrics, no latency; a ``rejected_reason``.
2. ``correct: false`` ⇒ ``latency_us``, ``latency_kind``, ``latency_over_bound`` are null.
3. ``latency_kind`` is ``"measured-gpu"`` only when ``gpu_timed`` (set only by the CUDA timing
   path after its own output matched eager); otherwise ``"predicted"`` (the cost model).
4. A latency is never below the HBM-bandwidth floor ``bound_us`` (then it is dropped with a note).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

LATENCY_KINDS = ("measured-gpu", "predicted")

VERDICT_VERSION = 2
"""The verdict's schema version: 2 replaced version 1's ``pct_of_roofline`` (``100 · latency /
bound_us``, which read as a share of the roofline achieved) by ``latency_over_bound``."""

FAILURES = ("rejected", "lowering", "vm-unavailable", "timeout", "fault", "mismatch", "error")
"""Why a verdict is not valid+correct: rejected before or by validation, the lowering raised,
the chosen VM is not available, the VM timed out or faulted, the output disagreed with eager, or
an unexpected internal error (always caught: evaluate never raises on a config)."""


FIELD_DOCS: dict[str, str] = {
    "valid": "the config passed the knob checks, lowered, and validate() accepted the program",
    "rejected_reason": "when not valid: the codes and messages of the first findings (null otherwise)",
    "rejected_codes": "the diagnostic codes of the rejection: knob:type / knob:range / knob:unknown, "
                      "the validator's launch codes O503 / O504, or any validator code",
    "witness": "the counterexample file of this rejection (with --witness-dir / in a search), or null: one "
               "file per distinct rejection (the same codes and knob paths, or the same exception of the "
               "lowering), holding the first config rejected that way",
    "correct": "the VM's logits matched the eager model at the model dtype's tolerances (authoritative)",
    "max_abs_err": "max |vm − eager| over the logits; null when the step did not run",
    "top1_agreement": "fraction of rows whose argmax matches eager",
    "latency_us": "one decode step in µs; null unless correct",
    "latency_kind": "measured-gpu (CUDA events on a real GPU, output matched eager) or predicted "
                    "(the cost model); null unless correct",
    "latency_over_bound": "latency_us / bound_us: how many times the HBM-bandwidth floor one step takes "
                          "(1.0 = at the floor, the roofline); null unless correct",
    "bound_us": "the HBM-bandwidth floor: weight bytes / the target's bandwidth",
    "schedule_id": "sch_ + the first 10 hex of sha1 of the canonical config (of the raw document when it "
                   "does not parse)",
    "program_sha256": "SHA-256 of the lowered program's canonical JSON (the cache identity)",
    "tasks": "tasks of the lowered program",
    "n_buffers": "buffers of the lowered program",
    "n_counters": "counters of the lowered program",
    "weight_mb": "weight bytes / 10⁶",
    "model": "the model preset",
    "target": "the GPU target",
    "vm": "the VM the step ran on (reference, cpu-kernel, cuda, or a plugged-in runner's name)",
    "failure": "why not valid+correct: " + ", ".join(FAILURES) + "; null when correct",
    "gpu_timed": "true only when the latency comes from the CUDA timing path",
    "notes": "human-readable context (why the latency is predicted, what failed)",
    "verdict_version": f"the schema version of the verdict ({VERDICT_VERSION})",
}
"""What each verdict field means (the docs' table is generated from it)."""


class DishonestVerdict(ValueError):
    """A verdict that breaks an honesty rule; evaluate never returns one."""


@attrs.frozen(kw_only=True)
class Verdict:
    """One structured verdict; :meth:`to_dict` is what ``amkspec evaluate`` prints."""

    valid: bool
    rejected_reason: str | None = None
    rejected_codes: tuple[str, ...] = ()
    witness: str | None = None
    correct: bool = False
    max_abs_err: float | None = None
    top1_agreement: float | None = None
    latency_us: float | None = None
    latency_kind: str | None = None
    latency_over_bound: float | None = None
    bound_us: float | None = None
    schedule_id: str = ""
    program_sha256: str | None = None
    tasks: int = 0
    n_buffers: int = 0
    n_counters: int = 0
    weight_mb: float = 0.0
    model: str = ""
    target: str = ""
    vm: str = ""
    failure: str | None = None
    gpu_timed: bool = False
    notes: tuple[str, ...] = ()
    verdict_version: int = VERDICT_VERSION

    def __attrs_post_init__(self) -> None:
        problems = honesty_violations(self)
        if problems:
            raise DishonestVerdict("; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        out = attrs.asdict(self, recurse=False)
        out["rejected_codes"] = list(self.rejected_codes)
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """A verdict read back from :meth:`to_dict` output (a search cache or state); each field's
        type is checked against its annotation and the honesty rules are rechecked (ValueError)."""
        if not isinstance(data, dict):
            raise ValueError(f"a verdict must be an object, not a JSON {type(data).__name__}")
        if "verdict_version" not in data and "pct_of_roofline" in data:  # version 1, read back from a cache
            pct = data["pct_of_roofline"]
            data = {**data, "latency_over_bound": pct / 100 if _scalar("float", pct) else pct}
        kwargs = {a.name: _typed(a.name, str(a.type), data[a.name])
                  for a in attrs.fields(cls) if a.name in data}
        kwargs["rejected_codes"] = tuple(kwargs.get("rejected_codes", ()))
        kwargs["notes"] = tuple(kwargs.get("notes", ()))
        return cls(**kwargs)


_SCALARS: dict[str, type] = {"bool": bool, "int": int, "str": str}


def _scalar(kind: str, value: Any) -> bool:
    """``value`` is a JSON value of the annotation ``kind`` (no bool for a number, floats finite)."""
    if isinstance(value, bool) and kind != "bool":
        return False
    if kind == "float":
        return isinstance(value, int | float) and math.isfinite(value)
    return isinstance(value, _SCALARS[kind])


def _typed(name: str, annotation: str, value: Any) -> Any:
    """``value`` if it fits the field's annotation (``float | None``, ``tuple[str, ...]``, ...)."""
    kind = annotation.removesuffix(" | None")
    if value is None and kind != annotation:
        return value
    if kind == "tuple[str, ...]":
        ok = isinstance(value, list | tuple) and all(isinstance(x, str) for x in value)
    else:
        ok = _scalar(kind, value)
    if not ok:
        raise ValueError(f"verdict field {name!r} must be {annotation}, not {value!r:.40}")
    return value


def honesty_violations(v: Verdict) -> list[str]:
    """Every honesty rule ``v`` breaks (an empty list for an honest verdict)."""
    out: list[str] = []
    has_latency = v.latency_us is not None or v.latency_kind is not None or v.latency_over_bound is not None
    if not v.valid and (v.correct or v.max_abs_err is not None or v.top1_agreement is not None):
        out.append("a rejected config makes no correctness claim")
    if not v.valid and not v.rejected_reason:
        out.append("a rejected config states its reason")
    if v.valid and v.rejected_reason is not None:
        out.append("a valid config has no rejected_reason")
    if has_latency and not v.correct:
        out.append("no latency without correct: true")
    if v.correct and v.failure is not None:
        out.append("a correct verdict has no failure")
    if not v.correct and v.failure not in FAILURES:
        out.append(f"an incorrect verdict names its failure (one of {', '.join(FAILURES)})")
    if v.latency_kind is not None and v.latency_kind not in LATENCY_KINDS:
        out.append(f"latency_kind must be one of {LATENCY_KINDS}")
    if v.latency_kind == "measured-gpu" and not v.gpu_timed:
        out.append("measured-gpu only for a real GPU-timed run that matched eager")
    if (v.latency_us is None) != (v.latency_kind is None):
        out.append("latency_us and latency_kind come together")
    if v.latency_us is not None and v.bound_us is not None and v.latency_us < v.bound_us:
        out.append("a latency below the bandwidth floor is not reported")
    return out
