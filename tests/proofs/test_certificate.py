"""Certificates: built for accepted programs, verified by the independent checker, tampering refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given

from amkspec.ir import load
from amkspec.proofs import validate
from amkspec.proofs.certificate import CertificateError, certify, check_certificate
from amkspec.smt.examples import EXAMPLES, layered
from amkspec.strategies import valid_programs
from tests.conftest import FIXTURES

TOY2 = FIXTURES / "toy2L__splitkv4__pos47.json"


@given(valid_programs(max_tasks=12))
def test_valid_programs_round_trip_through_the_checker(prog) -> None:  # type: ignore[no-untyped-def]
    assert validate(prog).ok
    check_certificate(prog, certify(prog))


def test_fixture_certificate() -> None:
    prog = load(TOY2)
    cert = certify(prog)
    check_certificate(prog, cert)
    assert len(cert["order"]) == len(prog.tasks) and cert["reads"]


def _tamper(cert: dict[str, Any], how: str) -> None:
    if how == "hash":
        cert["program_sha256"] = "0" * 64
    elif how == "drop-read":
        cert["reads"].pop()
    elif how == "detour":
        entry = cert["reads"][0]
        entry["path"] = [entry["path"][0], cert["order"][-1], entry["path"][-1]]
    elif how == "order":
        cert["order"].reverse()
    elif how == "duplicate-order":
        cert["order"][0] = cert["order"][1]
    elif how == "format":
        cert["format"] = "something else"
    elif how == "junk":
        cert["reads"] = [{"nonsense": 1}]


@pytest.mark.parametrize("how", ["hash", "drop-read", "detour", "order", "duplicate-order", "format", "junk"])
def test_tampered_certificates_are_refused(how: str) -> None:
    prog = load(TOY2)
    cert = copy.deepcopy(certify(prog))
    _tamper(cert, how)
    with pytest.raises(CertificateError):
        check_certificate(prog, cert)


def test_a_certificate_does_not_fit_another_program() -> None:
    prog = load(TOY2)
    other = load(FIXTURES / "toy1L__default.json")
    with pytest.raises(CertificateError, match="different program"):
        check_certificate(other, certify(prog))


def test_a_program_edited_after_certification_is_refused() -> None:
    prog = layered(16)
    cert = certify(prog)
    prog.tasks[-1].waits[0].threshold = 1
    with pytest.raises(CertificateError):
        check_certificate(prog, cert)


def test_pages_and_writers_are_justified() -> None:
    prog = layered(16)
    cert = certify(prog)
    check_certificate(prog, cert)
    assert cert["reads"] and cert["order"]


@pytest.mark.parametrize(
    "name", ["partial-join read race", "unsatisfiable threshold", "cycle", "page clobber"]
)
def test_unsafe_programs_get_no_certificate(name: str) -> None:
    with pytest.raises(CertificateError):
        certify(EXAMPLES[name]())


def test_checker_refuses_a_forged_hop_on_a_partial_wait() -> None:
    """A path through a partial wait proves nothing: that producer may not have ended."""
    prog = EXAMPLES["partial-join read race"]()
    from amkspec.proofs.certificate import FORMAT, VERSION, program_hash

    forged = {
        "format": FORMAT,
        "version": VERSION,
        "program_sha256": program_hash(prog),
        "order": [0, 1, 2],
        "reads": [{"buffer": 2, "writer": w, "reader": 2, "path": [w, 2]} for w in (0, 1)],
        "writes": [],
        "pages": [],
    }
    with pytest.raises(CertificateError, match="not a happens-before edge"):
        check_certificate(prog, forged)
