//! Activations against float64 references, MLX's result dtypes, stability
//! at extreme inputs, and gradients against finite differences.

use ferrox::{ops, vjp, Array, Dtype, Error};
use ferrox_nn::functions as f;

/// Deterministic values in [lo, hi).
fn values(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

#[test]
fn elementwise_activations_match_float64_formulas() {
    let xs = values(1, 64, -6.0, 6.0);
    let x = Array::from_slice(&xs, &[8, 8]).unwrap();
    type Case = (&'static str, fn(&Array) -> ferrox::Result<Array>, fn(f64) -> f64);
    let cases: Vec<Case> = vec![
        ("relu", f::relu, |v| v.max(0.0)),
        ("relu2", f::relu2, |v| v.max(0.0).powi(2)),
        ("relu6", f::relu6, |v| v.clamp(0.0, 6.0)),
        ("sigmoid", f::sigmoid, |v| 1.0 / (1.0 + (-v).exp())),
        ("silu", f::silu, |v| v / (1.0 + (-v).exp())),
        ("softplus", f::softplus, softplus),
        ("log_sigmoid", f::log_sigmoid, |v| -softplus(-v)),
        ("softsign", f::softsign, |v| v / (1.0 + v.abs())),
        ("mish", f::mish, |v| v * softplus(v).tanh()),
        ("hardswish", f::hardswish, |v| v * (v + 3.0).clamp(0.0, 6.0) / 6.0),
        ("tanh", f::tanh, f64::tanh),
        ("selu", f::selu, |v| 1.0507 * if v > 0.0 { v } else { 1.67326 * v.exp_m1() }),
        ("gelu_approx", f::gelu_approx, |v| {
            0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3))).tanh())
        }),
        ("gelu_fast_approx", f::gelu_fast_approx, |v| v / (1.0 + (-1.702 * v).exp())),
    ];
    for (name, fun, reference) in cases {
        let out = fun(&x).unwrap();
        assert_eq!(out.shape(), &[8, 8], "{name}");
        assert_eq!(out.dtype(), Dtype::F64, "{name}");
        let want: Vec<f64> = xs.iter().map(|&v| reference(v)).collect();
        close(&out.to_vec::<f64>().unwrap(), &want, 1e-12, name);
    }
    // gelu against erf values from a table (erf(1/sqrt 2), erf(2/sqrt 2)).
    let g = f::gelu(&Array::from_slice(&[1.0f64, -2.0], &[2]).unwrap()).unwrap();
    close(&g.to_vec::<f64>().unwrap(), &[0.5 * (1.0 + 0.682689492137086), -(1.0 - 0.954499736103642)], 1e-12, "gelu");
}

#[test]
fn parameterized_activations() {
    let xs = [-3.0f64, -0.75, -0.25, 0.0, 0.25, 0.75, 3.0];
    let x = Array::from_slice(&xs, &[7]).unwrap();
    let run = |a: ferrox::Result<Array>| a.unwrap().to_vec::<f64>().unwrap();
    let map = |g: &dyn Fn(f64) -> f64| xs.iter().map(|&v| g(v)).collect::<Vec<_>>();
    close(&run(f::leaky_relu(&x, 0.1)), &map(&|v| if v > 0.0 { v } else { 0.1 * v }), 1e-15, "leaky_relu");
    close(&run(f::elu(&x, 2.0)), &map(&|v| if v > 0.0 { v } else { 2.0 * v.exp_m1() }), 1e-12, "elu");
    close(&run(f::celu(&x, 0.5)), &map(&|v| v.max(0.0) + 0.5 * ((v.min(0.0) / 0.5).exp() - 1.0)), 1e-12, "celu");
    close(
        &run(f::softshrink(&x, 0.5)),
        &map(&|v| if v.abs() > 0.5 { v - v.signum() * 0.5 } else { 0.0 }),
        0.0,
        "softshrink",
    );
    close(&run(f::hard_shrink(&x, 0.5)), &map(&|v| if v.abs() > 0.5 { v } else { 0.0 }), 0.0, "hard_shrink");
    close(&run(f::hard_tanh(&x, -0.5, 1.0)), &map(&|v| v.clamp(-0.5, 1.0)), 0.0, "hard_tanh");
    let alpha = Array::from_slice(&[0.25f64], &[1]).unwrap();
    close(&run(f::prelu(&x, &alpha)), &map(&|v| if v > 0.0 { v } else { 0.25 * v }), 0.0, "prelu");
    let s = f::step(&x, 0.25).unwrap();
    assert_eq!(s.dtype(), Dtype::I32);
    assert_eq!(s.to_vec::<i32>().unwrap(), vec![0, 0, 0, 0, 1, 1, 1]);
}

#[test]
fn result_dtypes_follow_mlx() {
    let ints = Array::from_slice(&[-2i32, 0, 3], &[3]).unwrap();
    assert_eq!(f::relu(&ints).unwrap().to_vec::<i32>().unwrap(), vec![0, 0, 3]);
    assert_eq!(f::relu6(&ints).unwrap().dtype(), Dtype::F32);
    assert_eq!(f::hard_shrink(&ints, 0.5).unwrap().dtype(), Dtype::I32);
    assert_eq!(f::elu(&ints, 1.0).unwrap().dtype(), Dtype::F32);
    let half = Array::from_slice(&[-1.0f32, 2.0], &[2]).unwrap().astype(Dtype::F16).unwrap();
    for out in [f::gelu(&half), f::leaky_relu(&half, 0.01), f::log_softmax(&half, &[-1]), f::hardswish(&half)] {
        assert_eq!(out.unwrap().dtype(), Dtype::F16);
    }
    assert_eq!(f::step(&half, 0.0).unwrap().dtype(), Dtype::I32);
}

#[test]
fn stable_forms_do_not_overflow() {
    let x = Array::from_slice(&[-1000.0f32, -100.0, 100.0, 1000.0], &[4]).unwrap();
    let sp = f::softplus(&x).unwrap().to_vec::<f32>().unwrap();
    assert_eq!((sp[0], sp[2], sp[3]), (0.0, 100.0, 1000.0));
    assert!(sp[1] > 0.0 && sp[1] < 1e-43, "softplus(-100) = {}", sp[1]);
    let ls = f::log_sigmoid(&x).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(ls[0], -1000.0);
    assert_eq!(ls[3], 0.0);
    // log_softmax of large logits keeps their differences.
    let logits = Array::from_slice(&[1.0e4f32, 1.0e4 + 1.0, 1.0e4 + 2.0], &[1, 3]).unwrap();
    let out = f::log_softmax(&logits, &[-1]).unwrap().to_vec::<f32>().unwrap();
    let lse = (1.0f64 + (-1.0f64).exp() + (-2.0f64).exp()).ln();
    close(&out.iter().map(|&v| v as f64).collect::<Vec<_>>(), &[-2.0 - lse, -1.0 - lse, -lse], 1e-6, "log_softmax");
}

#[test]
fn softmax_family_and_glu_along_axes() {
    let xs = values(2, 12, -3.0, 3.0);
    let x = Array::from_slice(&xs, &[3, 4]).unwrap();
    let sm = f::softmax(&x, &[0]).unwrap().to_vec::<f64>().unwrap();
    let smin = f::softmin(&x, &[0]).unwrap().to_vec::<f64>().unwrap();
    let lsm = f::log_softmax(&x, &[0]).unwrap().to_vec::<f64>().unwrap();
    for c in 0..4 {
        let col: Vec<f64> = (0..3).map(|r| xs[r * 4 + c]).collect();
        let z: f64 = col.iter().map(|v| v.exp()).sum();
        let zn: f64 = col.iter().map(|v| (-v).exp()).sum();
        for r in 0..3 {
            close(
                &[sm[r * 4 + c], smin[r * 4 + c], lsm[r * 4 + c]],
                &[col[r].exp() / z, (-col[r]).exp() / zn, col[r] - z.ln()],
                1e-12,
                "softmax family",
            );
        }
    }
    let g = f::glu(&x, -1).unwrap();
    assert_eq!(g.shape(), &[3, 2]);
    let want: Vec<f64> = (0..3)
        .flat_map(|r| (0..2).map(move |c| (r, c)))
        .map(|(r, c)| xs[r * 4 + c] / (1.0 + (-xs[r * 4 + c + 2]).exp()))
        .collect();
    close(&g.to_vec::<f64>().unwrap(), &want, 1e-12, "glu");
    assert!(matches!(f::glu(&x, 0), Err(Error::InvalidArgument { op: "glu", .. })));
    assert!(matches!(f::glu(&x, 2), Err(Error::AxisOutOfRange { op: "glu", .. })));
}

#[test]
fn gradients_match_finite_differences() {
    let xs = values(3, 10, -3.0, 3.0);
    type Fun = fn(&Array) -> ferrox::Result<Array>;
    let cases: Vec<(&str, Fun, [usize; 2])> = vec![
        ("silu", f::silu, [2, 5]),
        ("mish", f::mish, [2, 5]),
        ("gelu", f::gelu, [2, 5]),
        ("gelu_approx", f::gelu_approx, [2, 5]),
        ("log_sigmoid", f::log_sigmoid, [2, 5]),
        ("softplus", f::softplus, [2, 5]),
        ("selu", f::selu, [2, 5]),
        ("log_softmax", |x| f::log_softmax(x, &[-1]), [2, 5]),
        ("softmin", |x| f::softmin(x, &[-1]), [2, 5]),
        ("glu", |x| f::glu(x, -1), [5, 2]),
    ];
    for (name, fun, shape) in cases {
        let x = Array::from_slice(&xs, &shape).unwrap();
        let out = fun(&x).unwrap();
        let w = Array::from_vec(values(4, out.size(), -1.0, 1.0), out.shape()).unwrap();
        let (_, grads) = vjp(|a| Ok(vec![fun(&a[0])?]), std::slice::from_ref(&x), std::slice::from_ref(&w)).unwrap();
        let g = grads[0].to_vec::<f64>().unwrap();
        let objective = |v: Vec<f64>| -> f64 {
            let y = fun(&Array::from_vec(v, x.shape()).unwrap()).unwrap();
            ops::sum(&ops::multiply(&y, &w).unwrap(), None, false).unwrap().item::<f64>().unwrap()
        };
        for k in 0..xs.len() {
            let eps = 1e-6;
            let (mut up, mut down) = (xs.clone(), xs.clone());
            up[k] += eps;
            down[k] -= eps;
            let fd = (objective(up) - objective(down)) / (2.0 * eps);
            assert!((fd - g[k]).abs() <= 1e-6 * (1.0 + fd.abs()), "{name}: d/dx[{k}] {} vs fd {fd}", g[k]);
        }
    }
}
