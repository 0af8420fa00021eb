"""Judging one case against an implementation's replies (spec §9.2, §9.4).

Each kind sends its requests through a :class:`~amkspec.conformance.client.Session` and compares
the replies with the case's expectations. A case is *not applicable* when the implementation
lacks a capability it requires, never passed; a protocol failure fails the case with its reason.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from amkspec.conformance.cases import Case, CaseError, program_text
from amkspec.conformance.client import ProtocolFailure, Session
from amkspec.conformance.tensors import FLOAT_DTYPES, TensorError, absolute, decode

PASS, FAIL, NA = "passed", "failed", "not applicable"


@attrs.frozen
class Verdict:
    """A case's outcome and, unless it passed, why."""

    status: str
    reason: str = ""
    protocol: bool = False
    """The failure is a protocol failure (crash, timeout, malformed reply): rule CONF-REPLY-1."""


class Mismatch(Exception):
    """The implementation answered, but not as the case expects."""


def judge(case: Case, session: Session) -> Verdict:
    """Run ``case`` through ``session`` and say whether the implementation conforms."""
    missing = [c for c in case.requires if c not in session.capabilities]
    if missing:
        return Verdict(NA, f"lacks capability {', '.join(missing)}")
    try:
        JUDGES[case.kind](case, session)
    except CaseError:
        raise  # the case file is at fault, not the implementation
    except ProtocolFailure as exc:
        return Verdict(FAIL, str(exc), protocol=True)
    except Mismatch as exc:
        return Verdict(FAIL, str(exc))
    except (AttributeError, TypeError, ValueError, KeyError, ArithmeticError) as exc:  # a reply's shape
        return Verdict(FAIL, f"malformed reply: {type(exc).__name__}: {exc}", protocol=True)
    return Verdict(PASS)


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    if not reply.get("ok"):
        error = reply.get("error") or {}
        raise Mismatch(f"request failed: {error.get('class', '?')}: {error.get('message', reply)}")
    return reply


# -- format -------------------------------------------------------------------------------------
def judge_format(case: Case, session: Session) -> None:
    expect = case.body["expect"]
    reply = _ok(session.request({"cmd": "load", "document": case.body["document"]}))
    status = reply.get("status")
    if expect["outcome"] == "loaded":
        if status != "loaded":
            raise Mismatch(f"refused a document it must load: {reply.get('error')}")
        wanted = expect.get("document", case.body["document"])
        if reply.get("document") != wanted:
            raise Mismatch(
                "the re-serialised document differs from the expected bytes"
                + _first_diff(str(reply.get("document")), wanted)
            )
        return
    if status != "refused":
        raise Mismatch(f"loaded a document it must refuse with {expect['error_class']}")
    error = reply.get("error") or {}
    if error.get("class") != expect["error_class"]:
        raise Mismatch(f"refused with {error.get('class')!r}, expected {expect['error_class']!r}")
    if "path" in expect and error.get("path") != expect["path"]:
        raise Mismatch(f"the error names path {error.get('path')!r}, expected {expect['path']!r}")


def _first_diff(got: str, wanted: str) -> str:
    pairs = enumerate(zip(got, wanted, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(got), len(wanted)))
    return (
        f" (first difference at character {at}: got {got[at : at + 30]!r}, expected {wanted[at : at + 30]!r})"
    )


# -- validate -----------------------------------------------------------------------------------
def judge_validate(case: Case, session: Session) -> None:
    expect = case.body["expect"]
    reply = _ok(session.request({"cmd": "validate", "document": program_text(case.body, case.base)}))
    verdict, codes = reply.get("verdict"), reply.get("codes") or []
    if verdict != expect["verdict"]:
        raise Mismatch(f"verdict {verdict!r}, expected {expect['verdict']!r} (codes {codes})")
    missing = [c for c in expect.get("codes", []) if c not in codes]
    present = [c for c in expect.get("absent_codes", []) if c in codes]
    if missing:
        raise Mismatch(f"did not report {', '.join(missing)} (reported {codes})")
    if present:
        raise Mismatch(f"reported {', '.join(present)}, which this program does not violate")


# -- run ----------------------------------------------------------------------------------------
def _tensors(objs: dict[str, Any] | None, case: Case) -> dict[str, Any]:
    return {k: absolute(v, case.base) for k, v in (objs or {}).items()}


def _run(case: Case, session: Session, step: dict[str, Any], kv: dict[str, Any] | None) -> dict[str, Any]:
    return _ok(
        session.request(
            {
                "cmd": "run",
                "program": program_text(step, case.base),
                "weights": _tensors(case.body["weights"], case),
                "inputs": _tensors(step.get("inputs"), case),
                "kv": kv,
            }
        )
    )


def judge_run(case: Case, session: Session) -> None:
    tolerance = case.body["tolerance"]
    kv: dict[str, Any] | None = None
    for n, step in enumerate(case.body["steps"]):
        if "kv" in step:
            kv = _tensors(step["kv"], case)
        reply = _run(case, session, step, kv)
        where = f"step {n}: " if len(case.body["steps"]) > 1 else ""
        if reply.get("status") != "ran":
            raise Mismatch(f"{where}did not run a valid program: {reply.get('status')} {reply.get('error')}")
        outputs = reply.get("outputs") or {}
        for name, want in step["expect"]["outputs"].items():
            if name not in outputs:
                raise Mismatch(f"{where}no output {name!r}")
            problem = compare(outputs[name], want, case, tolerance)
            if problem:
                raise Mismatch(f"{where}output {name!r}: {problem}")
        kv = {k: v for k, v in outputs.items() if k in case.body.get("kv_buffers", [])} or None


def compare(got: Any, want: dict[str, Any], case: Case, tolerance: dict[str, list[float]]) -> str:
    """Why ``got`` does not match ``want`` within the case's tolerance for its dtype ('' if it does)."""
    try:
        expected = decode(want, case.base)
    except TensorError as exc:
        raise CaseError(f"{case.path}: an expected output is unusable: {exc}") from None
    try:
        actual = decode(got)
    except TensorError as exc:
        return f"malformed tensor: {exc}"
    if got.get("dtype") != want["dtype"]:
        return f"dtype {got.get('dtype')}, expected {want['dtype']}"
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)}, expected {list(expected.shape)}"
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    if want["dtype"] not in FLOAT_DTYPES:
        bad = np.flatnonzero(a.reshape(-1) != e.reshape(-1))
        return (
            ""
            if bad.size == 0
            else f"{bad.size} value(s) differ; first at {int(bad[0])}: "
            f"{float(a.reshape(-1)[bad[0]]):g} vs {float(e.reshape(-1)[bad[0]]):g} (rule OP-INT-1: exact)"
        )
    atol, rtol = tolerance[want["dtype"]]
    with np.errstate(invalid="ignore"):
        err = np.abs(a - e)
        ok = (err <= atol + rtol * np.abs(e)) | ((a == e) & ~np.isnan(e)) | (np.isnan(a) & np.isnan(e))
    if ok.all():
        return ""
    first = int(np.flatnonzero(~ok.reshape(-1))[0])
    return (
        f"{int((~ok).sum())} value(s) outside atol {atol:g} + rtol {rtol:g}; first at {first}: "
        f"{float(a.reshape(-1)[first]):.9g} vs {float(e.reshape(-1)[first]):.9g}"
    )


# -- refuse -------------------------------------------------------------------------------------
def judge_refuse(case: Case, session: Session) -> None:
    expect = case.body["expect"]
    reply = _run(case, session, case.body, None)
    status = reply.get("status")
    if expect["outcome"] == "refused" and status != "refused":
        raise Mismatch(f"answered {status!r} for a program the validator rejects; it must refuse it")
    if expect["outcome"] == "ran" and status != "ran":
        raise Mismatch(f"answered {status!r} for a valid program; it must run it ({reply.get('error')})")


JUDGES = {"format": judge_format, "validate": judge_validate, "run": judge_run, "refuse": judge_refuse}
