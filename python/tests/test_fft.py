"""ferrox.fft against NumPy's pocketfft (float64 references), MLX's values
(where MLX is installed), derivatives against the dense Jacobian, vmap
against a loop, and MLX's errors. Transforms compute in complex64, so the
tolerance scales with the transform length and the input's size."""

import importlib.util

import numpy as np
import pytest

import ferrox as fx

HAVE_MLX = importlib.util.find_spec("mlx") is not None
NORMS = ["backward", "ortho", "forward"]


def check(got, want, dtype):
    """`got` (ferrox) against `want` (NumPy, float64) relative to its size."""
    assert got.dtype == dtype, (got.dtype, dtype)
    g = np.array(got)
    assert g.shape == want.shape, (g.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(g, want, rtol=0, atol=2e-5 * scale * max(1.0, np.log2(max(want.size, 2))))


def signal(rng, shape, complex_=True):
    x = rng.standard_normal(shape)
    if complex_:
        x = x + 1j * rng.standard_normal(shape)
        return x.astype(np.complex64)
    return x.astype(np.float32)


# --------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------

ONE_AXIS = ["fft", "ifft", "rfft", "irfft"]


@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("n", [None, 5, 12])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("norm", NORMS)
def test_one_axis_matches_numpy(rng, name, n, axis, norm):
    x = signal(rng, (8, 6), complex_=name != "rfft")
    got = getattr(fx.fft, name)(fx.array(x), n=n, axis=axis, norm=norm)
    want = getattr(np.fft, name)(x.astype(np.complex128 if name != "rfft" else np.float64), n=n, axis=axis, norm=norm)
    check(got, want, fx.float32 if name == "irfft" else fx.complex64)


@pytest.mark.parametrize("layout", ["transposed", "strided", "offset", "broadcast"])
@pytest.mark.parametrize("name", ONE_AXIS + ["fft2", "rfftn", "irfftn"])
def test_non_contiguous_inputs(rng, layout, name):
    base = signal(rng, (6, 10), complex_=name not in ("rfft", "rfftn"))
    views = {
        "transposed": lambda a: a.T,
        "strided": lambda a: a[::2, ::-3],
        "offset": lambda a: a[1:, 2:],
        "broadcast": lambda a: a[1:2, :],
    }
    view = views[layout]
    x_np = view(base)
    x_fx = view(fx.array(base))
    if layout == "broadcast":
        x_np = np.broadcast_to(x_np, (4, 10))
        x_fx = fx.broadcast_to(x_fx, (4, 10))
    got = getattr(fx.fft, name)(x_fx)
    want = getattr(np.fft, name)(x_np.astype(np.complex128 if x_np.dtype == np.complex64 else np.float64))
    check(got, want, fx.float32 if name.startswith("irfft") else fx.complex64)


N_AXES = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]


@pytest.mark.parametrize("name", N_AXES)
@pytest.mark.parametrize(
    "s, axes",
    [(None, None), (None, [0, 2]), (None, [2, 0]), ([3, 8], [1, 2]), ([5, 4, 7], [0, 1, 2]), (None, [-1]), (None, [1, 0, 2])],
)
@pytest.mark.parametrize("norm", NORMS)
def test_many_axes_match_numpy(rng, name, s, axes, norm):
    if s is not None and axes is None:
        pytest.skip("MLX refuses s without axes (see test_errors)")
    x = signal(rng, (4, 6, 5), complex_="rfft" not in name)
    kwargs = {"norm": norm, "axes": axes}  # axes=None: every axis, also for the 2-D names
    if s is not None:
        kwargs["s"] = s
    reference = getattr(np.fft, name.replace("2", "n"))
    x_ref = x.astype(np.complex128 if "rfft" not in name else np.float64)
    got = getattr(fx.fft, name)(fx.array(x), **kwargs)
    check(got, reference(x_ref, **kwargs), fx.float32 if name.startswith("irfft") else fx.complex64)


def test_two_dimensional_names_default_to_the_last_two_axes(rng):
    x = signal(rng, (3, 4, 6))
    check(fx.fft.fft2(fx.array(x)), np.fft.fft2(x.astype(np.complex128)), fx.complex64)
    check(fx.fft.irfft2(fx.array(x)), np.fft.irfft2(x.astype(np.complex128)), fx.float32)


@pytest.mark.parametrize("n", [1, 2, 3, 17, 97, 128, 1000, 1009, 4096])
def test_lengths(rng, n):
    x = signal(rng, (3, n))
    check(fx.fft.fft(fx.array(x)), np.fft.fft(x.astype(np.complex128)), fx.complex64)
    r = signal(rng, (3, n), complex_=False)
    check(fx.fft.rfft(fx.array(r)), np.fft.rfft(r.astype(np.float64)), fx.complex64)
    spectrum = np.fft.rfft(r.astype(np.float64)).astype(np.complex64)
    check(fx.fft.irfft(fx.array(spectrum), n=n), np.fft.irfft(spectrum.astype(np.complex128), n=n), fx.float32)


@pytest.mark.parametrize("n", [1 << 20, 1_000_003])
def test_long_transforms(rng, n):
    x = signal(rng, (n,))
    got = np.array(fx.fft.fft(fx.array(x)))
    want = np.fft.fft(x.astype(np.complex128))
    # Errors grow like sqrt(log n) relative to the spectrum's norm.
    assert np.linalg.norm(got - want) <= 1e-5 * np.linalg.norm(want)
    r = signal(rng, (n,), complex_=False)
    got = np.array(fx.fft.irfft(fx.fft.rfft(fx.array(r)), n=n))
    assert np.linalg.norm(got - r) <= 1e-5 * np.linalg.norm(r)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "bool_", "uint8"])
@pytest.mark.parametrize("name", ["fft", "rfft", "ifft2"])
def test_input_dtypes_compute_in_complex64(rng, dtype, name):
    x = (rng.standard_normal((4, 8)) * 3).astype(np.dtype(dtype) if dtype != "bool_" else np.bool_)
    got = getattr(fx.fft, name)(fx.array(x))
    assert got.dtype == fx.complex64
    check(got, getattr(np.fft, name)(x.astype(np.float64)), fx.complex64)


def test_complex_input_to_rfft_drops_the_imaginary_part(rng):
    x = signal(rng, (8,))
    check(fx.fft.rfft(fx.array(x)), np.fft.rfft(x.real.astype(np.float64)), fx.complex64)


def test_irfft_ignores_imaginary_parts_a_real_spectrum_cannot_have(rng):
    for n in (8, 9):
        spec = signal(rng, (n // 2 + 1,))
        check(fx.fft.irfft(fx.array(spec), n=n), np.fft.irfft(spec.astype(np.complex128), n=n), fx.float32)


def test_empty_batches_and_empty_axes_list(rng):
    x = np.zeros((0, 8), np.complex64)
    assert fx.fft.fft(fx.array(x)).shape == (0, 8)
    assert fx.fft.rfft(fx.array(x.real)).shape == (0, 5)
    assert fx.fft.irfft(fx.array(x)).shape == (0, 14)
    y = fx.array(signal(rng, (3, 4)))
    assert fx.fft.fftn(y, axes=[]).tolist() == y.tolist()


def test_compiled_and_lazy(rng):
    x = signal(rng, (4, 16))
    f = fx.compile(lambda a: fx.abs(fx.fft.ifft(fx.fft.fft(a) * 2)))
    np.testing.assert_allclose(np.array(f(fx.array(x))), 2 * np.abs(x), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# shifts and frequencies
# --------------------------------------------------------------------------


@pytest.mark.parametrize("axes", [None, 0, 1, [0, 1], (-1,)])
def test_shifts_match_numpy(rng, axes):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_array_equal(np.array(fx.fft.fftshift(fx.array(x), axes=axes)), np.fft.fftshift(x, axes=axes))
    np.testing.assert_array_equal(np.array(fx.fft.ifftshift(fx.array(x), axes=axes)), np.fft.ifftshift(x, axes=axes))


@pytest.mark.parametrize("n", [1, 2, 7, 8])
@pytest.mark.parametrize("d", [1.0, 0.25, -2.0])
def test_frequencies_match_numpy(n, d):
    f = fx.fft.fftfreq(n, d)
    assert f.dtype == fx.float32
    np.testing.assert_allclose(np.array(f), np.fft.fftfreq(n, d), rtol=1e-6)
    np.testing.assert_allclose(np.array(fx.fft.rfftfreq(n, d)), np.fft.rfftfreq(n, d), rtol=1e-6)


# --------------------------------------------------------------------------
# derivatives: the transforms are linear, so the Jacobian is probed exactly
# --------------------------------------------------------------------------


def as_real(z):
    """A complex or real NumPy array as real pairs (the real-linear view)."""
    z = np.asarray(z)
    return np.stack([z.real, z.imag], -1).ravel() if np.iscomplexobj(z) else z.ravel().astype(np.float64)


def jacobian(fun, x):
    """The real Jacobian of `fun` at `x` by unit probes (exact for linear maps)."""
    x = np.asarray(x)
    cplx = np.iscomplexobj(x)
    cols = []
    for k in range(x.size * (2 if cplx else 1)):
        e = np.zeros(x.size * (2 if cplx else 1))
        e[k] = 1.0
        probe = (e[0::2] + 1j * e[1::2]).reshape(x.shape).astype(np.complex64) if cplx else e.reshape(x.shape).astype(np.float32)
        cols.append(as_real(np.array(fun(fx.array(probe)))))
    return np.stack(cols, 1)


DIFFERENTIATED = [
    ("fft", {}, True),
    ("fft", {"n": 5}, True),
    ("fft", {"n": 9, "norm": "ortho"}, True),
    ("ifft", {"norm": "forward"}, True),
    ("rfft", {}, False),
    ("rfft", {"n": 7}, False),
    ("rfft", {"norm": "ortho"}, False),
    ("irfft", {}, True),
    ("irfft", {"n": 7}, True),
    ("irfft", {"n": 4, "norm": "forward"}, True),
    ("fft2", {}, True),
    ("rfft2", {"s": [3, 5], "axes": [0, 1]}, False),
    ("irfft2", {}, True),
    ("rfftn", {"axes": [1, 0]}, False),
    ("irfftn", {"axes": [1, 0], "s": [4, 3]}, True),
]


@pytest.mark.parametrize("name, kwargs, complex_in", DIFFERENTIATED)
def test_derivatives_against_the_jacobian(rng, name, kwargs, complex_in):
    f = getattr(fx.fft, name)

    def fun(a):
        return f(a, **kwargs)

    x = signal(rng, (3, 6), complex_=complex_in)
    J = jacobian(fun, x)
    y = np.array(fun(fx.array(x)))
    # jvp: the tangent's image is J t.
    t = signal(rng, x.shape, complex_=complex_in)
    _, (d,) = fx.jvp(fun, [fx.array(x)], [fx.array(t)])
    np.testing.assert_allclose(as_real(np.array(d)), J @ as_real(t), rtol=1e-4, atol=1e-4)
    # vjp in MLX's convention: for L = sum(Re(c) Re(y) + Im(c) Im(y)), the
    # cotangent of a complex input is dL/dRe + i dL/dIm.
    c = signal(rng, y.shape, complex_=np.iscomplexobj(y))
    _, (g,) = fx.vjp(fun, [fx.array(x)], [fx.array(c)])
    dl = J.T @ as_real(c)
    want = dl[0::2] + 1j * dl[1::2] if complex_in else dl
    np.testing.assert_allclose(np.array(g).ravel(), want, rtol=1e-4, atol=1e-4)


def test_grad_of_a_loss_through_rfft_and_irfft(rng):
    x = signal(rng, (16,), complex_=False)

    def loss(a):
        return fx.sum(fx.fft.irfft(fx.fft.rfft(a) * fx.array(np.linspace(0, 1, 9).astype(np.float32)), n=16) ** 2)

    g = np.array(fx.grad(loss)(fx.array(x)))
    eps = 1e-2
    fd = np.array(
        [(loss(fx.array(x + eps * e)).item() - loss(fx.array(x - eps * e)).item()) / (2 * eps) for e in np.eye(16, dtype=np.float32)]
    )
    np.testing.assert_allclose(g, fd, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name, kwargs", [("fft", {}), ("rfft", {"n": 6}), ("irfft", {}), ("fft2", {}), ("rfftn", {"axes": [0]})])
@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_matches_a_loop(rng, name, kwargs, in_axis):
    f = getattr(fx.fft, name)
    x = signal(rng, (3, 4, 5), complex_=name != "rfft" and name != "rfftn")
    got = fx.vmap(lambda a: f(a, **kwargs), in_axes=in_axis)(fx.array(x))
    want = np.stack([np.array(f(fx.array(np.take(x, i, axis=in_axis)), **kwargs)) for i in range(x.shape[in_axis])])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# errors (MLX's)
# --------------------------------------------------------------------------


def test_errors(rng):
    x = fx.array(signal(rng, (4, 6)))
    with pytest.raises(ValueError, match="at least one dimension"):
        fx.fft.fft(fx.array(1.0))
    with pytest.raises(ValueError, match="Invalid axis"):
        fx.fft.fft(x, axis=2)
    with pytest.raises(IndexError):
        fx.fft.fft(x, axis=-3)
    with pytest.raises(ValueError, match="Duplicated axis"):
        fx.fft.fftn(x, axes=[0, 0])
    with pytest.raises(ValueError, match="Invalid FFT output size"):
        fx.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="Invalid FFT output size"):
        fx.fft.rfft(x, n=-2)
    with pytest.raises(ValueError, match="Invalid FFT output size"):
        fx.fft.irfft(fx.array(signal(rng, (3, 1))))
    with pytest.raises(ValueError, match="Invalid norm"):
        fx.fft.fft(x, norm="unitary")
    with pytest.raises(ValueError, match="should not be `None`"):
        fx.fft.fftn(x, s=[2, 2])
    with pytest.raises(ValueError, match="different sizes"):
        fx.fft.fftn(x, s=[2], axes=[0, 1])
    with pytest.raises(ValueError, match="greater than 0"):
        fx.fft.fftfreq(0)
    with pytest.raises(ValueError, match="non-zero"):
        fx.fft.rfftfreq(4, 0.0)
    with pytest.raises(ValueError, match="Invalid axis"):
        fx.fft.fftshift(x, axes=[3])


# --------------------------------------------------------------------------
# MLX
# --------------------------------------------------------------------------


@pytest.mark.skipif(not HAVE_MLX, reason="MLX is not installed")
@pytest.mark.parametrize(
    "name, kwargs",
    [("fft", {"n": 7}), ("ifft", {"norm": "ortho"}), ("rfft", {"axis": 0}), ("irfft", {"n": 9}), ("fft2", {"s": [3, 4]}),
     ("irfftn", {"axes": [1, 0]}), ("rfft2", {"norm": "forward"}), ("fftshift", {"axes": 1}), ("ifftshift", {})],
)
def test_agrees_with_mlx(rng, name, kwargs):
    import mlx.core as mx

    x = signal(rng, (6, 8), complex_=name not in ("rfft", "rfft2"))
    got = getattr(fx.fft, name)(fx.array(x), **kwargs)
    want = getattr(mx.fft, name)(mx.array(x), **kwargs)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4, atol=1e-4)
