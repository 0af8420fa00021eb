"""Judging one case against an implementation's replies (spec §9.2, §9.4).

Each kind sends its requests through a :class:`~amkspec.conformance.client.Session` and compares
the replies with the case's expectations. Every disagreement is a :class:`Finding` that cites the
rules it shows broken, and only those: what the specification fixes (loaded or refused, accepted or
rejected, ran or refused, the numbers within tolerance) is cited under the case's own rules, while
amkspec's vocabulary — the error class, the JSON path of a refusal and the diagnostic codes — is
cited under the SHOULD rules of :data:`~amkspec.conformance.rules.VOCABULARY`. A refuse
case is judged against the implementation's own verdict where it declares ``validate``: its VM must
refuse exactly what its validator rejects. A case is *not applicable* when the implementation lacks
a capability it requires, never passed; a protocol failure fails the case with its reason, under
rule CONF-REPLY-1 as well as the case's rules.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import numpy as np

from amkspec.conformance.cases import Case, CaseError, program_text
from amkspec.conformance.client import ProtocolFailure, Session
from amkspec.conformance.rules import CODE_RULE, ERROR_CLASS, ERROR_PATH, VOCABULARY
from amkspec.conformance.tensors import FLOAT_DTYPES, TensorError, absolute, decode

PASS, FAIL, NA = "passed", "failed", "not applicable"
PROTOCOL = "CONF-REPLY-1"
REFUSE, RUN_ACCEPTED = "EXEC-REFUSE-1", "EXEC-REFUSE-2"


@attrs.frozen
class Finding:
    """One way the implementation disagrees with the case, and the rules that disagreement breaks."""

    rules: tuple[str, ...]
    message: str


@attrs.frozen
class Verdict:
    """A case's outcome: passed (no finding), failed (findings) or not applicable (``reason``)."""

    status: str
    findings: tuple[Finding, ...] = ()
    reason: str = ""


class Mismatch(Exception):
    """The implementation answered, but not as the case expects, so judging stops here."""

    def __init__(self, rules: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.rules = rules


class Checks:
    """The findings of one case so far."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.findings: list[Finding] = []
        self.primary = tuple(r for r in case.rules if r not in VOCABULARY)
        """The case's rules for what the specification fixes (its vocabulary rules set aside)."""

    def fail(self, message: str, rules: tuple[str, ...] | None = None) -> None:
        self.findings.append(Finding(self.primary if rules is None else rules, message))


def judge(case: Case, session: Session) -> Verdict:
    """Run ``case`` through ``session`` and say whether the implementation conforms."""
    missing = [c for c in case.requires if c not in session.capabilities]
    if missing:
        return Verdict(NA, reason=f"lacks capability {', '.join(missing)}")
    checks = Checks(case)
    try:
        JUDGES[case.kind](checks, session)
    except CaseError:
        raise  # the case file is at fault, not the implementation
    except ProtocolFailure as exc:
        return _protocol(checks, str(exc))
    except Mismatch as exc:
        checks.fail(str(exc), exc.rules)
    except (AttributeError, TypeError, ValueError, KeyError, ArithmeticError) as exc:  # a reply's shape
        return _protocol(checks, f"malformed reply: {type(exc).__name__}: {exc}")
    if not checks.findings:
        return Verdict(PASS)
    return Verdict(FAIL, tuple(checks.findings), checks.findings[0].message)


def _protocol(checks: Checks, reason: str) -> Verdict:
    """A crash, a timeout or a malformed reply: rule CONF-REPLY-1, and the case's rules unshown."""
    findings = (Finding((PROTOCOL,), reason), Finding(checks.primary, f"no answer: {reason}"))
    return Verdict(FAIL, findings, reason)


def _ok(reply: dict[str, Any], rules: tuple[str, ...]) -> dict[str, Any]:
    if not reply.get("ok"):
        error = reply.get("error") or {}
        raise Mismatch(rules, f"request failed: {error.get('class', '?')}: {error.get('message', reply)}")
    return reply


# -- format -------------------------------------------------------------------------------------
def judge_format(checks: Checks, session: Session) -> None:
    body = checks.case.body
    expect = body["expect"]
    reply = _ok(session.request({"cmd": "load", "document": body["document"]}), checks.primary)
    status = reply.get("status")
    if expect["outcome"] == "loaded":
        if status != "loaded":
            raise Mismatch(checks.primary, f"refused a document it must load: {reply.get('error')}")
        wanted = expect.get("documents", [body["document"]])
        if reply.get("document") not in wanted:
            checks.fail(
                "the re-serialised document differs from the expected bytes"
                + _first_diff(str(reply.get("document")), wanted[0])
            )
        return
    if status != "refused":
        raise Mismatch(checks.primary, "loaded a document it must refuse")
    error = reply.get("error") or {}
    if error.get("class") != expect["error_class"]:
        checks.fail(f"refused with {error.get('class')!r}, not {expect['error_class']!r}", (ERROR_CLASS,))
    if "path" in expect and not same_path(error.get("path"), expect["path"]):
        checks.fail(
            f"the error names path {error.get('path')!r}, not {expect['path']!r} "
            f"(or the JSON Pointer {json_pointer(expect['path'])!r})",
            (ERROR_PATH,),
        )


def _first_diff(got: str, wanted: str) -> str:
    pairs = enumerate(zip(got, wanted, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(got), len(wanted)))
    return (
        f" (first difference at character {at}: got {got[at : at + 30]!r}, expected {wanted[at : at + 30]!r})"
    )


_STEP = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]')


def json_pointer(path: str) -> str:
    """The RFC 6901 JSON Pointer of an amkspec JSON path: ``tasks[1].waits[0]`` → ``/tasks/1/waits/0``,
    ``config.sm_assignment["3a"]`` → ``/config/sm_assignment/3a``, ``(root)`` → the empty pointer."""
    if path == "(root)":
        return ""
    steps = []
    for name, index, key in _STEP.findall("." + path if path[:1] not in ".[" else path):
        token = name or index or key.replace('\\"', '"').replace("\\\\", "\\")
        steps.append("/" + token.replace("~", "~0").replace("/", "~1"))
    return "".join(steps)


def same_path(got: Any, want: str) -> bool:
    """Whether an error's path names ``want``, in amkspec's syntax or as an RFC 6901 JSON Pointer."""
    return isinstance(got, str) and got in (want, json_pointer(want))


# -- validate -----------------------------------------------------------------------------------
def judge_validate(checks: Checks, session: Session) -> None:
    case = checks.case
    expect = case.body["expect"]
    request = {"cmd": "validate", "document": program_text(case.body, case.base)}
    reply = _ok(session.request(request), checks.primary)
    verdict, codes = reply.get("verdict"), reply.get("codes") or []
    if verdict != expect["verdict"]:
        checks.fail(f"verdict {verdict!r}, expected {expect['verdict']!r}")
    missing = [c for c in expect.get("codes", []) if c not in codes]
    present = [c for c in expect.get("absent_codes", []) if c in codes]
    if missing:
        checks.fail(f"did not report {', '.join(missing)} (reported {codes})", (CODE_RULE,))
    if present:
        checks.fail(f"reported {', '.join(present)}, which this program does not violate", (CODE_RULE,))


# -- run ----------------------------------------------------------------------------------------
def _tensors(objs: dict[str, Any] | None, case: Case) -> dict[str, Any]:
    return {k: absolute(v, case.base) for k, v in (objs or {}).items()}


def _run(checks: Checks, session: Session, step: dict[str, Any], kv: dict[str, Any] | None) -> dict[str, Any]:
    case = checks.case
    request = {
        "cmd": "run",
        "program": program_text(step, case.base),
        "weights": _tensors(case.body["weights"], case),
        "inputs": _tensors(step.get("inputs"), case),
        "kv": kv,
    }
    return _ok(session.request(request), checks.primary)


def judge_run(checks: Checks, session: Session) -> None:
    case = checks.case
    tolerance = case.body["tolerance"]
    kv: dict[str, Any] | None = None
    for n, step in enumerate(case.body["steps"]):
        if "kv" in step:
            kv = _tensors(step["kv"], case)
        reply = _run(checks, session, step, kv)
        where = f"step {n}: " if len(case.body["steps"]) > 1 else ""
        if reply.get("status") != "ran":
            answer = f"{reply.get('status')} {reply.get('error')}"
            raise Mismatch(checks.primary, f"{where}did not run a valid program: {answer}")
        outputs = reply.get("outputs") or {}
        for name, want in step["expect"]["outputs"].items():
            if name not in outputs:
                raise Mismatch(checks.primary, f"{where}no output {name!r}")
            problem = compare(outputs[name], want, case, tolerance)
            if problem:
                raise Mismatch(checks.primary, f"{where}output {name!r}: {problem}")
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
    return mismatch(actual, expected, want["dtype"], tolerance)


def mismatch(actual: np.ndarray, expected: np.ndarray, dtype: str, tolerance: dict[str, list[float]]) -> str:
    """Why ``actual`` differs from ``expected`` beyond the tolerance of ``dtype`` ('' if it does not):
    a float element passes when ``|got − want| ≤ atol + rtol·|want|`` (or both are the same infinity,
    or both NaN); integer and boolean elements must be equal (spec §9.2)."""
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)}, expected {list(expected.shape)}"
    a, e = actual.astype(np.float64).reshape(-1), expected.astype(np.float64).reshape(-1)
    if dtype not in FLOAT_DTYPES:
        bad = np.flatnonzero(a != e)
        if bad.size == 0:
            return ""
        return f"{bad.size} value(s) differ; first at {int(bad[0])}: {a[bad[0]]:g} vs {e[bad[0]]:g} (exact)"
    atol, rtol = tolerance[dtype]
    with np.errstate(invalid="ignore"):
        close = np.abs(a - e) <= atol + rtol * np.abs(e)
        ok = close | ((a == e) & ~np.isnan(e)) | (np.isnan(a) & np.isnan(e))
    if ok.all():
        return ""
    first = int(np.flatnonzero(~ok)[0])
    return (
        f"{int((~ok).sum())} value(s) outside atol {atol:g} + rtol {rtol:g}; first at {first}: "
        f"{a[first]:.9g} vs {e[first]:.9g}"
    )


# -- refuse -------------------------------------------------------------------------------------
def judge_refuse(checks: Checks, session: Session) -> None:
    """A VM refuses what its validator rejects and runs what it accepts. Where the implementation
    declares ``validate``, its own verdict on the program decides which (rule EXEC-REFUSE-1 or -2);
    otherwise the case's expected outcome does, and a program run that should have been refused
    breaks the rules that make it invalid as well."""
    case = checks.case
    expect = case.body["expect"]["outcome"]
    if "validate" in session.capabilities:
        request = {"cmd": "validate", "document": program_text(case.body, case.base)}
        verdict = _ok(session.request(request), checks.primary).get("verdict")
        wanted = "ran" if verdict == "accepted" else "refused"
        rules: tuple[str, ...] = (RUN_ACCEPTED,) if wanted == "ran" else (REFUSE,)
        why = f"its validator says {verdict!r}"
    else:
        wanted = expect
        rules = (RUN_ACCEPTED,) if wanted == "ran" else tuple(r for r in checks.primary if r != RUN_ACCEPTED)
        why = "the program is " + ("valid" if wanted == "ran" else "invalid")
    status = _run(checks, session, case.body, None).get("status")
    if status != wanted:
        must = "run" if wanted == "ran" else "refuse"
        checks.fail(f"answered {status!r} where it must {must} the program ({why})", rules)


JUDGES = {"format": judge_format, "validate": judge_validate, "run": judge_run, "refuse": judge_refuse}
