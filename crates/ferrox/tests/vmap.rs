//! vmap checked against a loop over the batch followed by `stack`.

use ferrox::ops::{self, Index};
use ferrox::{value_and_grad, vjp, vmap, Array, Dtype, Result};

fn uniform(seed: u64, shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            0.5 + 1.5 * ((state >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    Array::from_vec(vals, shape).unwrap()
}

type Fun = fn(&[Array]) -> Result<Array>;

fn take(x: &Array, axis: usize, i: usize) -> Array {
    let mut index = vec![Index::Slice { start: None, stop: None, step: None }; x.ndim()];
    index[axis] = Index::Int(i as i64);
    ops::index(x, &index).unwrap()
}

/// vmap(f) over `in_axes` equals stacking f on each slice.
fn check(name: &str, f: Fun, inputs: &[Array], in_axes: &[Option<isize>]) {
    let norm = |x: &Array, a: isize| a.rem_euclid(x.ndim() as isize) as usize;
    let batch = inputs.iter().zip(in_axes).find_map(|(x, a)| a.map(|a| x.shape()[norm(x, a)])).unwrap();
    let got = vmap(|xs| Ok(vec![f(xs)?]), inputs, in_axes, &[Some(0)]).unwrap_or_else(|e| panic!("{name}: {e}"));
    let rows: Vec<Array> = (0..batch)
        .map(|i| {
            let xs: Vec<Array> =
                inputs.iter().zip(in_axes).map(|(x, a)| a.map_or(x.clone(), |a| take(x, norm(x, a), i))).collect();
            f(&xs).unwrap()
        })
        .collect();
    let want = ops::stack(&rows, 0).unwrap();
    assert_eq!(got[0].shape(), want.shape(), "{name}: shape");
    assert_eq!(got[0].dtype(), want.dtype(), "{name}: dtype");
    let (g, w) = (
        got[0].astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap(),
        want.astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap(),
    );
    for (k, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{name}: element {k}: {a} vs {b}");
    }
}

#[test]
fn every_primitive_batches_like_a_loop() {
    let x = uniform(1, &[3, 4, 5]);
    let cases: Vec<(&str, Fun)> = vec![
        ("exp", |x| ops::exp(&x[0])),
        ("negative", |x| ops::negative(&x[0])),
        ("astype", |x| ops::astype(&x[0], Dtype::F32)),
        ("sum", |x| ops::sum(&x[0], Some(&[-1]), false)),
        ("max keepdims", |x| ops::max(&x[0], Some(&[0]), true)),
        ("mean all", |x| ops::mean(&x[0], None, false)),
        ("argmax", |x| ops::argmax(&x[0], Some(1), false)),
        ("reshape", |x| ops::reshape(&x[0], &[-1])),
        ("transpose", |x| ops::transpose(&x[0], None)),
        ("slice", |x| ops::index(&x[0], &[Index::Slice { start: None, stop: None, step: Some(-2) }, Index::Int(1)])),
        ("broadcast_to", |x| ops::broadcast_to(&x[0], &[&[2], x[0].shape()].concat())),
        ("expand_dims", |x| ops::expand_dims(&x[0], &[0])),
        ("matmul", |x| ops::matmul(&x[0], &ops::transpose(&x[0], None)?)),
        ("matvec", |x| ops::matmul(&x[0], &ops::index(&x[0], &[Index::Int(0)])?)),
        ("where", |x| ops::where_(&ops::greater(&x[0], &(&x[0] * 0.0)?)?, &x[0], &(&x[0] * 2.0)?)),
        ("concatenate", |x| ops::concatenate(&[x[0].clone(), x[0].clone()], -1)),
        ("stack", |x| ops::stack(&[x[0].clone(), x[0].clone()], 0)),
        ("scalar constant", |x| &x[0] + 1.5),
        ("full", |x| ops::add(&x[0], &ops::ones(&x[0].shape()[x[0].ndim() - 1..], Dtype::F64)?)),
    ];
    for axis in [0isize, 1, -1] {
        for (name, f) in &cases {
            check(name, *f, std::slice::from_ref(&x), &[Some(axis)]);
        }
    }
}

#[test]
fn binary_ops_batch_with_unbatched_and_lower_rank_operands() {
    let a = uniform(2, &[3, 4]);
    let b = uniform(3, &[4]);
    let cases: Vec<(&str, Fun)> = vec![
        ("add", |x| ops::add(&x[0], &x[1])),
        ("divide", |x| ops::divide(&x[0], &x[1])),
        ("power", |x| ops::power(&x[0], &x[1])),
        ("maximum", |x| ops::maximum(&x[0], &x[1])),
        ("less", |x| ops::less(&x[0], &x[1])),
    ];
    for (name, f) in &cases {
        check(name, *f, &[a.clone(), b.clone()], &[Some(0), None]);
        check(name, *f, &[a.clone(), b.clone()], &[Some(1), Some(0)]);
        let b2 = uniform(4, &[3, 4]);
        check(name, *f, &[a.clone(), b2], &[None, Some(0)]);
    }
    let m = uniform(5, &[2, 4, 3]);
    check("batched matmul", |x| ops::matmul(&x[0], &x[1]), &[uniform(6, &[2, 3, 4]), m.clone()], &[Some(0), Some(0)]);
    check("unbatched matmul", |x| ops::matmul(&x[0], &x[1]), &[uniform(7, &[3, 4]), m], &[None, Some(0)]);
}

#[test]
fn nested_vmap_and_vmap_of_grad_compose() -> Result<()> {
    let x = uniform(8, &[2, 3, 4]);
    // vmap(vmap(sum)) over the first two axes = sum over the last.
    let out = vmap(
        |xs| vmap(|ys| Ok(vec![ops::sum(&ys[0], None, false)?]), xs, &[Some(0)], &[Some(0)]),
        std::slice::from_ref(&x),
        &[Some(0)],
        &[Some(0)],
    )?;
    assert_eq!(out[0].to_vec::<f64>()?, ops::sum(&x, Some(&[2]), false)?.to_vec::<f64>()?);
    // Per-example gradients of sum(sin(v)): cos(v).
    let grads = vmap(
        |xs| {
            let (_, g) = value_and_grad(|a| Ok(vec![ops::sum(&ops::sin(&a[0])?, None, false)?]), xs, &[0])?;
            Ok(g)
        },
        std::slice::from_ref(&x),
        &[Some(1)],
        &[Some(1)],
    )?;
    let want = ops::cos(&x)?.to_vec::<f64>()?;
    for (a, b) in grads[0].to_vec::<f64>()?.iter().zip(&want) {
        assert!((a - b).abs() < 1e-12);
    }
    // Gradient through a vmapped function.
    let (_, g) = vjp(
        |xs| vmap(|ys| Ok(vec![ops::sum(&ops::multiply(&ys[0], &ys[0])?, None, false)?]), xs, &[Some(0)], &[Some(0)]),
        std::slice::from_ref(&x),
        &[ops::ones(&[2], Dtype::F64)?],
    )?;
    assert_eq!(g[0].to_vec::<f64>()?, (&x * 2.0)?.to_vec::<f64>()?);
    Ok(())
}

#[test]
fn vmap_rejects_bad_axes_and_inputs() {
    let x = uniform(9, &[2, 3]);
    let id = |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![xs[0].clone()]) };
    assert!(vmap(id, std::slice::from_ref(&x), &[Some(2)], &[Some(0)])
        .unwrap_err()
        .to_string()
        .contains("out of bounds"));
    assert!(vmap(id, &[Array::scalar(1.0f32)], &[Some(0)], &[Some(0)]).unwrap_err().to_string().contains("scalar"));
    assert!(vmap(id, std::slice::from_ref(&x), &[None], &[Some(0)]).unwrap_err().to_string().contains("non-None"));
    let y = uniform(10, &[3, 3]);
    assert!(vmap(|xs| Ok(vec![ops::add(&xs[0], &xs[1])?]), &[x.clone(), y], &[Some(0), Some(0)], &[Some(0)]).is_err());
    assert!(vmap(id, &[x], &[Some(0)], &[Some(5)]).unwrap_err().to_string().contains("out of bounds"));
}
