"""The op registry: one entry per elementwise op (PyTorch's OpInfo practice).

Each entry names the ferrox function, its NumPy (float64/complex128)
reference, the dtypes it accepts, how its result dtype follows from the
input's, the sample values it needs (a domain), whether it is
differentiable and whether `ferrox.array` has it as a method. One
parametrized suite (test_opinfo.py) runs every entry on every device:
values over dtypes and memory layouts, the result dtype, agreement with
MLX where MLX is installed (edge values included), gradients against
finite differences, vmap against a loop, the method form, and the errors
for refused dtypes. A new elementwise op is tested by adding one entry.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from conftest import ALL_DTYPES, FLOATS, INTS, UNSIGNED

INEXACT = FLOATS + ["complex64"]
NO_BOOL = [d for d in ALL_DTYPES if d != "bool_"]
NO_COMPLEX = [d for d in ALL_DTYPES if d != "complex64"]
BITS = ["bool_"] + INTS


def _vectorize(f, otype=np.float64):
    return np.vectorize(f, otypes=[otype])


def _erfinv(y):
    """Inverse error function in float64 by Newton steps on math.erf."""
    if y <= -1.0:
        return -math.inf if y == -1.0 else math.nan
    if y >= 1.0:
        return math.inf if y == 1.0 else math.nan
    x = 0.0
    for _ in range(100):
        step = (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) < 1e-17 * max(1.0, abs(x)):
            break
    return x


def _sign(x):
    if np.iscomplexobj(x):
        r = np.abs(x)
        return np.where(r == 0, 0, x / np.where(r == 0, 1, r))
    return np.sign(x)


def _round_parts(f):
    """A rounding function applied to the real and imaginary parts."""

    def g(x):
        if np.iscomplexobj(x):
            return f(x.real) + 1j * f(x.imag)
        return f(x)

    return g


def _power(a, b):
    """NumPy's power, with std::pow's e^(b ln a) for complex (so 0^0 is NaN, as MLX)."""
    if np.iscomplexobj(a):
        with np.errstate(all="ignore"):
            return np.exp(b * np.log(a))
    return np.power(a, b)


def _logaddexp(a, b):
    """NumPy's logaddexp; for complex, MLX's formula hi + log1p(e^(lo - hi))
    with its lexicographic maximum and minimum."""
    if not np.iscomplexobj(a):
        return np.logaddexp(a, b)
    a, b = np.broadcast_arrays(a, b)
    a_first = (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag)) | np.isnan(a)
    hi, lo = np.where(a_first, a, b), np.where(a_first, b, a)
    with np.errstate(all="ignore"):
        out = hi + np.log1p(np.exp(lo - hi))
    keep = (lo == complex(-np.inf, 0)) | (hi.real == np.inf)
    return np.where(keep, hi, out)


@dataclass
class OpInfo:
    """How to test one op.

    result: "same" (the input's dtype), "float" (at least float32),
    "bool", or "magnitude" (float32 for complex64, else the input's).
    domain: sample kind for `samples` (see opinfo.samples).
    ulps: allowed error for float32 results, in units in the last place
    of the float64 reference (half precision gets the rounding of one
    float32 result on top).
    """

    name: str
    ref: object
    dtypes: list
    arity: int = 1
    result: str = "same"
    domain: str = "normal"
    grad: bool = False
    method: bool = False
    ulps: float = 2.0
    # accepted dtypes NumPy has no matching semantics for (bool arithmetic,
    # complex rounding): checked against MLX and across devices instead
    no_numpy: list = field(default_factory=list)

    def __repr__(self):
        return self.name

    def result_dtype(self, d):
        if self.result == "bool":
            return "bool_"
        if self.result == "float":
            return "float32" if d in INTS or d == "bool_" else d
        if self.result == "magnitude":
            return "float32" if d == "complex64" else d
        return d

    def numpy_dtypes(self):
        return [d for d in self.dtypes if d not in self.no_numpy]

    def refused(self):
        return [d for d in ALL_DTYPES if d not in self.dtypes]


OPS = [
    # ---- unary ----
    OpInfo("abs", np.abs, ALL_DTYPES, result="magnitude", grad=True, method=True),
    OpInfo("negative", np.negative, NO_BOOL, grad=True),
    OpInfo("sign", _sign, ALL_DTYPES, no_numpy=["bool_"]),
    OpInfo("square", np.square, ALL_DTYPES, grad=True, method=True),
    OpInfo("floor", _round_parts(np.floor), NO_COMPLEX),
    OpInfo("ceil", _round_parts(np.ceil), NO_COMPLEX),
    OpInfo("trunc", _round_parts(np.trunc), NO_COMPLEX),
    OpInfo("round", _round_parts(np.round), ALL_DTYPES, method=True),
    OpInfo("imag", lambda x: np.imag(x) if np.iscomplexobj(x) else np.zeros_like(x), ALL_DTYPES,
           result="magnitude"),
    OpInfo("conj", np.conj, ALL_DTYPES, method=True),
    OpInfo("exp", np.exp, ALL_DTYPES, result="float", grad=True, method=True),
    OpInfo("expm1", np.expm1, NO_COMPLEX, result="float", grad=True),
    OpInfo("log", np.log, ALL_DTYPES, result="float", domain="positive", grad=True, method=True),
    OpInfo("log1p", np.log1p, ALL_DTYPES, result="float", domain="positive", grad=True, method=True),
    OpInfo("log2", np.log2, ALL_DTYPES, result="float", domain="positive", grad=True, method=True),
    OpInfo("log10", np.log10, ALL_DTYPES, result="float", domain="positive", grad=True, method=True),
    OpInfo("sqrt", np.sqrt, ALL_DTYPES, result="float", domain="positive", grad=True, method=True),
    OpInfo("rsqrt", lambda x: 1.0 / np.sqrt(x), ALL_DTYPES, result="float", domain="positive", grad=True,
           method=True),
    OpInfo("sin", np.sin, ALL_DTYPES, result="float", grad=True, method=True),
    OpInfo("cos", np.cos, ALL_DTYPES, result="float", grad=True, method=True),
    OpInfo("tan", np.tan, ALL_DTYPES, result="float", domain="small", grad=True),
    OpInfo("arcsin", np.arcsin, ALL_DTYPES, result="float", domain="unit", grad=True),
    OpInfo("arccos", np.arccos, ALL_DTYPES, result="float", domain="unit", grad=True),
    OpInfo("arctan", np.arctan, ALL_DTYPES, result="float", grad=True),
    OpInfo("sinh", np.sinh, ALL_DTYPES, result="float", domain="small", grad=True),
    OpInfo("cosh", np.cosh, ALL_DTYPES, result="float", domain="small", grad=True),
    OpInfo("tanh", np.tanh, ALL_DTYPES, result="float", grad=True),
    OpInfo("arcsinh", np.arcsinh, ALL_DTYPES, result="float", grad=True),
    OpInfo("arccosh", np.arccosh, ALL_DTYPES, result="float", domain="above_one", grad=True),
    OpInfo("arctanh", np.arctanh, ALL_DTYPES, result="float", domain="unit", grad=True),
    OpInfo("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), NO_COMPLEX, result="float", grad=True),
    OpInfo("erf", _vectorize(math.erf), NO_COMPLEX, result="float", grad=True),
    OpInfo("erfinv", _vectorize(_erfinv), NO_COMPLEX, result="float", domain="unit", grad=True,
           ulps=4.0),
    OpInfo("isnan", np.isnan, ALL_DTYPES, result="bool"),
    OpInfo("isinf", np.isinf, ALL_DTYPES, result="bool"),
    OpInfo("isfinite", np.isfinite, ALL_DTYPES, result="bool"),
    OpInfo("isposinf", lambda x: np.isposinf(x.real) & (x.imag == 0) if np.iscomplexobj(x) else np.isposinf(x),
           ALL_DTYPES, result="bool"),
    OpInfo("isneginf", lambda x: np.isneginf(x.real) & (x.imag == 0) if np.iscomplexobj(x) else np.isneginf(x),
           ALL_DTYPES, result="bool"),
    OpInfo("logical_not", lambda x: x == 0, ALL_DTYPES, result="bool"),
    OpInfo("bitwise_invert", np.invert, BITS),
    OpInfo("reciprocal", lambda x: 1.0 / x, ALL_DTYPES, result="float", domain="nonzero", grad=True,
           method=True),
    OpInfo("real", np.real, ALL_DTYPES, result="magnitude"),
    OpInfo("positive", lambda x: x, ALL_DTYPES),
    OpInfo("degrees", np.degrees, ALL_DTYPES, result="float", grad=True, no_numpy=["complex64"]),
    OpInfo("radians", np.radians, ALL_DTYPES, result="float", grad=True, no_numpy=["complex64"]),
    # ---- binary ----
    OpInfo("add", np.add, ALL_DTYPES, arity=2, grad=True),
    OpInfo("subtract", np.subtract, ALL_DTYPES, arity=2, grad=True, no_numpy=["bool_"]),
    OpInfo("multiply", np.multiply, ALL_DTYPES, arity=2, grad=True),
    OpInfo("divide", np.divide, ALL_DTYPES, arity=2, result="float", domain="nonzero", grad=True),
    OpInfo("power", _power, ALL_DTYPES, arity=2, domain="power", grad=True, ulps=4.0, no_numpy=["bool_"]),
    OpInfo("maximum", np.maximum, ALL_DTYPES, arity=2, grad=True, no_numpy=["complex64"]),
    OpInfo("minimum", np.minimum, ALL_DTYPES, arity=2, grad=True, no_numpy=["complex64"]),
    OpInfo("remainder", np.remainder, NO_COMPLEX, arity=2, domain="nonzero", no_numpy=["bool_"]),
    OpInfo("floor_divide", np.floor_divide, ALL_DTYPES, arity=2, domain="nonzero",
           no_numpy=["bool_", "complex64"]),
    OpInfo("logaddexp", _logaddexp, ALL_DTYPES, arity=2, result="float", grad=True),
    OpInfo("arctan2", np.arctan2, NO_COMPLEX, arity=2, result="float", domain="nonzero", grad=True),
    OpInfo("equal", np.equal, ALL_DTYPES, arity=2, result="bool"),
    OpInfo("not_equal", np.not_equal, ALL_DTYPES, arity=2, result="bool"),
    OpInfo("less", np.less, ALL_DTYPES, arity=2, result="bool", no_numpy=["complex64"]),
    OpInfo("less_equal", np.less_equal, ALL_DTYPES, arity=2, result="bool", no_numpy=["complex64"]),
    OpInfo("greater", np.greater, ALL_DTYPES, arity=2, result="bool", no_numpy=["complex64"]),
    OpInfo("greater_equal", np.greater_equal, ALL_DTYPES, arity=2, result="bool", no_numpy=["complex64"]),
    OpInfo("bitwise_and", np.bitwise_and, BITS, arity=2),
    OpInfo("bitwise_or", np.bitwise_or, BITS, arity=2),
    OpInfo("bitwise_xor", np.bitwise_xor, BITS, arity=2),
    OpInfo("left_shift", np.left_shift, BITS, arity=2, domain="shift", no_numpy=["bool_"]),
    OpInfo("right_shift", np.right_shift, BITS, arity=2, domain="shift", no_numpy=["bool_"]),
    OpInfo("logical_and", np.logical_and, ALL_DTYPES, arity=2, result="bool"),
    OpInfo("logical_or", np.logical_or, ALL_DTYPES, arity=2, result="bool"),
    OpInfo("logical_xor", np.logical_xor, ALL_DTYPES, arity=2, result="bool"),
]

BY_NAME = {op.name: op for op in OPS}

# Values every float dtype must get right (compared with MLX): signed
# zeros, infinities, NaN, tiny and huge magnitudes, halves for rounding.
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, math.inf, -math.inf, math.nan,
               1e-30, -1e-30, 1e30, -1e30, 0.999, -0.999, 88.0, -88.0, 3.0, 100.0]


def samples(rng, shape, name, domain, arg=0):
    """NumPy data for one operand, exactly representable in dtype `name`,
    inside the op's domain (arg is the operand's position)."""
    from conftest import rand

    if domain == "power":
        if arg == 1:
            return rand(rng, shape, name, "exponent")
        return rand(rng, shape, name, "positive" if name in INEXACT else "small")
    if domain == "shift":
        if arg == 0:
            return rand(rng, shape, name, "normal" if name not in UNSIGNED else "small")
        bits = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16}.get(name, 32)
        return rng.integers(0, bits, size=shape).astype(np.dtype(name))
    if domain == "nonzero" and arg == 0:
        return rand(rng, shape, name, "normal")
    if name in INEXACT and domain in ("unit", "above_one", "small"):
        lo, hi = {"unit": (-0.95, 0.95), "above_one": (1.05, 4.0), "small": (-1.4, 1.4)}[domain]
        v = rng.uniform(lo, hi, size=shape)
        if name == "complex64":
            v = v + 1j * rng.uniform(-0.3, 0.3, size=shape)
        return _exact(v, name)
    if name in INTS + ["bool_"] and domain in ("unit", "above_one", "small"):
        base = {"unit": (0, 1), "above_one": (1, 4), "small": (-1, 2)}[domain]
        lo = 0 if name in UNSIGNED or name == "bool_" else base[0]
        v = rng.integers(max(lo, base[0]), base[1], size=shape)
        return v.astype(np.bool_) if name == "bool_" else v.astype(np.dtype(name))
    return rand(rng, shape, name, domain)


def _exact(v, name):
    from conftest import NP, round_bf16

    if name == "bfloat16":
        return round_bf16(v.astype(np.float32))
    return v.astype(NP[name])
