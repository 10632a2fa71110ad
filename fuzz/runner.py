"""The fuzz parent: hands chunks of calls to worker processes, watches them
for crashes and hangs, and tallies what they report."""

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 250


def is_huge(src):
    """Whether a call works on an input of more elements than memory holds
    (a broadcast view): ops that compute over every element then take
    time proportional to that size, as in NumPy, so running past the
    shorter timeout is 'slow', not a hang."""
    from .values import HUGE_MARKERS

    return any(m in src for m in HUGE_MARKERS)


@dataclass
class Finding:
    """A call that crashed, hung, panicked, raised an unexpected exception
    or disagreed with MLX."""

    category: str
    src: str
    detail: str = ""
    target: str = ""


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)
    findings: list = field(default_factory=list)
    seconds: float = 0.0
    started: float = 0.0

    def add(self, f: Finding):
        self.findings.append(f)

    def of(self, category):
        return [f for f in self.findings if f.category == category]

    def failures(self):
        """Findings that are bugs by definition (what CI fails on)."""
        return [f for f in self.findings if f.category in ("crash", "hang", "panic", "unexpected", "mismatch")]


class WorkerProcess:
    """One worker child and the chunk it is running."""

    def __init__(self, env):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fuzz.worker"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env=env,
            start_new_session=True,
        )
        self.chunk = None  # (kind, payload, start, end)
        self.last = None  # (index, phase)
        self.buffer = ""
        self.deadline = None

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def _describe_exit(code):
    if code is None:
        return "killed"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


class Runner:
    """Runs calls across workers; `timeout` is the most seconds one call may take."""

    def __init__(self, workers=2, timeout=20.0, memory_gb=6.0, verbose=False):
        self.nworkers = workers
        self.timeout = timeout
        self.huge_timeout = min(timeout, 5.0)
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        self.env = dict(os.environ, FUZZ_MEMORY_GB=str(memory_gb), PYTHONPATH=path)
        self.verbose = verbose
        self._shown = 0

    def _source_of(self, seed, index):
        from .targets import Targets
        from .values import Gen

        if not hasattr(self, "_targets"):
            self._targets = Targets()
        return self._targets.call(Gen(f"{seed}:{index}"))

    def run(self, jobs):
        """Runs `jobs`, a list of ('RUN', seed, start, end) or ('LINE', src)."""
        report = Report()
        queue = list(jobs)
        started = report.started = time.time()
        live = []
        while queue or any(w.chunk for w in live):
            while queue and len([w for w in live if w.chunk]) < self.nworkers:
                idle = next((w for w in live if not w.chunk), None)
                if idle is None:
                    idle = WorkerProcess(self.env)
                    live.append(idle)
                self._start(idle, queue.pop(0))
            busy = [w for w in live if w.chunk]
            ready, _, _ = select.select([w.proc.stdout for w in busy], [], [], 0.5)
            now = time.time()
            for w in busy:
                if w.proc.stdout in ready:
                    data = os.read(w.proc.stdout.fileno(), 1 << 16).decode(errors="replace")
                    if not data:
                        self._died(w, report, queue)
                        live.remove(w)
                        continue
                    w.buffer += data
                    while "\n" in w.buffer:
                        line, w.buffer = w.buffer.split("\n", 1)
                        self._line(w, line, report)
                elif w.deadline is not None and now > w.deadline:
                    self._hung(w, report, queue)
                    live.remove(w)
        for w in live:
            try:
                w.send("QUIT")
            except BrokenPipeError:
                pass
            w.kill()
        report.seconds = time.time() - started
        return report

    def _start(self, w, job):
        w.chunk = job
        w.last = None
        w.deadline = time.time() + max(self.timeout, 60.0)  # the first call also imports
        if job[0] == "RUN":
            _, seed, start, end = job
            w.send(f"RUN {seed} {start} {end - start}")
        else:
            w.send(f"{job[0]} " + json.dumps(job[1]))

    def _line(self, w, line, report):
        tag, _, rest = line.partition(" ")
        if tag in ("B", "P"):
            index, _, huge = rest.partition(" ")
            w.last = (int(index), tag)
            w.deadline = time.time() + (self.huge_timeout if huge else self.timeout)
        elif tag == "X":
            rec = json.loads(rest)
            category = rec.get("oracle") or rec.get("kind")
            if category in ("ferrox_rejects", "mlx_rejects") and len(report.of(category)) >= 200:
                return
            report.add(Finding(category, rec["src"], rec.get("msg", rec.get("exc", "")), rec.get("target", "")))
            if self.verbose:
                print(f"  [{category}] {rec['src'][:160]}  -- {rec.get('msg', '')[:160]}", flush=True)
        elif tag == "S":
            report.counts.update(json.loads(rest))
        elif tag == "DONE":
            w.chunk = None
            w.deadline = None
            if self.verbose:
                self._progress(report)

    def _progress(self, report):
        """With --verbose, a line per 20,000 calls so long runs show progress."""
        calls = report.counts["calls"]
        if calls // 20_000 > self._shown:
            self._shown = calls // 20_000
            print(f"  ... {calls} calls in {time.time() - report.started:.0f} s", flush=True)

    def _src(self, w):
        index, _ = w.last
        if w.chunk[0] != "RUN":
            return w.chunk[1]
        return self._source_of(w.chunk[1], index).src

    def _requeue_rest(self, w, queue):
        if w.chunk[0] == "RUN" and w.last is not None:
            _, seed, _, end = w.chunk
            if w.last[0] + 1 < end:
                queue.insert(0, ("RUN", seed, w.last[0] + 1, end))
        elif w.chunk[0] == "RUN":
            queue.insert(0, w.chunk)

    def _died(self, w, report, queue):
        code = w.proc.wait()
        if w.last is None:
            raise RuntimeError(f"a fuzz worker failed to start ({_describe_exit(code)})")
        src = self._src(w)
        if w.last[1] == "P":
            report.counts["oracle:mlx_crashed"] += 1
            report.add(Finding("mlx_crashed", src, _describe_exit(code)))
        else:
            report.counts["crash"] += 1
            report.counts["calls"] += 1
            report.add(Finding("crash", src, _describe_exit(code)))
            if self.verbose:
                print(f"  [crash] {src[:200]}  -- {_describe_exit(code)}", flush=True)
        self._requeue_rest(w, queue)

    def _hung(self, w, report, queue):
        w.kill()
        if w.last is None:
            raise RuntimeError("a fuzz worker did not start in time")
        src = self._src(w)
        if w.last[1] == "P":
            report.counts["oracle:mlx_hung"] += 1
            report.add(Finding("mlx_hung", src))
        elif is_huge(src):
            report.counts["slow"] += 1
            report.counts["calls"] += 1
            report.add(Finding("slow", src, f"no answer in {self.huge_timeout:.0f} s"))
        else:
            report.counts["hang"] += 1
            report.counts["calls"] += 1
            report.add(Finding("hang", src, f"no answer in {self.timeout:.0f} s"))
            if self.verbose:
                print(f"  [hang] {src[:200]}", flush=True)
        self._requeue_rest(w, queue)


def seeded_jobs(seed, calls):
    return [("RUN", seed, s, min(s + CHUNK, calls)) for s in range(0, calls, CHUNK)]


def format_report(report: Report, targets_count: int) -> str:
    c = report.counts
    exc = sorted((k[4:], v) for k, v in c.items() if k.startswith("exc:"))
    rate = c["calls"] / report.seconds if report.seconds else 0.0
    rows = [
        ("calls", f"{c['calls']}  ({rate:.0f}/s over {report.seconds:.0f} s, {targets_count} targets)"),
        ("returned", c["ok"]),
        ("exceptions", ", ".join(f"{k} {v}" for k, v in exc) or "none"),
        ("crashes", c["crash"]),
        ("panics", c["panic"]),
        ("hangs", c["hang"]),
        ("slow (work on 2**40-element views)", c["slow"]),
        ("unexpected exception types", c["unexpected"]),
        ("compared with MLX", sum(v for k, v in c.items() if k.startswith("oracle:") and k not in
                                  ("oracle:exception_class_differs", "oracle:mlx_crashed", "oracle:mlx_hung"))),
        ("  agree (values, shapes, dtypes)", c["oracle:match"]),
        ("  both raise", f"{c['oracle:both_raise']} ({c['oracle:exception_class_differs']} with another class)"),
        ("  wrong answers (disagree)", c["oracle:mismatch"]),
        ("  known, documented differences", c["oracle:known_difference"]),
        ("  ferrox raises, MLX returns", c["oracle:ferrox_rejects"]),
        ("  MLX raises, ferrox returns", c["oracle:mlx_rejects"]),
        ("  MLX itself crashed / hung", f"{c['oracle:mlx_crashed']} / {c['oracle:mlx_hung']}"),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
