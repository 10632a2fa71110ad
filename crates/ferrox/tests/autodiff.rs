//! Derivatives of every differentiable op checked against central finite
//! differences in float64, in reverse (vjp) and forward (jvp) mode.

use ferrox::ops::{self, Index};
use ferrox::{jvp, value_and_grad, vjp, Array, Dtype, Result};

/// Deterministic pseudo-random values in [lo, hi).
fn uniform(seed: u64, shape: &[usize], lo: f64, hi: f64) -> Array {
    let n: usize = shape.iter().product();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    Array::from_vec(vals, shape).unwrap()
}

type Fun = fn(&[Array]) -> Result<Array>;

/// Checks vjp and jvp of `f` at `inputs` against finite differences of
/// `<w, f(x)>` for a random weight `w`.
fn check(name: &str, f: Fun, inputs: &[Array]) {
    let eps = 1e-6;
    let out = f(inputs).unwrap();
    let w = uniform(99, out.shape(), -1.0, 1.0);
    let scalar = |xs: &[Array]| -> f64 {
        ops::sum(&ops::multiply(&f(xs).unwrap(), &w).unwrap(), None, false).unwrap().item::<f64>().unwrap()
    };
    let (_, grads) = vjp(|xs| Ok(vec![f(xs)?]), inputs, std::slice::from_ref(&w)).unwrap();
    let tangents: Vec<Array> =
        inputs.iter().enumerate().map(|(i, x)| uniform(7 + i as u64, x.shape(), -1.0, 1.0)).collect();
    let (_, jvps) = jvp(|xs| Ok(vec![f(xs)?]), inputs, &tangents).unwrap();
    let jvp_dot = ops::sum(&ops::multiply(&jvps[0], &w).unwrap(), None, false).unwrap().item::<f64>().unwrap();
    let mut fd_dir = 0.0;
    for (i, x) in inputs.iter().enumerate() {
        let base = x.to_vec::<f64>().unwrap();
        let g = grads[i].astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap();
        let t = tangents[i].to_vec::<f64>().unwrap();
        assert_eq!(grads[i].shape(), x.shape(), "{name}: gradient shape of input {i}");
        for k in 0..base.len() {
            let at = |delta: f64| {
                let mut v = base.clone();
                v[k] += delta;
                let mut xs = inputs.to_vec();
                xs[i] = Array::from_vec(v, x.shape()).unwrap();
                scalar(&xs)
            };
            let fd = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!((fd - g[k]).abs() <= 1e-5 * (1.0 + fd.abs()), "{name}: d/dx{i}[{k}] vjp {} vs fd {fd}", g[k]);
            fd_dir += fd * t[k];
        }
    }
    assert!((fd_dir - jvp_dot).abs() <= 1e-5 * (1.0 + fd_dir.abs()), "{name}: jvp {jvp_dot} vs fd {fd_dir}");
}

fn unary_cases() -> Vec<(&'static str, Fun)> {
    vec![
        ("negative", |x| ops::negative(&x[0])),
        ("abs", |x| ops::abs(&x[0])),
        ("exp", |x| ops::exp(&x[0])),
        ("log", |x| ops::log(&x[0])),
        ("sqrt", |x| ops::sqrt(&x[0])),
        ("sin", |x| ops::sin(&x[0])),
        ("cos", |x| ops::cos(&x[0])),
        ("tanh", |x| ops::tanh(&x[0])),
        ("sigmoid", |x| ops::sigmoid(&x[0])),
        ("sum axis", |x| ops::sum(&x[0], Some(&[1]), false)),
        ("sum all", |x| ops::sum(&x[0], None, true)),
        ("mean", |x| ops::mean(&x[0], Some(&[0]), false)),
        ("prod", |x| ops::prod(&x[0], Some(&[1]), false)),
        ("max", |x| ops::max(&x[0], Some(&[0]), false)),
        ("min", |x| ops::min(&x[0], None, false)),
        ("reshape", |x| ops::reshape(&x[0], &[4, 3])),
        ("transpose", |x| ops::transpose(&x[0], None)),
        ("slice", |x| ops::index(&x[0], &[Index::Slice { start: Some(2), stop: None, step: Some(-2) }, Index::Int(1)])),
        ("broadcast_to", |x| ops::broadcast_to(&x[0], &[2, 3, 4])),
        ("expand+squeeze", |x| ops::squeeze(&ops::expand_dims(&x[0], &[0, 2])?, Some(&[0]))),
        ("argmax (no gradient)", |x| ops::add(&ops::astype(&ops::argmax(&x[0], Some(0), true)?, Dtype::F64)?, &x[0])),
    ]
}

#[test]
fn unary_and_shape_ops_match_finite_differences() {
    let x = uniform(1, &[3, 4], 0.5, 2.0);
    for (name, f) in unary_cases() {
        check(name, f, std::slice::from_ref(&x));
    }
}

#[test]
fn binary_ops_match_finite_differences_with_broadcasting() {
    let a = uniform(2, &[3, 4], 0.5, 2.0);
    let b = uniform(3, &[4], 0.5, 2.0);
    let cases: Vec<(&str, Fun)> = vec![
        ("add", |x| ops::add(&x[0], &x[1])),
        ("subtract", |x| ops::subtract(&x[0], &x[1])),
        ("multiply", |x| ops::multiply(&x[0], &x[1])),
        ("divide", |x| ops::divide(&x[0], &x[1])),
        ("power", |x| ops::power(&x[0], &x[1])),
        ("maximum", |x| ops::maximum(&x[0], &x[1])),
        ("minimum", |x| ops::minimum(&x[0], &x[1])),
        ("where", |x| ops::where_(&ops::greater(&x[0], &x[1])?, &x[0], &x[1])),
        ("matmul", |x| ops::matmul(&x[0], &ops::reshape(&x[1], &[4, 1])?)),
        ("concatenate", |x| ops::concatenate(&[x[0].clone(), ops::reshape(&x[1], &[1, 4])?], 0)),
        ("stack", |x| ops::stack(&[x[0].clone(), ops::broadcast_to(&x[1], &[3, 4])?], 1)),
        ("same input twice", |x| ops::multiply(&x[0], &x[0])),
    ];
    for (name, f) in cases {
        check(name, f, &[a.clone(), b.clone()]);
    }
}

#[test]
fn batched_matmul_gradients_reduce_broadcast_batches() {
    let a = uniform(4, &[2, 3, 4], -1.0, 1.0);
    let b = uniform(5, &[4, 2], -1.0, 1.0);
    check("batched matmul", |x| ops::matmul(&x[0], &x[1]), &[a, b]);
    let v = uniform(6, &[4], -1.0, 1.0);
    let m = uniform(8, &[3, 4], -1.0, 1.0);
    check("matrix-vector", |x| ops::matmul(&x[0], &x[1]), &[m, v]);
}

#[test]
fn astype_passes_gradients_back_in_the_input_dtype() -> Result<()> {
    // Finite differences through float32 are too coarse: check exactly.
    let x = uniform(3, &[2, 2], -1.0, 1.0);
    let (_, g) =
        vjp(|xs| Ok(vec![(&ops::astype(&xs[0], Dtype::F32)? * 3.0)?]), &[x], &[ops::ones(&[2, 2], Dtype::F32)?])?;
    assert_eq!(g[0].dtype(), Dtype::F64);
    assert_eq!(g[0].to_vec::<f64>()?, vec![3.0; 4]);
    Ok(())
}

#[test]
fn stop_gradient_blocks_derivatives() -> Result<()> {
    let x = uniform(5, &[3], -1.0, 1.0);
    let (_, g) = vjp(
        |xs| Ok(vec![ops::multiply(&xs[0], &ops::stop_gradient(&xs[0])?)?]),
        std::slice::from_ref(&x),
        &[ops::ones_like(&x)?],
    )?;
    assert_eq!(g[0].to_vec::<f64>()?, x.to_vec::<f64>()?);
    Ok(())
}

#[test]
fn second_derivatives_compose() -> Result<()> {
    // d²/dx² x³ = 6x, by differentiating the gradient function.
    let x = Array::from_slice(&[0.5f64, 2.0, -1.0], &[3])?;
    let cube =
        |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![ops::multiply(&ops::multiply(&xs[0], &xs[0])?, &xs[0])?]) };
    let grad_sum = |xs: &[Array]| -> Result<Vec<Array>> {
        let (_, g) = vjp(cube, xs, &[ops::ones_like(&xs[0])?])?;
        Ok(vec![g[0].clone()])
    };
    let (_, g2) = vjp(grad_sum, std::slice::from_ref(&x), &[ops::ones_like(&x)?])?;
    assert_eq!(g2[0].to_vec::<f64>()?, vec![3.0, 12.0, -6.0]);
    Ok(())
}

#[test]
fn value_and_grad_takes_argnums_and_checks_the_loss() -> Result<()> {
    let w = Array::from_slice(&[1.0f32, 2.0], &[2])?;
    let x = Array::from_slice(&[3.0f32, 4.0], &[2])?;
    let loss = |a: &[Array]| -> Result<Vec<Array>> { Ok(vec![ops::sum(&ops::multiply(&a[0], &a[1])?, None, false)?]) };
    let (value, grads) = value_and_grad(loss, &[w.clone(), x.clone()], &[1])?;
    assert_eq!(value[0].item::<f32>()?, 11.0);
    assert_eq!(grads.len(), 1);
    assert_eq!(grads[0].to_vec::<f32>()?, vec![1.0, 2.0]);
    let not_scalar = value_and_grad(|a| Ok(vec![a[0].clone()]), std::slice::from_ref(&w), &[0]);
    assert!(not_scalar.unwrap_err().to_string().contains("scalar"));
    assert!(value_and_grad(loss, &[w, x], &[2]).is_err());
    Ok(())
}

#[test]
fn evaluating_inside_a_traced_function_keeps_the_graph() -> Result<()> {
    let x = Array::from_slice(&[2.0f64], &[])?;
    let (_, g) = vjp(
        |xs| {
            let y = ops::exp(&xs[0])?;
            y.eval()?; // e.g. a print inside the function
            Ok(vec![ops::multiply(&y, &xs[0])?])
        },
        std::slice::from_ref(&x),
        &[ops::ones_like(&x)?],
    )?;
    let want = 3.0 * 2.0f64.exp();
    assert!((g[0].item::<f64>()? - want).abs() < 1e-9);
    Ok(())
}
