"""pytest form of the conformance kit (spec §9.4).

``pytest corpus/ --impl "CMD" [--level core|strict] [--cases DIR]`` runs every case against the
implementation ``CMD`` (default: amkspec's own adapter), through the same harness protocol and judge
as ``amkspec conformance``, and only those cases: the kit's own tests live in amkspec's suite
(``tests/conformance/``). A case the implementation cannot run is skipped as not applicable; a case
that fails at ``--level`` (default ``core``) fails naming its rules; one whose only findings are not
required at that level (a SHOULD, or a strict rule at ``core``) is an expected failure ("xfail")
with its reason. The terminal summary ends with the report of both levels.

Certifying nothing is unusable input, as on the command line: when no case is selected (``-k`` that
matches none, an empty ``--cases`` folder) or the implementation does not start, the run stops with
one line naming the command, and exit status 2.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from amkspec.conformance.cases import CaseError, default_cases_dir, discover
from amkspec.conformance.client import ImplCommandError, Session
from amkspec.conformance.kit import CaseResult, ImplStartError, KitRun, start_session
from amkspec.conformance.rules import LEVELS, Level

DEFAULT_IMPL = f"{shlex.quote(sys.executable)} -m amkspec.conformance.adapter --vm reference"
CASE_TEST = "test_cases.py::test_case["
RESULTS: list[CaseResult] = []
"""Every judged case of this pytest session, for the summary."""
STATE: dict[str, Any] = {}
"""The cases folder (once the certification module is collected) and the running implementation."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("amkspec conformance")
    group.addoption(
        "--impl",
        default=None,
        help="command of the implementation under test "
        "(speaks the spec §9.3 protocol); default: amkspec's own adapter",
    )
    group.addoption(
        "--impl-timeout",
        type=float,
        default=60.0,
        help="seconds the implementation may take to answer one request (start included)",
    )
    group.addoption(
        "--level",
        choices=[lv.value for lv in LEVELS],
        default=Level.CORE.value,
        help="the level a case must pass at: core (the spec, default) or strict (amkspec's profile)",
    )
    group.addoption("--cases", default=None, help="the cases folder (default: corpus/cases)")


def implementation_command(config: pytest.Config) -> str:
    """The ``--impl`` command, or amkspec's adapter."""
    return config.getoption("--impl") or DEFAULT_IMPL


def certification_level(config: pytest.Config) -> Level:
    return Level(config.getoption("--level"))


def _stop(message: str) -> None:
    pytest.exit(f"amkspec conformance: {message}", returncode=2)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" not in metafunc.fixturenames:
        return
    option = metafunc.config.getoption("--cases")
    root = Path(option) if option else default_cases_dir()
    cases = []
    STATE["root"] = root
    if not root.is_dir():
        STATE["unusable"] = f"{root}: no such cases folder"
    else:
        try:
            cases = discover(root)
        except CaseError as exc:
            STATE["unusable"] = str(exc)
    if not cases and "unusable" not in STATE:
        STATE["unusable"] = f"no conformance case under {root}: nothing to certify"
    metafunc.parametrize("case", cases, ids=[c.id for c in cases])


def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse an empty certification, then start the implementation once, before any case runs."""
    if "root" not in STATE:
        return  # the certification module is not part of this session
    config = session.config
    command = implementation_command(config)
    if "unusable" in STATE:
        _stop(f"{STATE['unusable']} ({command})")
    selected = [item for item in session.items if CASE_TEST in item.nodeid]
    if not selected:
        if config.getoption("--impl") is not None or not session.items:
            which = f" matches -k {config.getoption('keyword')!r}"
            _stop(f"no conformance case under {STATE['root']}{which}: nothing to certify ({command})")
        return
    timeout = config.getoption("--impl-timeout")
    try:
        running = Session(command, timeout_s=timeout, start_timeout_s=timeout)
        start_session(running)
    except (ImplCommandError, ImplStartError) as exc:
        _stop(str(exc))
    STATE["session"] = running


@pytest.fixture(scope="session")
def kit_session() -> Session:
    """The running implementation under test (restarted by the session after a failure)."""
    running: Session = STATE["session"]
    return running


def pytest_sessionfinish(session: pytest.Session) -> None:
    if "session" in STATE:
        STATE["session"].stop()


@pytest.fixture(scope="session")
def kit_level(request: pytest.FixtureRequest) -> Level:
    return certification_level(request.config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if not RESULTS:
        return
    from amkspec.conformance.report import summary

    info = STATE["session"].info if "session" in STATE else {}
    run = KitRun(
        implementation_command(config),
        dict(info),
        RESULTS,
        sum(r.seconds for r in RESULTS),
        0,
        certification_level(config),
    )
    terminalreporter.section("conformance report by chapter and level")
    terminalreporter.write(summary(run))
