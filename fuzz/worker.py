"""The fuzz worker: a child process that runs calls and reports on them.

Protocol (one line each way). The parent sends ``RUN <seed> <start> <count>``
(calls start..start+count of a seeded run) or ``LINE <json source>`` (one
given call), then reads until ``DONE``. Before each call the worker writes
``B <index>``, and ``P <index>`` before asking MLX, so that when the process
dies or stops answering the parent knows which call (and which phase) it
was. Interesting outcomes (panics, unexpected exceptions, wrong answers)
come as ``X <json>``; counts for the whole command as ``S <json>``.

The worker limits its address space (``FUZZ_MEMORY_GB``, default 6), so a
request for more memory than that must surface as a MemoryError.
"""

import json
import os
import re
import resource
import sys
import traceback
import warnings
from collections import Counter

from .runner import is_huge

# OSError: a file path that does not exist or cannot be opened (FileNotFoundError,
# PermissionError, IsADirectoryError), as Python's own file functions raise.
# BufferError: the DLPack protocol's error for a tensor a producer cannot
# export (NumPy's string arrays), which from_dlpack passes on.
ALLOWED = (ValueError, TypeError, IndexError, MemoryError, OverflowError, StopIteration, OSError, BufferError)
PANIC_MARK = "Internal error (a bug in ferrox"
# Calls with nothing to compare: ferrox names MLX lacks, and process state
# (memory counters, stream numbering) that differs between the two.
NO_ORACLE = ("fx.transfer_count", "fx.cuda.", "fx.Device(fx.cpu, 3)", "memory", "cache", "memoryview(",
             "fx.new_stream", "fx.default_stream", "fx.synchronize", "fx.new_thread_", "fx.clear_streams",
             "fx.set_default_stream", "fx.stream(")  # fmt: skip
# Calls that crash MLX 0.32 (a reshape to no shape, out-of-bounds integer
# indices, which MLX does not check, and checkpointed functions returning
# no array): MLX is not asked, which saves restarting the worker.
MLX_CRASHES = re.compile(r"\.reshape\(\)|checkpoint\(lambda x: (3\.0|None)\)|\)\[-?\d+\]$")
BIG = 1 << 20  # results larger than this are compared by shape and dtype only

# MLX's CPU build evaluates float64 transcendentals in float32 precision, so
# float64 results are compared at float32's tolerance.
TOLERANCE = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 2e-5, "float64": 2e-6, "complex64": 2e-5}


def _setup_namespace(fx, np):
    """Names every call line may use (hostile inputs included)."""
    self_list = [1.0]
    self_list.append(self_list)
    deep = 1.0
    for _ in range(300_000):
        deep = [deep]
    self_dict = {}
    self_dict["me"] = self_dict

    class NotAnArray:
        """Has none of the protocols arrays are made from."""

    class BadIndex:
        def __index__(self):
            raise ZeroDivisionError("lying __index__")

    class BadLen(list):
        def __len__(self):
            return 10**12

    return {
        "fx": fx, "np": np, "SELF_LIST": self_list, "DEEP_LIST": deep, "SELF_DICT": self_dict,
        "NotAnArray": NotAnArray, "BadIndex": BadIndex, "BadLen": BadLen,
    }  # fmt: skip


def run_line(src: str, ns: dict):
    """Runs a call line: statements joined by ';;', the last an expression."""
    parts = [p.strip() for p in src.split(";;")]
    local = dict(ns)
    for stmt in parts[:-1]:
        exec(compile(stmt, "<fuzz>", "exec"), local)
    return eval(compile(parts[-1], "<fuzz>", "eval"), local)


def classify(exc: BaseException) -> str:
    """'panic', 'user' (raised by the call's own lambdas), 'allowed' or 'unexpected'."""
    name = type(exc).__name__
    if name == "PanicException" or (isinstance(exc, RuntimeError) and PANIC_MARK in str(exc)):
        return "panic"
    if isinstance(exc, ALLOWED):
        return "allowed"
    # Raised by code the call supplies (a lambda passed to a transform, a
    # hostile object's lying __index__), not by ferrox: the user's own error.
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and frames[-1].filename == "<fuzz>" and frames[-1].name != "<module>":
        return "user"
    if frames and frames[-1].filename == __file__ and frames[-1].name in ("__index__", "__len__"):
        return "user"
    return "unexpected"


def materialize(r, lib, np, depth=0):
    """A comparable, framework-neutral form of a result (evaluates arrays)."""
    if depth > 20:
        return ("deep",)
    if isinstance(r, lib.array):
        dtype = str(r.dtype).split(".")[-1]
        if r.size > BIG:
            return ("array", tuple(r.shape), dtype, None)
        data = np.array(r.astype(lib.float32)) if dtype == "bfloat16" else np.array(r)
        return ("array", tuple(r.shape), dtype, data)
    if isinstance(r, (list, tuple)):
        return (type(r).__name__, [materialize(x, lib, np, depth + 1) for x in r])
    if isinstance(r, dict):
        return ("dict", {k: materialize(v, lib, np, depth + 1) for k, v in r.items()})
    if isinstance(r, (bool, int, float, complex, str)) or r is None:
        return ("py", r)
    if isinstance(r, (lib.Dtype, lib.DtypeCategory)):
        return ("dtype", str(r).split(".")[-1])
    if isinstance(r, np.ndarray):
        return ("ndarray", r.shape, str(r.dtype), r)
    if callable(r):
        return ("callable",)
    text = str(r).replace("mlx.core", "ferrox")
    # Objects without a value of their own (e.g. `a.at`) compare by type.
    return ("other", type(r).__name__, re.sub(r" object at 0x[0-9a-f]+", " object", text))


def _arrays_differ(np, dtype, a, b, loose=1.0):
    """Why two arrays of one dtype differ, or None. Inexact values compare
    with the dtype's relative tolerance times `loose`, and an absolute one
    of a hundredth of it times the largest magnitude (at least 1), since
    sums that cancel keep only their absolute accuracy."""
    if a.shape != b.shape:
        return f"values shape {a.shape} vs {b.shape}"
    if a.size == 0:
        return None
    if dtype in TOLERANCE:
        rt = TOLERANCE[dtype] * loose
        a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
        # A complex NaN is NaN whichever part holds it (reductions may pick
        # different NaN elements).
        both_nan = np.isnan(a64) & np.isnan(b64)
        a64, b64 = np.where(both_nan, 0, a64), np.where(both_nan, 0, b64)
        finite = np.isfinite(b64)
        scale = max(float(np.max(np.abs(b64[finite]), initial=0.0)), 1.0)
        for part in (np.real, np.imag):
            pa, pb = part(a64), part(b64)
            close = np.isclose(pa, pb, rtol=rt, atol=rt * scale * 1e-2, equal_nan=True)
            if not close.all():
                i = np.argwhere(~close)[0]
                return f"value at {tuple(i)}: {a[tuple(i)]!r} vs {b[tuple(i)]!r}"
        return None
    inexact = a.dtype.kind in "fc"
    if not np.array_equal(a, b, equal_nan=inexact):
        i = np.argwhere((a != b) & ~(np.isnan(a) & np.isnan(b)) if inexact else a != b)[0]
        return f"value at {tuple(i)}: {a[tuple(i)]!r} vs {b[tuple(i)]!r}"
    return None


def looseness(src):
    """How much to widen the tolerance for a call: derivatives are formulas
    like 1 - tanh(x)^2 whose cancellation turns a one-ulp difference in a
    half-precision forward value into a percent."""
    return 8.0 if any(t in src for t in ("grad", "vjp", "jvp")) else 1.0


TRANSCENDENTAL = ("exp", "log", "sin", "cos", "tan", "sigmoid", "sqrt", "power", "**", "erf", "degrees", "radians")
INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_")


# Ops whose output order MLX leaves unspecified: compared as multisets.
UNORDERED = re.compile(r"\b(topk|partition|argpartition)\(")


def as_multiset(r, np):
    """A materialized array result with its values sorted (flattened), so
    results that differ only in the order MLX leaves open compare equal."""
    if r[0] != "array" or r[3] is None:
        return r
    return ("array", r[1], r[2], np.sort(r[3].ravel()))


def known_difference(src, why):
    """Why a disagreement with MLX is deliberate (ferrox follows NumPy where
    MLX is wrong), or None. Each entry is documented in docs/fuzzing.md."""
    if "float64" in src and any(f in src for f in TRANSCENDENTAL) and "float64" in why:
        return "float64 functions computed in float64 (MLX's CPU build uses float32 precision)"
    if re.search(r"\b(to_fp8|from_fp8)\(", src) and "float64" in src:
        return "fp8 conversions of float64 convert the values (MLX's CPU build reads the float64 buffer as float32)"
    if "uint32" in src and "np.inf" in src:
        return "float to uint32 beyond int32's range is undefined in C (MLX's result depends on vectorization)"
    if re.search(r"\b(bitwise_)?(left_shift|right_shift)\(|<<|>>", src) and "value at" in why:
        return "shifts by a negative count or by the width or more are undefined in C (MLX's result depends on vectorization)"
    if "prod" in src and re.search(r": np\.\w+\(1(\.0)?(\+0j)?\) vs np\.\w+\(0(\.0)?j?\)", why):
        return "the product of no elements is 1 (MLX gives 0 for some empty inputs)"
    if "logsumexp" in src and any(d in src for d in INTEGER_DTYPES):
        return "logsumexp of integers computes in float32 (MLX subtracts the maximum in the integer dtype)"
    if re.search(r"\b(var|std)\(", src) and any(d in src for d in INTEGER_DTYPES) and "value at" in why:
        return "var/std subtract the mean before squaring (MLX's mean(x**2) - mean(x)**2 cancels for large integers)"
    if "softmax" in src and ".T" in src and any(d in src for d in INTEGER_DTYPES) and "float32 vs" in why:
        return "softmax of integers over several axes of a transposed view computes in float32 (MLX's result dtype depends on the memory layout)"
    if "softmax" in src and any(d in src for d in INTEGER_DTYPES):
        return "softmax of integers computes in float32 (MLX subtracts the maximum in the integer dtype, which wraps)"
    if re.search(r"\b(divmod|floor_divide|remainder)\(|//|%", src) and "bool_" in src and "value at" in why:
        return "bool division by False is undefined in C (ferrox gives False and the dividend as remainder, MLX True)"
    if re.search(r"\b(divmod|floor_divide)\(|//", src) and ("float16" in src or "bfloat16" in src) and "value at" in why:
        return "floor division of half-precision floats floors the exact quotient, as NumPy (MLX floors the quotient rounded to the half type)"
    if re.search(r"\ball\(|\.all\(", src) and re.search(r"\(0,|, 0[,)]", src) and "True_ vs" in why:
        return "all() of an empty array is True (MLX gives False for some empty views)"
    if any(r in src for r in ("sum", "mean")) and ("float16" in src or "bfloat16" in src):
        return "half-precision sums accumulate in float32 (MLX's CPU accumulates some in the input dtype)"
    if "linalg." in src and re.search(r"np\.(inf|nan)|1e30", src) and "value at" in why:
        return "linalg factorizations of non-finite matrices are undefined (LAPACK and faer leave different NaNs)"
    signs = re.search(r": np\.\w+\((-?[\d.e+-]+)\) vs np\.\w+\((-?[\d.e+-]+)\)$", why)
    if re.search(r"linalg\.(svd|eigh|eig|qr)\(", src) and signs:
        ours, theirs = (float(v) for v in signs.groups())
        if abs(ours + theirs) <= 1e-3 * max(abs(ours), 1e-30):
            return "singular vectors and eigenvectors are unique up to sign (faer and LAPACK pick different signs)"
    values = re.search(r": (np\.\w+\(.*\)) vs (np\.\w+\(.*\))$", why)
    if values:
        ours, theirs = values.groups()
        def finite(v):
            return "inf" not in v and "nan" not in v

        if "prod" in src and finite(ours) != finite(theirs):
            return "a product whose partial products overflow in one order of the factors and not in another"
        contraction = any(c in src for c in ("matmul", "@", "inner(", "tensordot(", "einsum("))
        if contraction and "complex" in ours and "nan" in ours and "inf" in theirs:
            return "complex matmul with infinite inputs gives NaN, as NumPy's (MLX recovers infinities)"
        if "complex" in ours and "nan" not in ours and "inf" in ours and "nan" in theirs:
            return "a complex product that overflows float32 only in an intermediate term: ferrox multiplies in float64 and rounds once (MLX's float32 arithmetic gives inf - inf = NaN)"
        if re.search(r"\*\*|\bpower\(", src) and "complex" in ours and finite(ours) and finite(theirs):
            return "complex powers are computed in float64 and rounded once (MLX's float32 e^(b ln a) magnifies the rounding of ln a by the exponent)"
        if "complex" in ours and "nan" not in ours + theirs and ours.count("inf") == 2 == theirs.count("inf"):
            return "the phase of an overflowing complex result (cos and sin of a huge argument) hangs on the last ulp"
    return None


def compare(np, x, y, loose=1.0):
    """Why two materialized results differ, or None (`loose` scales the
    tolerance of inexact values)."""
    if x[0] != y[0]:
        return f"kind {x[0]} vs {y[0]}"
    kind = x[0]
    if kind == "array":
        if x[1] != y[1] or x[2] != y[2]:
            return f"array shape/dtype {x[1]} {x[2]} vs {y[1]} {y[2]}"
        if x[3] is None or y[3] is None:
            return None
        return _arrays_differ(np, x[2], x[3], y[3], loose)
    if kind in ("list", "tuple"):
        if len(x[1]) != len(y[1]):
            return f"{kind} length {len(x[1])} vs {len(y[1])}"
        for i, (a, b) in enumerate(zip(x[1], y[1])):
            why = compare(np, a, b, loose)
            if why:
                return f"[{i}] {why}"
        return None
    if kind == "dict":
        # ferrox may report more than MLX (device_info adds total_memory):
        # every key MLX gives must be there, with an equal value.
        missing = y[1].keys() - x[1].keys()
        if missing:
            return f"dict lacks MLX's keys {sorted(missing)}"
        for k in y[1]:
            why = compare(np, x[1][k], y[1][k], loose)
            if why:
                return f"[{k!r}] {why}"
        return None
    if kind == "py":
        a, b = x[1], y[1]
        if isinstance(a, (float, complex)) and isinstance(b, (float, complex)):
            if np.isclose(complex(a), complex(b), rtol=2e-5, equal_nan=True) or str(a) == str(b):
                return None
        if type(a) is not type(b):
            return f"python {type(a).__name__} vs {type(b).__name__}"
        if isinstance(a, float) and abs(a - b) <= 2e-5 * max(abs(a), abs(b)):
            return None
        if isinstance(a, str):
            return None if a.replace("mlx.core", "ferrox") == b.replace("mlx.core", "ferrox") else f"{a!r} vs {b!r}"
        return None if a == b else f"{a!r} vs {b!r}"
    if kind == "ndarray":
        if x[1] != y[1] or x[2] != y[2]:
            return f"ndarray {x[1]} {x[2]} vs {y[1]} {y[2]}"
        return _arrays_differ(np, x[2], x[3], y[3], loose)
    return None if x == y else f"{x!r} vs {y!r}"


class Worker:
    def __init__(self):
        limit = int(float(os.environ.get("FUZZ_MEMORY_GB", "6")) * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        sys.setrecursionlimit(10_000)
        warnings.filterwarnings("ignore")
        import numpy as np

        import ferrox as fx

        from .targets import Targets

        self.np, self.fx = np, fx
        self.targets = Targets()
        self.ns = _setup_namespace(fx, np)
        try:
            import mlx.core as mx

            self.mx = mx
            self.mx_ns = dict(self.ns, mx=mx, fx=mx)
        except ImportError:
            self.mx = None
        self.device = fx.default_device()
        self.memory_limit = fx.set_memory_limit(1 << 62)
        fx.set_memory_limit(self.memory_limit)
        self.stream = fx.default_stream(self.device)
        self.cache_limit = fx.set_cache_limit(1 << 62)
        fx.set_cache_limit(self.cache_limit)
        self.out = sys.stdout

    def send(self, tag, payload=""):
        self.out.write(f"{tag} {payload}\n")
        self.out.flush()

    def restore(self):
        """Puts back process-wide settings a call may have changed."""
        fx = self.fx
        fx.set_default_stream(self.stream)
        fx.set_default_device(self.device)
        fx.set_memory_limit(self.memory_limit)
        fx.set_cache_limit(self.cache_limit)
        fx.set_printoptions()
        if self.mx is not None:
            self.mx.set_printoptions()

    def one(self, index, call, counts):
        self.send("B", f"{index} huge" if is_huge(call.src) else str(index))
        np = self.np
        record = {"i": index, "target": call.target}
        fx_result = None
        try:
            r = run_line(call.src, self.ns)
            fx_result = materialize(r, self.fx, np)
            if isinstance(r, self.fx.array) and r.size <= 10_000:
                repr(r)
            counts["ok"] += 1
            record["outcome"] = "ok"
        except BaseException as e:  # noqa: BLE001  (everything is counted)
            if isinstance(e, KeyboardInterrupt):
                raise
            kind = classify(e)
            name = type(e).__name__
            counts["exc:" + name] += 1
            record.update(outcome="exc", exc=name, kind=kind)
            if kind in ("panic", "unexpected"):
                counts[kind] += 1
                record["msg"] = f"{name}: {str(e)[:300]}"
                self.send("X", json.dumps(dict(record, src=call.src)))
        finally:
            self.restore()
        if call.hostile or self.mx is None or any(m in call.src for m in NO_ORACLE) or MLX_CRASHES.search(call.src):
            return
        if fx_result is not None and fx_result[0] == "array" and fx_result[3] is None:
            return
        self.send("P", str(index))
        try:
            mx_result = materialize(run_line(call.src.replace("fx.", "mx."), self.mx_ns), self.mx, np)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            if isinstance(e, AttributeError) and "mlx" in str(e):
                return  # MLX lacks the name
            mx_result = ("exc", type(e).__name__)
        if fx_result is None and mx_result[0] == "exc":
            counts["oracle:both_raise"] += 1
            if record["exc"] != mx_result[1]:
                counts["oracle:exception_class_differs"] += 1
        elif fx_result is None:
            counts["oracle:ferrox_rejects"] += 1
            self.send("X", json.dumps(dict(record, src=call.src, oracle="ferrox_rejects")))
        elif mx_result[0] == "exc":
            counts["oracle:mlx_rejects"] += 1
            self.send("X", json.dumps(dict(record, src=call.src, oracle="mlx_rejects", msg=mx_result[1])))
        else:
            if UNORDERED.search(call.src):
                fx_result, mx_result = as_multiset(fx_result, np), as_multiset(mx_result, np)
            why = compare(np, fx_result, mx_result, looseness(call.src))
            known = why and known_difference(call.src, why)
            if known:
                counts["oracle:known_difference"] += 1
            elif why:
                counts["oracle:mismatch"] += 1
                self.send("X", json.dumps(dict(record, src=call.src, oracle="mismatch", msg=why[:300])))
            else:
                counts["oracle:match"] += 1

    def serve(self):
        from .targets import Call
        from .values import Gen

        for line in sys.stdin:
            cmd, _, rest = line.strip().partition(" ")
            counts = Counter()
            if cmd == "RUN":
                seed, start, count = (int(v) for v in rest.split())
                for i in range(start, start + count):
                    call = self.targets.call(Gen(f"{seed}:{i}"))
                    counts["calls"] += 1
                    self.one(i, call, counts)
                    if counts["calls"] == 20:
                        # Report often: a crash loses only what was not reported.
                        self.send("S", json.dumps(counts))
                        counts = Counter()
            elif cmd in ("LINE", "COMPARE"):
                # A replayed line; COMPARE also asks MLX (as a seeded call would).
                counts["calls"] += 1
                self.one(0, Call(json.loads(rest), cmd == "LINE", "replay"), counts)
            elif cmd == "QUIT":
                return
            self.send("S", json.dumps(counts))
            self.send("DONE")


if __name__ == "__main__":
    # Calls of load/save/savez... with fuzzed names write files: keep them
    # in a scratch directory, not the caller's working tree.
    import tempfile

    os.chdir(tempfile.mkdtemp(prefix="ferrox-fuzz-"))
    Worker().serve()
