"""What the fuzz harness calls: every public function of ``ferrox``, every
method and property of ``ferrox.array``, the Python operators and protocols
arrays support, and the transforms (including custom functions whose rules
lie).

Arguments come from the parameter names of each signature (``a``, ``axis``,
``shape``, ``dtype``, ``stream``, ...), so a function added to the API is
fuzzed without changes here; ``SPECIAL`` covers signatures that names do not
describe. A call is one line of Python source (statements joined by ``;;``,
the last one an expression) that the worker runs and that replays alone.
"""

import inspect
from dataclasses import dataclass

import ferrox as fx

from .values import Gen, Value

# Public names that are not operations to call.
SKIP = {"array", "Device", "DeviceType", "Dtype", "DtypeCategory", "Stream", "cuda"}
# Submodules whose functions are fuzzed beside the top level's (as
# `fx.<module>.<name>`, compared with `mx.<module>.<name>`).
SUBMODULES = ("fft", "linalg")
# Functions that change process-wide state the worker restores after each call.
STATEFUL = {"set_default_device", "set_default_stream", "set_memory_limit", "set_cache_limit", "clear_cache",
            "reset_peak_memory", "clear_streams", "set_printoptions"}

BINARY_OPERATORS = ["+", "-", "*", "/", "**", "@", "<", "<=", ">", ">=", "==", "!="]
UNARY_OPERATORS = ["-", "+", "abs"]
PROTOCOLS = ["len", "bool", "int", "float", "repr", "list", "np.array", "memoryview", "iter_first"]


@dataclass
class Call:
    """One fuzz call: its source line, whether an argument was hostile (so
    an exception is expected and MLX is not consulted) and its target name."""

    src: str
    hostile: bool
    target: str


def _arg_for(g: Gen, name: str) -> Value:
    """A value for a parameter, chosen by the parameter's name."""
    if name in ("a", "b", "x", "y", "condition", "val", "vals", "values", "input"):
        return g.array_like()
    if name == "arrays":
        return g.maybe_hostile(g.arrays_list)
    if name in ("axis", "axes", "start_axis", "end_axis", "axis1", "axis2"):
        return g.axis()
    if name == "shape":
        return g.shape()
    if name == "dtype":
        return g.dtype()
    if name == "stream":
        return g.stream()
    if name in ("keepdims",):
        return g.boolean()
    if name in ("k", "n", "m", "num"):
        return g.integer()
    if name in ("start", "stop", "step"):
        return g.number()
    if name == "s":
        return g.shape()
    if name == "norm":
        return Value(g.pick(["'backward'", "'ortho'", "'forward'", "'unitary'", "None"]))
    if name == "d":
        return g.number()
    if name in ("limit",):
        return g.memory_size()
    if name in ("device",):
        return Value(g.pick(["fx.cpu", "fx.gpu", "fx.Device(fx.cpu)", "'cpu'", "None", "fx.Device(fx.gpu, 5)"]))
    if name in ("fun", "f"):
        return g.function()
    if name in ("allow",):
        return g.boolean()
    return g.hostile()


def _call_with_signature(g: Gen, prefix: str, name: str, sig: inspect.Signature, skip_self: bool) -> Call:
    """`prefix.name(args)` with arguments for each parameter of `sig`."""
    positional, keywords, hostile = [], [], False
    params = list(sig.parameters.values())
    if skip_self and params and params[0].name == "self":
        params = params[1:]
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            for _ in range(g.pick([0, 1, 2, 2, 3])):
                v = _arg_for(g, "shape" if name == "reshape" else "axis" if name == "transpose" else "x")
                positional.append(v.src)
                hostile |= v.hostile
            continue
        if p.kind == p.VAR_KEYWORD:
            continue
        if p.default is not p.empty and g.chance(0.4):
            continue
        v = _arg_for(g, p.name)
        hostile |= v.hostile
        by_keyword = p.kind == p.KEYWORD_ONLY or (p.kind == p.POSITIONAL_OR_KEYWORD and g.chance(0.3))
        if by_keyword:
            keywords.append(f"{p.name}={v.src}")
        elif keywords:
            # A positional argument cannot follow a keyword one: pass it by name too.
            keywords.append(f"{p.name}={v.src}")
            hostile |= p.kind == p.POSITIONAL_ONLY
        else:
            positional.append(v.src)
    if g.chance(0.03):
        positional.append(g.hostile().src)
        hostile = True
    if g.chance(0.02):
        keywords.append("bogus_keyword=1")
        hostile = True
    return Call(f"{prefix}.{name}({', '.join(positional + keywords)})", hostile, name)


def _custom_function_call(g: Gen) -> Call:
    """A custom function whose vjp, jvp or vmap rule may lie about counts,
    shapes, dtypes or axes."""
    fwd = g.pick(["lambda x: x * 2", "lambda x: x.sum()", "lambda x: (x, x * 3)", "lambda x: fx.sin(x)"])
    rule_kind = g.pick(["vjp", "jvp", "vmap"])
    if rule_kind == "vjp":
        rule = g.pick(["lambda p, c, o: (c,)", "lambda p, c, o: (c, c)", "lambda p, c, o: ()",
                       "lambda p, c, o: (fx.ones((7,)),)", "lambda p, c, o: (p[0].astype(fx.int32),)",
                       "lambda p, c, o: 5", "lambda p, c, o: (None,)", "lambda p, c, o: p"])  # fmt: skip
        use = g.pick(["fx.grad(lambda x: fx.sum(cf(x) if not isinstance(cf(x), tuple) else cf(x)[0]))(X)",
                      "fx.vjp(cf, [X], [X])", "fx.grad(lambda x: fx.sum(cf(fx.stack([x, x]))))(X)"])  # fmt: skip
    elif rule_kind == "jvp":
        rule = g.pick(["lambda p, t: (t[0],)", "lambda p, t: (t[0][0],)", "lambda p, t: ()",
                       "lambda p, t: (t[0], t[0])", "lambda p, t: (t[0].astype(fx.float16),)", "lambda p, t: 1"])  # fmt: skip
        use = "fx.jvp(cf, [X], [fx.ones_like(X)])"
    else:
        rule = g.pick(["lambda i, a: (i[0], 5)", "lambda i, a: (i[0], a[0])", "lambda i, a: ((i[0], i[0]), (0, 0))",
                       "lambda i, a: (i[0][0], 0)", "lambda i, a: (i[0], -1)", "lambda i, a: (i[0] * 2, None)",
                       "lambda i, a: ([], [])", "lambda i, a: 3"])  # fmt: skip
        use = g.pick(["fx.vmap(cf)(X)", "fx.vmap(cf, in_axes=1)(X)"])
    x = g.array(float_only=True, shape=g.pick([(2, 3), (3,), (2, 2, 2)])).src
    src = f"X = {x};; cf = fx.custom_function({fwd});; cf.{rule_kind}({rule});; {use}"
    # Rules that lie must raise (MLX returns whatever they produce instead).
    return Call(src, True, "custom_function." + rule_kind)


def _transform_call(g: Gen) -> Call:
    kind = g.pick(["grad", "value_and_grad", "vjp", "jvp", "vmap", "vmap", "checkpoint", "custom", "custom"])
    if kind == "custom":
        return _custom_function_call(g)
    f = g.function().src
    x = g.array_like(float_only=True)
    if kind == "grad":
        argnums = g.pick(["", ", argnums=0", ", argnums=1", ", argnums=(0,)", ", argnums=-1", ", argnums='a'"])
        return Call(f"fx.grad({f}{argnums})({x.src})", x.hostile, kind)
    if kind == "value_and_grad":
        return Call(f"fx.value_and_grad({f})({x.src})", x.hostile, kind)
    if kind == "vjp":
        return Call(f"fx.vjp({f}, [{x.src}], [{g.array_like(float_only=True).src}])", True, kind)
    if kind == "jvp":
        return Call(f"fx.jvp({f}, [{x.src}], [{g.array_like(float_only=True).src}])", True, kind)
    if kind == "checkpoint":
        return Call(f"fx.grad(fx.checkpoint({f}))({x.src})", x.hostile, kind)
    in_axes = g.pick(["", ", in_axes=0", ", in_axes=1", ", in_axes=-1", ", in_axes=None", ", in_axes=(0,)",
                      ", in_axes=5", ", out_axes=1", ", in_axes=[0, 1]"])  # fmt: skip
    op = g.pick(["fx.sin", "fx.sum", "lambda v: v * 2", "lambda v: fx.mean(v, axis=0)", "lambda v: v.T",
                 "lambda v: fx.matmul(v, v.T)", "lambda v: v[0]", "fx.argmax", "lambda v: fx.grad(fx.sum)(v)"])  # fmt: skip
    return Call(f"fx.vmap({op}{in_axes})({x.src})", True, kind)


def _operator_call(g: Gen) -> Call:
    x = g.r.random()
    if x < 0.45:
        op = g.pick(BINARY_OPERATORS)
        a, b = g.receiver(), g.array_like() if g.chance(0.7) else g.python_scalar()
        left, right = (a, b) if g.chance(0.8) else (b, a)
        return Call(f"({left.src}) {op} ({right.src})", a.hostile or b.hostile, op)
    if x < 0.55:
        op = g.pick(UNARY_OPERATORS)
        a = g.receiver()
        return Call(f"abs({a.src})" if op == "abs" else f"{op}({a.src})", a.hostile, op)
    if x < 0.72:
        a, key = g.receiver(), g.index()
        return Call(f"({a.src})[{key.src}]", a.hostile or key.hostile, "getitem")
    if x < 0.8:
        # a[key] = v (the call line's statements, then the array) and
        # a.at[key].<update>(v).
        a, key = g.receiver(), g.index()
        v = g.array_like() if g.chance(0.6) else g.python_scalar()
        hostile = a.hostile or key.hostile or v.hostile
        if g.chance(0.5):
            return Call(f"t = {a.src} ;; t[{key.src}] = {v.src} ;; t", hostile, "setitem")
        update = g.pick(["add", "subtract", "multiply", "divide", "maximum", "minimum"])
        return Call(f"({a.src}).at[{key.src}].{update}({v.src})", hostile, "at." + update)
    op = g.pick(PROTOCOLS)
    a = g.receiver()
    if op == "iter_first":
        return Call(f"next(iter({a.src}))", a.hostile, op)
    return Call(f"{op}({a.src})", a.hostile, op)


class Targets:
    """The fuzzed surface, enumerated once per process."""

    def __init__(self):
        self.functions = []
        for name in sorted(dir(fx)):
            obj = getattr(fx, name)
            if name.startswith("_") or name in SKIP or not callable(obj) or isinstance(obj, type):
                continue
            if isinstance(obj, (fx.Dtype, fx.DtypeCategory, fx.DeviceType)):
                continue
            try:
                self.functions.append((name, inspect.signature(obj)))
            except (TypeError, ValueError):
                self.functions.append((name, None))
        for module in SUBMODULES:
            for name in sorted(dir(getattr(fx, module))):
                obj = getattr(getattr(fx, module), name)
                if not name.startswith("_") and callable(obj):
                    self.functions.append((f"{module}.{name}", inspect.signature(obj)))
        self.methods, self.properties = [], []
        for name in sorted(dir(fx.array)):
            if name.startswith("_"):
                continue
            attr = getattr(fx.array, name)
            if callable(attr):
                self.methods.append((name, inspect.signature(attr)))
            else:
                self.properties.append(name)

    def names(self):
        """Every target name (for the coverage line of the report)."""
        return (["fx." + n for n, _ in self.functions] + ["array." + n for n, _ in self.methods]
                + ["array." + n for n in self.properties])  # fmt: skip

    def call(self, g: Gen) -> Call:
        """One random call."""
        x = g.r.random()
        if x < 0.5:
            name, sig = g.pick(self.functions)
            if sig is None:
                return Call(f"fx.{name}({g.array_like().src})", True, name)
            if name in ("grad", "value_and_grad", "vjp", "jvp", "vmap", "checkpoint", "custom_function"):
                return _transform_call(g)
            if name == "arange":
                nums = [g.number() for _ in range(g.pick([1, 2, 3]))]
                extra = ", dtype=" + g.dtype().src if g.chance(0.3) else ""
                return Call(f"fx.arange({', '.join(v.src for v in nums)}{extra})", any(v.hostile for v in nums),
                            name)  # fmt: skip
            if name == "eval":
                return Call(f"fx.eval({g.array_like().src}, [{g.array_like().src}])", True, name)
            call = _call_with_signature(g, "fx", name, sig, skip_self=False)
            call.hostile |= name in STATEFUL
            return call
        if x < 0.72:
            name, sig = g.pick(self.methods)
            a = g.receiver()
            call = _call_with_signature(g, f"({a.src})", name, sig, skip_self=True)
            call.hostile |= a.hostile
            call.target = "array." + name
            return call
        if x < 0.8:
            name = g.pick(self.properties)
            a = g.receiver()
            return Call(f"({a.src}).{name}", a.hostile, "array." + name)
        if x < 0.93:
            return _operator_call(g)
        return _transform_call(g)
