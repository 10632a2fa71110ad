"""Argument generators for the fuzz harness.

Every generator returns a :class:`Value`: Python *source* for the argument
(so that a call is one replayable line, and the same line runs against MLX by
renaming ``fx.`` to ``mx.``) and whether the value is hostile (outside what
the parameter accepts; such calls are expected to raise and are not compared
with MLX).

Values are small (at most a few hundred elements) so that a million calls
fit in minutes; hostile values include sizes far beyond memory, which must
fail fast. Random data is produced inside the source by
``np.random.default_rng(seed)``, so the data is identical for both
frameworks and in a replay.
"""

import random
from dataclasses import dataclass

DTYPES = [
    "bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64",
]  # fmt: skip
INTS = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

# Python integers around every boundary an implementation might get wrong.
EDGE_INTS = [
    0, 1, -1, 2, 3, 7, 127, 128, 255, 256, -128, -129, 2**15, 2**16, 2**31 - 1, 2**31, -(2**31) - 1,
    2**32, 2**53 + 1, 2**62, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**100, -(2**100),
]  # fmt: skip
EDGE_FLOATS = ["0.0", "-0.0", "0.5", "1.5", "-2.5", "1e-45", "1e30", "-1e30", "1e308", "float('inf')",
               "float('-inf')", "float('nan')", "65504.0", "3.4e38"]  # fmt: skip

# Names bound in the worker's namespace before any call (see worker.py).
HOSTILE_NAMES = ["SELF_LIST", "DEEP_LIST", "SELF_DICT", "object()", "lambda: 0", "{1, 2}", "range(3)",
                 "'float32'", "b'abc'", "bytearray(b'ab')", "None", "...", "slice(None)", "print",
                 "np.array(['a', 'b'])", "np.datetime64('2020-01-01')", "np.array([1, 2], dtype=object)",
                 "np.float64(1.5)", "np.int64(2**40)", "np.zeros((2, 0, 3))", "[[1], [2, 3]]", "[None]",
                 "[[]]", "()", "{}", "{'a': 1}", "1j", "fx.float32", "fx.cpu", "fx.array", "NotAnArray()",
                 "[fx.array(1.0), [2.0]]", "BadIndex()", "BadLen()",
                 "np.broadcast_to(np.float32(0), (2**36,))", "np.arange(4).astype('>i4')",
                 "np.arange(6.0).reshape(2, 3).T", "np.float32(2.5)"]  # fmt: skip


# Sources of lazily huge arrays (broadcast views of up to 2**40 elements).
HUGE_MARKERS = ("(2**40,)", "(2**20, 2**20)", "(2**30, 2)")


@dataclass
class Value:
    """Source of one argument, and whether it is deliberately invalid."""

    src: str
    hostile: bool = False


class Gen:
    """Random argument sources; deterministic for a given seed."""

    def __init__(self, seed: int, hostile_rate: float = 0.15):
        self.r = random.Random(seed)
        self.hostile_rate = hostile_rate

    # ------------------------------------------------------------------ basics

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq):
        return self.r.choice(seq)

    def hostile(self) -> Value:
        """Anything at all: wrong types, cycles, absurd sizes."""
        kind = self.r.random()
        if kind < 0.5:
            return Value(self.pick(HOSTILE_NAMES), True)
        if kind < 0.7:
            return Value(repr(self.pick(EDGE_INTS)), True)
        if kind < 0.85:
            return Value(self.pick(EDGE_FLOATS), True)
        return Value(self.huge_array().src, True)

    def maybe_hostile(self, make) -> Value:
        return self.hostile() if self.chance(self.hostile_rate) else make()

    # ------------------------------------------------------------------ shapes

    def small_shape(self, max_ndim: int = 4) -> tuple:
        ndim = self.pick([0, 1, 1, 2, 2, 2, 3, 3, 4][: max_ndim * 2 + 1])
        return tuple(self.pick([0, 1, 1, 2, 3, 4, 5]) if self.chance(0.1) else self.pick([1, 2, 3, 4, 5])
                     for _ in range(ndim))  # fmt: skip

    def shape(self) -> Value:
        """A shape argument: usually small and valid, sometimes absurd."""
        x = self.r.random()
        if x < 0.75:
            s = self.small_shape()
            if len(s) == 1 and self.chance(0.3):
                return Value(repr(s[0]))
            return Value(repr(list(s)) if self.chance(0.2) else repr(s))
        bad = [
            "(-1,)", "(2, -3)", "(2**32, 2**32)", "(2**62,)", "(2**63,)", "(2**64,)", "(0, 2**62)",
            "(2**31, 2**31, 0)", "(1,) * 100", "(1,) * 3000", "(2.5,)", "('a',)", "((2,),)", "[[2, 3]]",
            "None", "-1", "2**40", "(2**20, 2**20)",
        ]  # fmt: skip
        return Value(self.pick(bad), True)

    # ------------------------------------------------------------------ arrays

    def data_src(self, shape: tuple, dtype: str) -> str:
        """NumPy source for random data of `shape` that holds `dtype`'s values."""
        seed = self.r.randrange(10**6)
        rng = f"np.random.default_rng({seed})"
        special = self.chance(0.15)
        if dtype == "bool_":
            return f"({rng}.random({shape!r}) < 0.5)"
        if dtype in INTS:
            if special:
                info = "np.iinfo(np.%s)" % dtype
                return f"{rng}.choice(np.array([{info}.min, {info}.max, 0, 1], dtype=np.{dtype}), {shape!r})"
            lo = 0 if dtype.startswith("u") else -9
            return f"{rng}.integers({lo}, 10, {shape!r}).astype(np.{dtype})"
        np_dtype = {"bfloat16": "float32", "complex64": "complex64"}.get(dtype, dtype)
        if special:
            vals = "[np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e30, 5e-41]"
            base = f"{rng}.choice(np.array({vals}), {shape!r})"
            if dtype == "complex64":
                return f"({base} + 1j * {rng}.choice(np.array({vals}), {shape!r})).astype(np.complex64)"
            return f"{base}.astype(np.{np_dtype})"
        if dtype == "complex64":
            return f"({rng}.standard_normal({shape!r}) + 1j * {rng}.standard_normal({shape!r})).astype(np.complex64)"
        return f"{rng}.standard_normal({shape!r}).astype(np.{np_dtype})"

    def array(self, dtype: str = None, shape: tuple = None, float_only: bool = False) -> Value:
        """A ferrox array (or NumPy array) of some dtype and layout."""
        if dtype is None:
            dtype = self.pick(FLOATS + ["float32"] * 3 if float_only else DTYPES + ["float32", "int32"] * 2)
        if shape is None:
            shape = self.small_shape()
        layout = self.pick(["plain"] * 4 + ["transposed", "sliced", "reversed", "broadcast", "numpy", "scalar"])
        if layout == "scalar":
            return self.python_scalar(dtype)
        if layout == "transposed" and len(shape) >= 2:
            src = f"fx.array({self.data_src(shape[::-1], dtype)}, dtype=fx.{dtype}).T"
        elif layout == "sliced" and shape:
            big = (shape[0] * 2,) + shape[1:]
            src = f"fx.array({self.data_src(big, dtype)}, dtype=fx.{dtype})[::2]"
        elif layout == "reversed" and shape:
            src = f"fx.array({self.data_src(shape, dtype)}, dtype=fx.{dtype})[::-1]"
        elif layout == "broadcast" and shape:
            one = (1,) + shape[1:]
            src = f"fx.broadcast_to(fx.array({self.data_src(one, dtype)}, dtype=fx.{dtype}), {shape!r})"
        elif layout == "numpy" and dtype != "bfloat16":
            view = self.pick(["", "[::-1]", ".T", "[..., ::2]" if shape else ""])
            if shape and view == "[..., ::2]":
                shape = shape[:-1] + (shape[-1] * 2,)
            src = f"{self.data_src(shape, dtype)}{view}"
        else:
            src = f"fx.array({self.data_src(shape, dtype)}, dtype=fx.{dtype})"
        return Value(src)

    def python_scalar(self, dtype: str = None) -> Value:
        kind = dtype or self.pick(DTYPES)
        if kind == "bool_":
            return Value(self.pick(["True", "False"]))
        if kind in INTS:
            return Value(repr(self.pick([0, 1, 2, -1, 3, 7, -5, 100])))
        if kind == "complex64":
            return Value(self.pick(["1j", "(2-0.5j)", "complex(0, 0)"]))
        return Value(self.pick(["0.5", "-1.5", "2.0", "0.0", "3.25"]))

    def huge_array(self) -> Value:
        # (NumPy views too large to copy are among the hostile names.)
        """A lazily huge array: a broadcast view or a creation too big for memory."""
        return Value(self.pick([
            "fx.broadcast_to(fx.array(1.0), (2**40,))",
            "fx.broadcast_to(fx.array(1.0), (2**20, 2**20))",
            "fx.broadcast_to(fx.array([1, 2], dtype=fx.int8), (2**30, 2))",
            "fx.zeros((2**31, 2**4))",
            "fx.zeros((0, 2**62))",
            "fx.ones((2**62, 0))",
        ]))  # fmt: skip

    def receiver(self) -> Value:
        """The array a method is called on: always a ferrox array (a huge
        lazy one now and then)."""
        if self.chance(0.03):
            return self.huge_array()
        while True:
            v = self.array()
            if v.src.startswith("fx."):
                return v

    def array_like(self, float_only: bool = False) -> Value:
        return self.maybe_hostile(lambda: self.array(float_only=float_only))

    def arrays_list(self) -> Value:
        """A list of arrays (for concatenate/stack): usually compatible shapes."""
        n = self.pick([1, 2, 2, 3])
        dtype = self.pick(DTYPES + ["float32"] * 3)
        shape = self.small_shape(3) or (2,)
        items = []
        for _ in range(n):
            s = shape if self.chance(0.8) else self.small_shape(3)
            items.append(self.array(self.pick([dtype, dtype, dtype, self.pick(DTYPES)]), s).src)
        return Value("[" + ", ".join(items) + "]")

    # ------------------------------------------------------------------ other arguments

    def axis(self) -> Value:
        x = self.r.random()
        if x < 0.6:
            return Value(repr(self.pick([0, 1, -1, 2, -2, 3])))
        if x < 0.75:
            return Value(self.pick(["None", "(0, 1)", "[0, -1]", "(1, 0)", "(0, 0)", "()", "(-1, -2, 0)"]))
        return Value(self.pick(["5", "-7", "2**31", "2**63", "1.0", "'0'", "[0.5]", "(0, 2**40)"]), True)

    def dtype(self) -> Value:
        if self.chance(0.85):
            return Value("fx." + self.pick(DTYPES))
        return Value(self.pick(["None", "np.float32", "'float32'", "float", "int", "fx.floating", "3"]),
                     self.chance(0.9))  # fmt: skip

    def stream(self) -> Value:
        return Value(self.pick(["None", "fx.cpu", "fx.default_stream(fx.cpu)", "fx.Device(fx.cpu)",
                                "fx.gpu", "'cpu'", "0", "fx.Device(fx.cpu, 3)"]))  # fmt: skip

    def boolean(self) -> Value:
        return Value(self.pick(["True", "False"])) if self.chance(0.9) else Value(self.pick(["None", "1", "'yes'"]), True)

    def integer(self) -> Value:
        if self.chance(0.8):
            return Value(repr(self.pick([0, 1, 2, 3, 4, 5, -1, -2])))
        return Value(repr(self.pick(EDGE_INTS)), True)

    def number(self) -> Value:
        if self.chance(0.8):
            return Value(self.pick(["0", "1", "2", "5", "-3", "0.5", "2.5", "10", "-1.5"]))
        return Value(self.pick(EDGE_FLOATS + [repr(i) for i in EDGE_INTS[-8:]]), True)

    def memory_size(self) -> Value:
        return Value(repr(self.pick([0, 1, 1 << 20, 1 << 30, 2**63, -1])))

    def index(self) -> Value:
        """A `__getitem__` key: ints, slices, None, Ellipsis, integer and
        boolean arrays, tuples of them."""

        def one():
            x = self.r.random()
            if x < 0.3:
                return repr(self.pick([0, 1, -1, 2, -2]))
            if x < 0.6:
                parts = [self.pick(["", "0", "1", "-1", "2", "-3", "10"]) for _ in range(2)]
                step = self.pick(["", "", "2", "-1", "-2", "3"])
                return ":".join(parts) + (":" + step if step else "")
            if x < 0.68:
                return self.pick(["None", "..."])
            if x < 0.8:
                # Integer arrays (any shape, any integer dtype): in range for
                # most receivers, but MLX does not check bounds (it may read
                # or write out of bounds), so calls with them skip the oracle.
                self.bad_index = True
                return self.pick(["fx.array([0, -1, 1])", "fx.array([[0], [1]])", "fx.array([0, 0, 0])",
                                  "fx.array([1, 0], dtype=fx.uint8)", "fx.array(0)", "fx.array([], dtype=fx.int32)",
                                  "fx.array([-2, 1], dtype=fx.int64)", "fx.array([[1, 0, 1]])"])  # fmt: skip
            self.bad_index = True
            if x < 0.85:  # out of range, float or boolean arrays
                return self.pick(["fx.array([7, -9])", "fx.array([0.5])", "fx.array([True, False])",
                                  "fx.array([2**31 - 1])", "fx.array([[0, 1], [2, 3]]) * 1000"])  # fmt: skip
            return self.pick(["2**63", "-(2**63)", "::2**63-1", "::-(2**63)", "2**100:", "0:3:2**70",
                              "::0", "1.5", "'a'", "True", "[0, 1]", "5", "-9"])  # fmt: skip

        self.bad_index = False
        n = self.pick([1, 1, 2, 3])
        parts = [one() for _ in range(n)]
        return Value(", ".join(parts), self.bad_index)

    def function(self) -> Value:
        """A function of one array (for transforms)."""
        return Value(self.pick([
            "lambda x: fx.sum(fx.sin(x) * x)", "lambda x: fx.exp(x).sum()", "lambda x: (x * x).mean()",
            "lambda x: fx.tanh(x)", "lambda x: x.reshape(-1)", "lambda x: fx.sum(x[::-1] ** 2)",
            "lambda x: fx.max(x)", "lambda x: fx.sqrt(fx.abs(x) + 1).sum()", "lambda x: x",
            "lambda x: fx.sum(fx.matmul(x.reshape(1, -1), x.reshape(-1, 1)))", "lambda x: 3.0",
            "lambda x: (x, x)", "lambda x: [x.sum(), {'a': x}]", "lambda x: None",
        ]))  # fmt: skip
