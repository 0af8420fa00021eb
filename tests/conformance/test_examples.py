"""The worked examples of spec §9 work: the ten-minute adapter certifies through the protocol, and
the example transcript is what amkspec's adapter really answers."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema

from amkspec.conformance.cases import default_cases_dir
from amkspec.conformance.kit import run_kit
from amkspec.conformance.protocol import SCHEMA
from tests.conftest import ROOT

EXAMPLES = ROOT / "corpus" / "examples"


def test_the_ten_minute_adapter_passes_what_it_claims_and_nothing_else() -> None:
    run = run_kit(
        f"{sys.executable} -m corpus.examples.ten_minute_adapter", default_cases_dir(), select="R30"
    )
    statuses = {r.case.kind: set() for r in run.results}
    for r in run.results:
        statuses[r.case.kind].add(r.status)
    assert statuses == {"validate": {"passed"}, "refuse": {"not applicable"}}
    assert run.passed


def test_the_transcript_is_what_the_adapter_answers() -> None:
    lines = (EXAMPLES / "transcript.txt").read_text().splitlines()
    requests = [line[4:] for line in lines if line.startswith(">>> ")]
    replies = [json.loads(line[4:]) for line in lines if line.startswith("<<< ")]
    proc = subprocess.run(
        [sys.executable, "-m", "amkspec.conformance.adapter"],
        input="\n".join(requests) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert [json.loads(line) for line in proc.stdout.splitlines()] == replies
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for message in [json.loads(r) for r in requests] + replies:
        assert validator.is_valid(message), message
