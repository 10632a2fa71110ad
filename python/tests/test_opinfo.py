"""The op registry suite (opinfo.py): every entry on every device.

Tiers keep it affordable: values run the full op x dtype cross product on
contiguous data and every layout (transposed, strided, negative steps,
offsets, broadcast, empty, 0-d) for a rotating pair of dtypes per op;
MLX comparisons (where MLX is installed) cover every accepted dtype with
edge values; gradients, vmap and methods run once per op.
"""

import importlib.util
import zlib

import numpy as np
import pytest

import ferrox as fx
from conftest import (
    ALL_DTYPES,
    FLOATS,
    INTS,
    LAYOUTS_2D,
    NP,
    cast_ref,
    fxd,
    name_of,
    to_fx,
    to_np,
)
from opinfo import EDGE_FLOATS, INEXACT, OPS, samples

HAVE_MLX = importlib.util.find_spec("mlx") is not None

LAYOUTS = dict(LAYOUTS_2D)
LAYOUTS["broadcast"] = ((1, 4), lambda x: x[[0, 0, 0]] if isinstance(x, np.ndarray) else fx.broadcast_to(x, (3, 4)))
LAYOUTS["zero_dim"] = ((), lambda x: x)


def _layout_dtypes(op):
    """Two dtypes per op for the layout tier, rotating through its dtypes."""
    ds = op.numpy_dtypes()
    k = zlib.crc32(op.name.encode()) % len(ds)
    return sorted({ds[k], "float32" if "float32" in ds else ds[-1]})


VALUE_CASES = [(op, d, "contiguous") for op in OPS for d in op.numpy_dtypes()]
VALUE_CASES += [(op, d, lay) for op in OPS for d in _layout_dtypes(op) for lay in LAYOUTS if lay != "contiguous"]


def _operands(rng, op, d, layout):
    base_shape, view = LAYOUTS[layout]
    nps, fxs = [], []
    for i in range(op.arity):
        base = samples(rng, base_shape, d, op.domain, arg=i)
        nps.append(view(np.asarray(base)))
        fxs.append(view(to_fx(base, d)))
    return nps, fxs


def _reference(op, d, nps):
    """The op on the inputs as the kernel sees them, in float64/complex128
    for inexact results, exactly in the dtype for integer and bool ones."""
    rdt = op.result_dtype(d)
    if d in INTS or d == "bool_":
        if rdt in INTS or rdt == "bool_" or op.result == "bool":
            with np.errstate(all="ignore"):
                return np.asarray(op.ref(*[np.asarray(x, dtype=NP[d]) for x in nps]))
        xs = [np.asarray(x).astype(np.float64) for x in nps]
    else:
        xs = [cast_ref(x, d) for x in nps]
    with np.errstate(all="ignore"):
        return np.asarray(op.ref(*xs))


def _spacing(x, name):
    """One unit in the last place of |x| in dtype `name`."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    if name == "bfloat16":
        e = np.floor(np.log2(np.maximum(x, 2.0**-126)))
        return 2.0 ** (e - 7)
    t = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "complex64": np.float32}[name]
    with np.errstate(over="ignore"):
        return np.spacing(x.astype(t)).astype(np.float64)


def _rounded(x, name):
    """A float64/complex128 reference rounded to dtype `name` (so overflow
    gives the infinity the dtype must give)."""
    from conftest import round_bf16

    with np.errstate(over="ignore", invalid="ignore"):
        if name == "bfloat16":
            return round_bf16(np.asarray(x).astype(np.float32))
        return np.asarray(x).astype(NP[name])


def assert_ulps(got_fx, expected, name, ulps):
    """Inexact results within `ulps` units in the last place of the
    reference (plus the final rounding for half precision); NaN matches
    NaN, infinities match exactly."""
    got = to_np(got_fx)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    expected = _rounded(expected, name)
    if name == "complex64":
        g, e = got.astype(np.complex128), expected.astype(np.complex128)
        scale = np.maximum(np.abs(e), 1e-30)
        with np.errstate(invalid="ignore"):
            err = np.abs(g - e)
            ok = (err <= ulps * 2.0**-23 * scale * 2) | (np.isnan(g) & np.isnan(e)) | (g == e)
        # Where a part overflows, the other part's phase is ill-conditioned
        # (docs/fuzzing.md): only the overflowed parts must match.
        def same(p, q):
            return (p == q) | (np.isnan(p) & np.isnan(q))

        re_over, im_over = ~np.isfinite(e.real), ~np.isfinite(e.imag)
        ok |= (re_over | im_over) & (~re_over | same(g.real, e.real)) & (~im_over | same(g.imag, e.imag))
    else:
        g, e = got.astype(np.float64), expected.astype(np.float64)
        with np.errstate(invalid="ignore"):
            allowed = (ulps if name in ("float32", "float64") else 1.0) * _spacing(e, name)
            # values below the normal range keep fewer digits
            tiny = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149, "float64": 0.0}[name]
            ok = (np.abs(g - e) <= allowed + tiny) | (np.isnan(g) & np.isnan(e)) | (g == e)
    if not np.all(ok):
        bad = [tuple(b) for b in np.argwhere(~ok)[:5]]
        raise AssertionError(f"{name} beyond {ulps} ulp at {bad}: got {[got[i] for i in bad]} "
                             f"expected {[expected[i] for i in bad]}")


def assert_result(op, out, expected, d):
    rdt = op.result_dtype(d)
    assert out.dtype == fxd(rdt), f"{op.name}({d}) gave {out.dtype}, expected {rdt}"
    if rdt in INTS or rdt == "bool_":
        got = to_np(out)
        exp = np.asarray(expected).astype(NP[rdt])
        assert got.shape == exp.shape
        bad = np.argwhere(got != exp)[:5]
        assert bad.size == 0, f"{op.name}({d}) differs at {bad.tolist()}: got {got[tuple(bad[0])]} " \
                              f"expected {exp[tuple(bad[0])]}"
    else:
        assert_ulps(out, np.asarray(expected), rdt, op.ulps)


@pytest.mark.parametrize("op,dtype,layout", VALUE_CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_values(op, dtype, layout, rng):
    nps, fxs = _operands(rng, op, dtype, layout)
    out = getattr(fx, op.name)(*fxs)
    assert_result(op, out, _reference(op, dtype, nps), dtype)


@pytest.mark.parametrize("op,dtype", [(op, d) for op in OPS for d in op.refused()], ids=str)
def test_refused_dtypes_raise_value_error(op, dtype, rng):
    xs = [to_fx(samples(rng, (2, 3), dtype, "normal"), dtype) for _ in range(op.arity)]
    with pytest.raises(ValueError, match=op.name):
        getattr(fx, op.name)(*xs)


def _edge_values(d):
    if d in FLOATS:
        v = np.array(EDGE_FLOATS, dtype=np.float64)
        return v.astype(np.float32) if d == "bfloat16" else v.astype(NP[d])
    if d == "complex64":
        # Finite parts only: Annex G's special values (where MLX follows
        # std::complex instead) are tested in test_hardening.py.
        re = np.array([v for v in EDGE_FLOATS if np.isfinite(v) and abs(v) < 1e3], dtype=np.float32)
        return (re[:, None] + 1j * re[None, ::3]).reshape(-1).astype(np.complex64)
    if d == "bool_":
        return np.array([False, True, True, False])
    info = np.iinfo(NP[d])
    return np.array([0, 1, 2, 3, 7, info.max, info.min, info.max - 1, info.min + 1], dtype=NP[d])


def _mlx_result(op, d, values):
    import mlx.core as mx

    mxd = getattr(mx, d)
    ins = [mx.array(v, dtype=mx.float64) if d == "float64" else mx.array(v).astype(mxd) for v in values]
    out = getattr(mx, op.name)(*ins)
    return out


MLX_CASES = [(op, d) for op in OPS for d in op.dtypes] if HAVE_MLX else []


@pytest.mark.parametrize("op,dtype", MLX_CASES, ids=str)
def test_matches_mlx_on_edge_values(op, dtype):
    """Same dtype as MLX and the same values (NaN for NaN, within the
    registry's tolerance), edge values included."""
    import mlx.core as mx

    v = _edge_values(dtype)
    if op.arity == 1:
        values = [v]
    else:
        a, b = np.meshgrid(v, v, indexing="ij")
        values = [a.reshape(-1), b.reshape(-1)]
    if op.domain == "shift" and op.arity == 2:
        values[1] = np.abs(values[1].astype(np.int64) % 8).astype(values[1].dtype)
    expected = _mlx_result(op, dtype, values)
    out = getattr(fx, op.name)(*[to_fx(x, dtype) for x in values])
    assert name_of(out.dtype) == str(expected.dtype).split(".")[-1].replace("bool", "bool_"), \
        f"{op.name}({dtype}): ferrox {out.dtype}, MLX {expected.dtype}"
    exp = np.array(expected.astype(mx.float32) if expected.dtype == mx.bfloat16 else expected)
    if op.name in ("sign",) and dtype == "complex64":
        return _close_complex(to_np(out), exp)
    rdt = name_of(out.dtype)
    if rdt in INTS or rdt == "bool_":
        got = to_np(out)
        bad = np.argwhere(got != exp)[:5]
        assert bad.size == 0, f"{op.name}({dtype}) vs MLX at {[[x[i] for x in values] for i in bad[:, 0]]}: " \
                              f"ferrox {got[bad[:, 0]]} MLX {exp[bad[:, 0]]}"
    else:
        # Where MLX's own result is off (its fast exp and erf lose ulps near
        # the range ends and flush subnormals), ferrox must be within the
        # registry's tolerance of the float64 truth instead.
        try:
            assert_ulps(out, exp, rdt, op.ulps)
        except AssertionError:
            if dtype not in op.numpy_dtypes():
                raise
            assert_ulps(out, _reference(op, dtype, values), rdt, op.ulps)


def _close_complex(got, exp):
    ok = np.isclose(got, exp, rtol=1e-6, atol=1e-7) | (np.isnan(got) & np.isnan(exp))
    assert np.all(ok), (got[~ok], exp[~ok])


GRAD_OPS = [op for op in OPS if op.grad]


@pytest.mark.parametrize("op", GRAD_OPS, ids=str)
def test_grad_matches_finite_differences(op, rng):
    """d sum(op(x)) / dx against central differences in float64."""
    xs = [samples(rng, (3, 4), "float64", op.domain, arg=i) for i in range(op.arity)]
    if op.name in ("maximum", "minimum"):
        xs[1] = xs[0] + rng.choice([-0.5, 0.5], size=xs[0].shape)  # no ties
    f = getattr(fx, op.name)
    h = 1e-6
    for arg in range(op.arity):
        def total(*args):
            return f(*args).sum()

        def f64(arrays):
            return [fx.array(x, dtype=fx.float64) for x in arrays]

        g = fx.grad(total, argnums=arg)(*f64(xs))
        plus = [x.copy() for x in xs]
        minus = [x.copy() for x in xs]
        plus[arg] = plus[arg] + h
        minus[arg] = minus[arg] - h
        fd = (np.array(f(*f64(plus))) - np.array(f(*f64(minus)))) / (2 * h)
        assert g.dtype == fx.float64
        np.testing.assert_allclose(np.array(g), fd, rtol=1e-6, atol=1e-7, err_msg=f"{op.name} argument {arg}")


@pytest.mark.parametrize("op", OPS, ids=str)
@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_matches_a_loop(op, in_axis, rng):
    d = op.numpy_dtypes()[zlib.crc32(op.name.encode()) % len(op.numpy_dtypes())]
    xs = [to_fx(samples(rng, (3, 4), d, op.domain, arg=i), d) for i in range(op.arity)]
    f = getattr(fx, op.name)
    out = fx.vmap(f, in_axes=in_axis)(*xs)
    moved = [x if in_axis == 0 else x.T for x in xs]
    expected = fx.stack([f(*[m[i] for m in moved]) for i in range(moved[0].shape[0])])
    assert out.dtype == expected.dtype
    assert np.array_equal(to_np(out), to_np(expected), equal_nan=True)


@pytest.mark.parametrize("op", [op for op in OPS if op.method], ids=str)
def test_method_matches_function(op, rng):
    d = "float32" if "float32" in op.dtypes else op.dtypes[0]
    x = to_fx(samples(rng, (3, 4), d, op.domain), d)
    got = getattr(x, op.name)(stream=fx.default_device())
    expected = getattr(fx, op.name)(x)
    assert got.dtype == expected.dtype
    assert np.array_equal(to_np(got), to_np(expected), equal_nan=True)


@pytest.mark.parametrize("op", OPS, ids=str)
def test_scalars_and_zero_dim(op):
    """Python scalars go through the function as 0-d arrays."""
    args = [2] * op.arity if op.domain != "unit" else [0] * op.arity
    out = getattr(fx, op.name)(*args)
    assert out.shape == ()


GPU_CASES = [(op, d) for op in OPS for d in op.dtypes] if fx.cuda.is_available() else []


@pytest.mark.whole_process
@pytest.mark.parametrize("op,dtype", GPU_CASES, ids=str)
def test_gpu_matches_cpu(op, dtype, rng):
    """Every (op, dtype) on the GPU gives the CPU's result: bit for bit for
    exact dtypes, within the registry's tolerance for inexact ones (edge
    values and random samples)."""
    edge = _edge_values(dtype)
    values = [np.concatenate([samples(rng, (64,), dtype, op.domain, arg=i), edge]) for i in range(op.arity)]
    if op.domain == "shift" and op.arity == 2:
        values[1] = np.abs(values[1].astype(np.int64) % 8).astype(values[1].dtype)
    f = getattr(fx, op.name)
    gpu = f(*[to_fx(v, dtype) for v in values], stream=fx.gpu)
    cpu = f(*[to_fx(v, dtype) for v in values], stream=fx.cpu)
    assert gpu.dtype == cpu.dtype
    rdt = name_of(gpu.dtype)
    if rdt in INTS or rdt == "bool_":
        assert np.array_equal(to_np(gpu), to_np(cpu)), (values, to_np(gpu), to_np(cpu))
    else:
        assert_ulps(gpu, to_np(cpu).astype(np.complex128 if rdt == "complex64" else np.float64), rdt, 2 * op.ulps)
