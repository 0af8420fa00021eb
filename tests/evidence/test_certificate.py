"""Certificates: built for accepted programs, accepted by the independent checker, and
refused for every program ``validate`` rejects, whatever certificate comes with it (issue 9, finding 4)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amkspec.conformance.cases import default_cases_dir, discover, program_text
from amkspec.evidence.certificate import CertificateError, certify
from amkspec.evidence.certificate_check import CertificateRefused, MalformedCertificate, check_certificate
from amkspec.ir import BufferKind, FormatError, InstructionKind, MegakernelProgram, load, loads
from amkspec.ir.jsonio import program_sha256
from amkspec.programs.gallery import EXAMPLES, layered
from amkspec.programs.strategies import arbitrary_programs, valid_programs
from amkspec.proofs import Severity, validate
from amkspec.proofs.diagnostics import CODES
from tests.conftest import FIXTURES
from tests.evidence.forge import forge, refused

TOY2 = FIXTURES / "toy2L__splitkv4__pos47.json"


# -- accepted programs: the certificate is built and accepted -------------------------------------


@given(valid_programs(max_tasks=12))
def test_every_accepted_program_gets_an_accepted_certificate(prog: MegakernelProgram) -> None:
    assert validate(prog).ok
    check_certificate(prog, certify(prog))


@given(arbitrary_programs(max_tasks=8))
def test_checker_agrees_with_validate_on_arbitrary_programs(prog: MegakernelProgram) -> None:
    """Accepted: certify's certificate passes. Rejected: the strongest forgery is refused."""
    codes = _errors(prog)
    if not codes:
        check_certificate(prog, certify(prog))
    elif not codes <= TYPING:
        assert refused(prog, forge(prog))


@pytest.mark.parametrize("path", [TOY2, FIXTURES / "toy1L__default.json"], ids=lambda p: p.name)
def test_fixture_certificates(path: Path) -> None:
    prog = load(path)
    cert = certify(prog)
    check_certificate(prog, cert)
    assert len(cert["order"]) == len(prog.tasks) and cert["paths"]


# -- rejected programs: refused, with a nearby valid program's certificate or a forgery -----------


VALIDATE_CASES = {c.path: c for c in discover(default_cases_dir()) if c.kind == "validate"}
"""The conformance kit's validate cases (spec §9), by file."""


def _cases() -> list[tuple[Path, Path | None]]:
    rejected = []
    for path, case in VALIDATE_CASES.items():
        if case.body["expect"]["verdict"] == "rejected":
            ok = path.with_name(path.stem + "_ok.json")
            rejected.append((path, ok if ok in VALIDATE_CASES else None))
    return rejected


def _program(path: Path) -> MegakernelProgram | None:
    case = VALIDATE_CASES[path]
    try:
        return loads(program_text(case.body, case.base))
    except FormatError:
        return None


TYPING = {c for c in CODES if c.startswith("M4")} - {"M401", "M402", "M433", "M439"}
"""Memory-safety typing rules (dtypes, reduction lengths, layouts, recipes) outside the
certificate's scope: the checker refuses such a program only through its hash."""


def _errors(prog: MegakernelProgram) -> set[str]:
    return {d.code for d in validate(prog).diagnostics if d.severity is Severity.ERROR}


@pytest.mark.parametrize(("bad", "near"), _cases(), ids=lambda p: p.stem if p else "-")
def test_conformance_rejections_arerefused(bad: Path, near: Path | None) -> None:
    prog = _program(bad)
    if prog is None:
        pytest.skip("the case is not a representable program (FormatError): there is nothing to certify")
    codes = _errors(prog)
    assert codes
    near_prog = _program(near) if near is not None else None
    if codes <= TYPING:
        assert near_prog is not None and validate(near_prog).ok
        with pytest.raises(CertificateRefused, match="different program"):
            check_certificate(prog, certify(near_prog))
        return
    assert refused(prog, forge(prog)), "a forged certificate was accepted"
    if near_prog is not None and validate(near_prog).ok:
        assert refused(prog, certify(near_prog)), f"the certificate of {near.name} was accepted"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_rejected_examples_arerefused(name: str) -> None:
    prog = EXAMPLES[name]()
    if validate(prog).ok:
        check_certificate(prog, certify(prog))
    else:
        assert refused(prog, forge(prog))


def _mutate(prog: MegakernelProgram, how: str, at: int) -> None:
    """Small edits of a valid program, each of which can break an obligation."""
    tasks = prog.tasks
    t = tasks[at % len(tasks)]
    if how == "drop-wait" and t.waits:
        t.waits.pop()
    elif how == "threshold" and t.waits:
        t.waits[0].threshold = max(1, t.waits[0].threshold - 1)
    elif how == "init" and prog.counters:
        prog.counters[at % len(prog.counters)].init = 1
    elif how == "read-only" and t.outputs:
        next(b for b in prog.buffers if b.id == t.outputs[0]).kind = BufferKind.CONST
    elif how == "tile" and t.op in (InstructionKind.GEMV_TILE, InstructionKind.GEMM_TILE):
        t.params["n_off"] = 0
    elif how == "self-read" and t.outputs:
        t.inputs = [*t.inputs, t.outputs[0]][-8:]
    elif how == "sm":
        for n, task in enumerate(tasks):
            task.sm = (len(tasks) - n) % 2
    elif how == "swap" and len(tasks) > 1:
        tasks[0].out_counter, tasks[-1].out_counter = tasks[-1].out_counter, tasks[0].out_counter


MUTATIONS = ["drop-wait", "threshold", "init", "read-only", "tile", "self-read", "sm", "swap"]


@given(valid_programs(max_tasks=10), st.sampled_from(MUTATIONS), st.integers(0, 50))
def test_a_mutated_program_refuses_its_parents_certificate(
    prog: MegakernelProgram, how: str, at: int
) -> None:
    """Finding 4: a valid program's certificate, rebound to a mutated program that validate
    rejects, is refused; a mutation validate accepts gets its own accepted certificate."""
    cert = certify(prog)
    mutated = copy.deepcopy(prog)
    _mutate(mutated, how, at)
    codes = _errors(mutated)
    if not codes:
        check_certificate(mutated, certify(mutated))
    elif not codes <= TYPING:
        assert refused(mutated, cert)
        assert refused(mutated, forge(mutated))


def test_finding_4_regression() -> None:
    """A shared counter lowered to a partial wait: the old checker returned OK."""
    prog = layered(16)
    cert = certify(prog)
    mutated = copy.deepcopy(prog)
    mutated.tasks[-1].waits[0].threshold = 1
    assert not validate(mutated).ok
    assert refused(mutated, cert)


# -- unsafe programs get no certificate; tampering is refused ----------------------------------


@pytest.mark.parametrize(
    "name", ["partial-join read race", "unsatisfiable threshold", "cycle", "page clobber"]
)
def test_unsafe_programs_get_no_certificate(name: str) -> None:
    with pytest.raises(CertificateError):
        certify(EXAMPLES[name]())


def _tamper(cert: dict[str, Any], how: str) -> None:
    if how == "hash":
        cert["program_sha256"] = "0" * 64
    elif how == "drop-path":
        cert["paths"].pop()
    elif how == "detour":
        path = cert["paths"][0]
        cert["paths"][0] = [path[0], cert["order"][-1], path[-1]]
    elif how == "order":
        cert["order"].reverse()
    elif how == "duplicate-order":
        cert["order"][0] = cert["order"][1]


@pytest.mark.parametrize("how", ["hash", "drop-path", "detour", "order", "duplicate-order"])
def test_tampered_certificates_arerefused(how: str) -> None:
    prog = load(TOY2)
    cert = copy.deepcopy(certify(prog))
    _tamper(cert, how)
    with pytest.raises(CertificateRefused):
        check_certificate(prog, cert)


def test_a_certificate_does_not_fit_another_program() -> None:
    with pytest.raises(CertificateRefused, match="different program"):
        check_certificate(load(FIXTURES / "toy1L__default.json"), certify(load(TOY2)))


def test_a_hop_through_a_partial_wait_proves_nothing() -> None:
    prog = EXAMPLES["partial-join read race"]()
    cert = forge(prog)
    with pytest.raises(CertificateRefused):
        check_certificate(prog, cert)


def test_same_sm_order_is_not_happens_before() -> None:
    """Two tasks on one SM, in list order, no counter between them: the read is refused (spec §2.1)."""
    prog = layered(8)
    for t in prog.tasks:
        t.sm = 0
    last = prog.tasks[-1]
    dropped = copy.deepcopy(prog)
    dropped.tasks[-1].waits = []
    assert not validate(dropped).ok
    assert refused(dropped, forge(dropped))
    assert last.waits  # the original still orders it by a counter


# -- untrusted certificate files --------------------------------------------------------------


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        "x",
        {},
        {"format": "amkspec-certificate"},
        {"format": "amkspec-certificate", "version": True},
        {"order": _nested(5000)},
        {"order": [10**400], "paths": [[True, 1]]},
        {"paths": "abc"},
        {"paths": [[1]]},
        {"pages": [{"page": "0", "occupants": []}]},
        {"pages": [{"page": 0}]},
        {"order": [1.5]},
    ],
)
def test_malformed_certificates_are_clear_errors(bad: Any) -> None:
    prog = load(TOY2)
    cert = certify(prog)
    doc = {**cert, **bad} if isinstance(bad, dict) and bad and "format" not in bad else bad
    with pytest.raises(CertificateRefused) as info:
        check_certificate(prog, doc)
    assert isinstance(info.value, MalformedCertificate) or "path" in str(info.value)


def test_program_sha256_is_the_canonical_json_hash() -> None:
    prog = load(TOY2)
    assert certify(prog)["program_sha256"] == program_sha256(prog)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(
    st.fixed_dictionaries(
        {},
        optional={k: _JSON for k in ("format", "version", "program_sha256", "order", "paths", "pages")},
    )
)
def test_any_json_object_is_refused_cleanly(doc: dict[str, Any]) -> None:
    """Untrusted input: whatever the object holds, the checker raises only CertificateRefused."""
    prog = layered(8)
    good = certify(prog)
    for candidate in (doc, {**good, **doc}):
        try:
            check_certificate(prog, candidate)
        except CertificateRefused:
            continue
        assert candidate == good or {**good, **doc} == good
