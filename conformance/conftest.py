"""pytest wiring of the conformance kit (spec §9.4).

``pytest conformance/ --impl "CMD"`` runs every case against the implementation ``CMD`` (default:
amkspec's own adapter), through the same harness protocol and judge as ``amkspec conformance``.
A case the implementation cannot run is skipped as not applicable; a failed case names its rules;
the terminal summary ends with the per-rule report.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator

import pytest

from amkspec.conformance.client import Session
from amkspec.conformance.kit import CaseResult, KitRun

DEFAULT_IMPL = f"{shlex.quote(sys.executable)} -m amkspec.conformance.adapter --vm reference"
RESULTS: list[CaseResult] = []
"""Every judged case of this pytest session, for the per-rule summary."""
INFO: dict[str, object] = {}
"""The implementation's start reply."""


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


def implementation_command(config: pytest.Config) -> str:
    """The ``--impl`` command, or amkspec's adapter."""
    return config.getoption("--impl") or DEFAULT_IMPL


@pytest.fixture(scope="session")
def kit_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    """The running implementation under test (restarted by the session after a failure)."""
    timeout = request.config.getoption("--impl-timeout")
    session = Session(implementation_command(request.config), timeout_s=timeout, start_timeout_s=timeout)
    session.ensure()
    INFO.update(session.info)
    yield session
    session.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if not RESULTS:
        return
    from amkspec.conformance.report import summary

    run = KitRun(implementation_command(config), dict(INFO), RESULTS, sum(r.seconds for r in RESULTS), 0)
    terminalreporter.section("conformance report by rule")
    terminalreporter.write(summary(run))
