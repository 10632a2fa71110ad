"""The fuzz harness (fuzz/) as part of the test suite: every reproducer ever
found is replayed, and a short fixed-seed pass runs, each in worker
processes, so a crash or hang fails one test instead of killing pytest.
The workers use the machine's default device (the GPU where there is one).
`make fuzz` runs the long random-seed pass."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fuzz.__main__ import read_lines  # noqa: E402
from fuzz.runner import Runner, format_report, seeded_jobs  # noqa: E402

# Calls in the CI pass: about a minute on two cores.
CALLS = int(os.environ.get("FERROX_FUZZ_CALLS", "20000"))


def describe(report):
    lines = [format_report(report, 0)]
    for f in report.failures()[:20]:
        lines.append(f"[{f.category}] {f.src}\n    -> {f.detail}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def runner():
    return Runner(workers=2, timeout=60.0)


@pytest.mark.whole_process
def test_every_reproducer_is_fixed(runner):
    lines = read_lines(ROOT / "fuzz" / "reproducers.txt")
    report = runner.run([("LINE", src) for src in lines])
    assert report.counts["calls"] == len(lines), describe(report)
    assert not report.failures(), describe(report)


@pytest.mark.whole_process
def test_fixed_seed_fuzz_pass_finds_nothing(runner):
    report = runner.run(seeded_jobs(0, CALLS))
    assert report.counts["calls"] >= CALLS * 0.95, describe(report)
    assert not report.failures(), describe(report)
