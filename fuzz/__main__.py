"""``python -m fuzz``: run the fuzz harness and print its counts.

    python -m fuzz --calls 1000000            # a long pass with a random seed
    python -m fuzz --calls 20000 --seed 0     # the short fixed-seed pass CI runs
    python -m fuzz --replay fuzz/reproducers.txt
    python -m fuzz --replay found.txt --compare   # replay, comparing with MLX

Exits non-zero when a call crashed, hung, panicked, raised an exception
type ferrox never raises on purpose, or disagreed with MLX. New findings
are written to ``--found`` (one ``category<TAB>call`` per line) so they can
be fixed and then added to ``fuzz/reproducers.txt``.
"""

import argparse
import random
import sys

from .runner import Runner, format_report, seeded_jobs


def read_lines(path):
    """Call lines of a reproducer file (comments and blank lines skipped)."""
    with open(path) as f:
        return [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=100_000, help="number of calls (default 100000)")
    p.add_argument("--seed", type=int, default=None, help="seed (default: random, printed)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds before a call counts as hung")
    p.add_argument("--memory-gb", type=float, default=6.0, help="address-space limit per worker")
    p.add_argument("--replay", metavar="FILE", help="replay the call lines of FILE instead")
    p.add_argument("--compare", action="store_true", help="with --replay, also compare each line with MLX")
    p.add_argument("--found", metavar="FILE", default="fuzz/found.txt", help="where new findings go")
    p.add_argument("--verbose", action="store_true", help="print each finding as it happens")
    args = p.parse_args(argv)

    runner = Runner(args.workers, args.timeout, args.memory_gb, args.verbose)
    if args.replay:
        jobs = [("COMPARE" if args.compare else "LINE", src) for src in read_lines(args.replay)]
        print(f"replaying {len(jobs)} lines of {args.replay}")
    else:
        seed = args.seed if args.seed is not None else random.randrange(1 << 31)
        print(f"fuzzing with seed {seed}: {args.calls} calls on {args.workers} workers", flush=True)
        jobs = seeded_jobs(seed, args.calls)
    report = runner.run(jobs)

    from .targets import Targets

    print(format_report(report, len(Targets().names())))
    failures = report.failures()
    shown = {}
    for f in report.findings:
        shown.setdefault(f.category, []).append(f)
    for category, items in sorted(shown.items()):
        print(f"\n{category}: {len(items)}" + (" (first 10)" if len(items) > 10 else ""))
        for f in items[:10]:
            print(f"  {f.src[:300]}\n      -> {f.detail[:300]}")
    if report.findings:
        with open(args.found, "w") as out:
            for f in report.findings:
                out.write(f"{f.category}\t{f.src}\t{f.detail}\n")
        print(f"\nfindings written to {args.found}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
