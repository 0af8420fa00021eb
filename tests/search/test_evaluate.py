"""``evaluate``: honest verdicts for any config (honesty rules as properties), VM failures, the CLI."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner
from hypothesis import given

import amkspec
from amkspec.cli import main
from amkspec.ir import AmkspecError, ScheduleConfig
from amkspec.search import DishonestVerdict, Evaluator, Verdict, evaluate, honesty_violations
from amkspec.search.examples import PerturbedVM, racy_prefetch_lowering
from amkspec.vm import ExecutionError
from tests.search.strategies import config_documents, near_valid

TOY = Evaluator("toy", "h100")
WRONG = Evaluator("toy", "h100", runner=PerturbedVM())


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def assert_honest(v: Verdict) -> None:
    """The rules of the seed's verdict, checked on the JSON a user reads."""
    d = v.to_dict()
    json.dumps(d, allow_nan=False)  # strict JSON: no NaN/Infinity
    assert honesty_violations(v) == []
    if d["latency_us"] is not None:
        assert d["correct"] and d["valid"] and d["latency_kind"] == "predicted"
    if not d["valid"]:
        assert not d["correct"] and d["max_abs_err"] is None and d["top1_agreement"] is None
        assert d["rejected_reason"] and d["latency_us"] is None
    if not d["correct"]:
        assert d["latency_us"] is None and d["latency_kind"] is None and d["latency_over_bound"] is None


def test_default_config_is_valid_correct_and_predicted() -> None:
    v = evaluate("toy-2L", "h100")
    assert v.valid and v.correct and v.failure is None
    assert v.latency_kind == "predicted" and v.latency_us is not None and v.bound_us is not None
    assert v.latency_us > v.bound_us
    assert v.schedule_id == "sch_c3af28020e" and v.tasks == 48 and v.n_counters == 41
    assert v.latency_over_bound == pytest.approx(v.latency_us / v.bound_us, rel=1e-3)
    assert v.latency_over_bound >= 1 and v.verdict_version == 2
    assert any("predicted" in n for n in v.notes)
    assert amkspec.evaluate is evaluate


@given(config_documents())
def test_any_json_config_gets_an_honest_verdict_and_never_raises(doc: Any) -> None:
    assert_honest(TOY.evaluate(doc))


@given(near_valid())
def test_a_wrong_vm_is_never_correct_and_never_timed(doc: Any) -> None:
    v = WRONG.evaluate(doc)
    assert_honest(v)
    assert not v.correct and v.latency_us is None
    if v.valid:
        assert v.failure == "mismatch" and v.max_abs_err is not None and v.max_abs_err > 0


@pytest.mark.parametrize(("doc", "codes"), [
    ({"tiling": "wide"}, ["knob:type"]),
    ({"tiling": {"gemv": {"N_tile": -1}}}, ["knob:range"]),
    ({"pipelining_depth": "deep"}, ["knob:type"]),
    ({"turbo": True}, ["knob:unknown"]),
    ({"smem_bytes_per_block": 10**7}, ["O504"]),
    ({"threads_per_block": 100}, ["O503"]),
])
def test_malformed_knobs_are_clean_rejections(doc: dict[str, Any], codes: list[str]) -> None:
    v = TOY.evaluate(doc)
    assert not v.valid and v.failure == "rejected" and list(v.rejected_codes) == codes
    assert v.program_sha256 is None and codes[0] in (v.rejected_reason or "")


def test_a_validator_rejection_carries_codes_and_a_replayed_witness(tmp_path: Path) -> None:
    ev = Evaluator("toy", "h100", lowering=racy_prefetch_lowering, witness_dir=tmp_path)
    v = ev.evaluate({"pipelining_depth": 3})
    assert not v.valid and "R303" in v.rejected_codes and v.program_sha256 is not None
    assert v.witness is not None
    doc = json.loads(Path(v.witness).read_text())
    witnessed = [f for f in doc["findings"] if f["status"] == "witnessed"]
    assert witnessed and doc["dot"]
    assert all((tmp_path / d).read_text().startswith("digraph") for d in doc["dot"])
    again = amkspec.load(tmp_path / doc["program"])
    assert not amkspec.validate(again).ok
    assert ev.evaluate({"pipelining_depth": 2}).correct


class _Raising:
    name = "raising"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __call__(self, prog: Any, weights: Mapping[str, Any], inputs: Mapping[str, Any]) -> Mapping[str, Any]:
        raise self.exc


class _Unprintable(Exception):
    def __str__(self) -> str:
        return str(10**5000)  # ValueError: exceeds the int→str digit limit


class CudaUnavailable(AmkspecError, RuntimeError):
    """Stands in for vm_cuda.CudaUnavailable (no usable GPU or pycuda; matched by class name)."""


class KernelTimeout(ExecutionError):
    """Stands in for vm_cuda.KernelTimeout (matched by class name, as the real one is)."""


class KernelFault(ExecutionError):
    """Stands in for vm_cuda.KernelFault."""


@pytest.mark.parametrize(("exc", "failure"), [
    (KernelTimeout("SM 3 waits on counter 7 >= 2 (is 1)"), "timeout"),
    (KernelFault("instruction 12 faulted"), "fault"),
    (ExecutionError("EMBED id out of range"), "fault"),
    (MemoryError(), "error"),
    (_Unprintable(), "error"),
    (ImportError("no vm_cuda"), "vm-unavailable"),
    (CudaUnavailable("pycuda is not installed"), "vm-unavailable"),
])
def test_vm_failures_are_verdicts(exc: BaseException, failure: str) -> None:
    v = Evaluator("toy", "h100", runner=_Raising(exc)).evaluate(None)
    assert_honest(v)
    assert v.valid and not v.correct and v.failure == failure and v.vm == "raising"


def test_an_unavailable_vm_is_never_cached_as_the_schedules_verdict(tmp_path: Path) -> None:
    from amkspec.search.cache import ScheduleCache

    cache = ScheduleCache(tmp_path / "cache.json")
    evaluator = Evaluator("toy", "h100", runner=_Raising(CudaUnavailable("no GPU")))
    v = evaluator.evaluate(None)
    cache.store(v, evaluator.context)
    assert v.failure == "vm-unavailable" and v.program_sha256 and not cache.entries


class _Unhashable(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("boom")


def test_evaluate_never_raises_even_when_the_config_cannot_be_hashed() -> None:
    v = evaluate("toy", "h100", _Unhashable(a=1))
    assert_honest(v)
    assert v.failure == "error" and "boom" in (v.rejected_reason or "") and v.schedule_id == "sch_unhashable"


def test_a_megakernel_vm_that_is_not_installed_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vm_cuda", None)  # import vm_cuda → ImportError
    v = evaluate("toy", "h100", None, vm="cpu-kernel")
    assert v.valid and not v.correct and v.failure == "vm-unavailable" and v.vm == "cpu-kernel"


def test_a_lowering_that_raises_is_a_rejection() -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("emitter exploded")

    v = Evaluator("toy", "h100", lowering=broken).evaluate(None)
    assert not v.valid and v.failure == "lowering" and "emitter exploded" in (v.rejected_reason or "")
    nothing = Evaluator("toy", "h100", lowering=lambda *args: None).evaluate(None)
    assert not nothing.valid and nothing.failure == "lowering"
    assert "NoneType" in (nothing.rejected_reason or "")


def test_an_unwritable_witness_dir_keeps_the_rejection(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    v = Evaluator("toy", "h100", witness_dir=blocked / "w").evaluate({"tiling": 1})
    assert not v.valid and v.failure == "rejected" and v.witness is None
    assert any("could not be written" in n for n in v.notes)


@pytest.mark.parametrize("changes", [
    {"latency_us": 40.0, "latency_kind": "predicted"},  # latency without correct
    {"correct": True, "valid": False, "rejected_reason": "x"},  # correctness claim for a rejection
    {"correct": True, "latency_us": 40.0, "latency_kind": "measured-gpu"},  # measured without a GPU run
    {"correct": True, "latency_us": 0.01, "latency_kind": "predicted", "bound_us": 0.1},  # below the floor
    {"valid": False},  # rejected without a reason
])
def test_a_dishonest_verdict_cannot_be_built(changes: dict[str, Any]) -> None:
    base = {"valid": True, "failure": "mismatch"} if not changes.get("correct") else {"valid": True}
    with pytest.raises(DishonestVerdict):
        Verdict(**{**base, **changes})


def test_measured_gpu_needs_the_gpu_timing_path() -> None:
    ok = Verdict(valid=True, correct=True, latency_us=40.0, latency_kind="measured-gpu", gpu_timed=True)
    assert ok.latency_kind == "measured-gpu"
    v = TOY.evaluate(ScheduleConfig(pipelining_depth=3))
    assert not v.gpu_timed and v.latency_kind == "predicted"
    with pytest.raises(DishonestVerdict):
        attrs.evolve(v, latency_kind="measured-gpu")


@pytest.mark.gpu
def test_measured_gpu_latency_on_a_real_gpu() -> None:
    pytest.importorskip("vm_cuda", reason="the CUDA megakernel (vm_cuda) is not built here")
    from vm_cuda.cuda import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no GPU path: {reason}")
    v = evaluate("toy", "h100", None, vm="cuda")
    assert_honest(v)
    assert v.correct and v.latency_kind == "measured-gpu" and v.gpu_timed


def test_cli_evaluate_prints_only_the_verdict(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"tiling": {"gemv": {"N_tile": 128}}, "pipelining_depth": 3}))
    code, out, err = _invoke("evaluate", "toy", "--target", "h100", "--config", str(cfg))
    assert code == 0 and err == ""
    v = json.loads(out)
    assert v["correct"] and v["latency_kind"] == "predicted" and v["schedule_id"].startswith("sch_")


@pytest.mark.parametrize(("text", "code"), [
    (json.dumps({"tiling": 7}), 1),
    (json.dumps({"smem_bytes_per_block": 10**9}), 1),
    ("{not json", 2),
    ("[1, 2]", 1),
    ("null", 1),
    ("[" * 100_000, 2),
    ('{"pipelining_depth": ' + "9" * 5000 + "}", 2),
])
def test_cli_evaluate_exit_codes(tmp_path: Path, text: str, code: int) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(text)
    got, out, err = _invoke("evaluate", "toy", "--target", "h100", "--config", str(cfg))
    assert got == code
    if code == 1:
        assert not json.loads(out)["valid"] and err == ""
    else:
        assert out == "" and len(err.strip().splitlines()) == 1


def test_cli_evaluate_writes_a_witness_for_a_plugged_in_racy_lowering(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"pipelining_depth": 4}))
    code, out, _ = _invoke("evaluate", "toy", "--target", "h100", "--config", str(cfg), "--witness-dir",
                           str(tmp_path / "w"), "--lowering",
                           "amkspec.search.examples:racy_prefetch_lowering")
    v = json.loads(out)
    assert code == 1 and v["rejected_codes"][0] == "R303" and Path(v["witness"]).exists()
    code, _, err = _invoke("evaluate", "toy", "--target", "h100", "--lowering", "no.such:thing")
    assert code == 2 and "--lowering" in err


def test_odd_strings_in_keys_are_a_clean_rejection_with_a_witness_file(tmp_path: Path) -> None:
    """Found by tools/fuzz_evaluate.py: a lone surrogate in a long key crashed the witness naming."""
    ev = Evaluator("toy", "h100", witness_dir=tmp_path)
    zeros = {"gemv": {"N_tile": 0, "base_width": 0}, "attention": {"n_partitions": 0, "kv_block": 0}}
    v = ev.evaluate({"\ud800" * 50: 1, "tiling": {**zeros, "\ud800é": {}}})
    assert not v.valid and v.failure == "rejected" and set(v.rejected_codes) == {"knob:range", "knob:unknown"}
    assert v.witness is not None and Path(v.witness).exists()
    json.dumps(v.to_dict()).encode("ascii")


def test_the_cpu_build_of_the_megakernel_gets_the_same_verdict() -> None:
    pytest.importorskip("vm_cuda", reason="the megakernel package (vm_cuda) is not installed here")
    mk = evaluate("toy", "h100", {"pipelining_depth": 3}, vm="cpu-kernel", timeout_s=30)
    ref = evaluate("toy", "h100", {"pipelining_depth": 3})
    assert_honest(mk)
    assert mk.correct and mk.vm == "cpu-kernel" and mk.latency_kind == "predicted"
    assert (mk.latency_us, mk.program_sha256) == (ref.latency_us, ref.program_sha256)
