"""Invalid arguments, drawn by hypothesis, over the op registry.

Every elementwise op of the registry (python/tests/opinfo.py) and every op
of ARGUMENT_OPS below is called with what users get wrong: refused dtypes,
shapes that do not broadcast, empty and 0-d arrays, wrong types, axes and
indices out of range, duplicate axes, negative sizes, and unknown or
ill-typed keywords. Whatever the call does, the only exceptions that may
escape are ValueError, TypeError and IndexError (MLX's classes for these
mistakes) — never a panic turned RuntimeError, a crash or a hang. Two
classes are allowed where Python itself raises them: OverflowError for
ints beyond 64 bits (PyO3's conversion) and MemoryError for sizes too large
to allocate. The draws are derandomized, so a run is reproducible.
"""

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ferrox as fx
from conftest import ALL_DTYPES, NP
from opinfo import OPS

ALLOWED = (ValueError, TypeError, IndexError)

SETTINGS = settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Ops whose arguments beyond the first array are axes, sizes, indices or
# flags; their parameter names come from their signatures.
ARGUMENT_OPS = [
    "sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin", "logsumexp", "var", "std",
    "median", "count_nonzero", "sort", "argsort", "partition", "argpartition", "topk", "cumsum", "cumprod",
    "cummax", "cummin", "logcumsumexp", "softmax", "squeeze", "expand_dims", "moveaxis", "swapaxes",
    "transpose", "reshape", "flatten", "unflatten", "broadcast_to", "tile", "repeat", "roll", "pad", "split",
    "diagonal", "diag", "trace", "tril", "triu", "take", "take_along_axis", "put_along_axis", "flip",
    "atleast_2d", "as_strided", "clip", "round", "stop_gradient", "hadamard_transform", "searchsorted",
    "tensordot", "inner", "outer", "kron", "matmul", "addmm", "einsum", "concatenate", "stack", "where",
]  # fmt: skip


def make_array(dtype, shape, layout):
    """A ferrox array of `dtype` and `shape`, contiguous, transposed or a
    strided slice."""
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 5 - 2
    a = fx.array(data.astype(NP[dtype]), dtype=getattr(fx, dtype))
    if layout == "transposed":
        return a.T
    if layout == "sliced" and a.ndim and a.shape[0]:
        return a[::2]
    return a


def arrays():
    return st.builds(
        make_array,
        st.sampled_from(ALL_DTYPES),
        st.lists(st.integers(0, 3), max_size=3).map(tuple),
        st.sampled_from(["contiguous", "transposed", "sliced"]),
    )


BIG_INTS = [2**31, 2**62, -(2**63), 2**63 - 1, 2**64, -(2**70)]


def ints():
    return st.one_of(st.integers(-4, 4), st.sampled_from(BIG_INTS))


def garbage():
    return st.one_of(
        st.none(),
        st.text(max_size=3),
        st.floats(allow_nan=True, allow_infinity=True),
        st.complex_numbers(max_magnitude=1e3),
        st.booleans(),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
        st.just(object()),
        st.just(Ellipsis),
        st.just(slice(None)),
        st.lists(st.one_of(ints(), st.none(), st.text(max_size=1)), max_size=3),
    )


def arguments():
    """A value for any parameter: an int, a tuple of ints (duplicates
    included), an array, a dtype, a device, or garbage."""
    return st.one_of(
        ints(),
        st.lists(ints(), max_size=4).map(tuple),
        arrays(),
        st.sampled_from([fx.float32, fx.int8, fx.complex64, fx.bool_]),
        st.sampled_from([fx.cpu, fx.gpu]),
        garbage(),
    )


def flatten(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from flatten(v)
        elif isinstance(v, dict):
            yield from flatten(list(v.values()))
        else:
            yield v


def call(fn, args, kwargs):
    """Calls `fn`, evaluates what it returns, and checks the exception
    class of a failure."""
    try:
        out = fn(*args, **kwargs)
        if isinstance(out, fx.array):
            fx.eval(out)
        elif isinstance(out, (list, tuple)):
            fx.eval([o for o in out if isinstance(o, fx.array)])
    except ALLOWED:
        return
    except OverflowError:
        values = list(flatten(list(args) + list(kwargs.values())))
        assert any(isinstance(v, int) and not -(2**63) <= v < 2**63 for v in values), (fn, args, kwargs)
    except MemoryError:
        values = list(flatten(list(args) + list(kwargs.values())))
        assert any(isinstance(v, int) and abs(v) >= 2**31 for v in values), (fn, args, kwargs)


@pytest.mark.parametrize("op", OPS, ids=str)
@SETTINGS
@given(data=st.data())
def test_elementwise_ops_raise_only_value_type_or_index_errors(op, data):
    # Often a refused dtype or shapes that do not broadcast; sometimes the
    # wrong number of operands, garbage, or a bad keyword.
    n = data.draw(st.sampled_from([op.arity, op.arity, op.arity, 0, op.arity + 1]))
    args = data.draw(st.lists(st.one_of(arrays(), arrays(), garbage()), min_size=n, max_size=n))
    kwargs = data.draw(st.dictionaries(st.sampled_from(["stream", "dtype", "bogus"]), arguments(), max_size=1))
    call(getattr(fx, op.name), args, kwargs)


def parameters(name):
    """The parameter names of `fx.<name>` after its first."""
    params = list(inspect.signature(getattr(fx, name)).parameters.values())
    return [p.name for p in params[1:] if p.kind is not p.VAR_POSITIONAL]


@pytest.mark.parametrize("name", ARGUMENT_OPS)
@SETTINGS
@given(data=st.data())
def test_ops_with_axes_sizes_and_indices_raise_only_value_type_or_index_errors(name, data):
    names = parameters(name)
    first = data.draw(st.one_of(arrays(), arrays(), arrays(), garbage()))
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names))) if names else []
    kwargs = {p: data.draw(arguments()) for p in chosen}
    args = [first]
    if name in ("einsum",):
        args = [data.draw(st.sampled_from(["ij,jk->ik", "ii", "i,i", "...i->i", "ij->k"])), first]
        kwargs.pop("operands", None)
    call(getattr(fx, name), args, kwargs)
