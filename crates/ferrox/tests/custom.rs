//! custom_function rules and checkpoint.

use ferrox::{checkpoint, jvp, ops, value_and_grad, vjp, vmap, Array, CustomFunction, Dtype, Result};
use std::sync::Arc;

fn square() -> CustomFunction {
    CustomFunction::new(|x| Ok(vec![ops::multiply(&x[0], &x[0])?]))
}

#[test]
fn custom_rules_replace_derived_ones() -> Result<()> {
    let mut f = square();
    f.vjp = Some(Arc::new(|_, cot, _| Ok(vec![(&cot[0] * 3.0)?])));
    f.jvp = Some(Arc::new(|_, tan| Ok(vec![(&tan[0] * 5.0)?])));
    f.vmap = Some(Arc::new(|x, axes| Ok((vec![(&x[0] * 7.0)?], vec![axes[0]]))));
    let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
    assert_eq!(f.call(std::slice::from_ref(&x))?[0].to_vec::<f32>()?, vec![1.0, 4.0]);
    let g = f.clone();
    let (_, grads) = vjp(move |a| g.call(a), std::slice::from_ref(&x), &[ops::ones(&[2], Dtype::F32)?])?;
    assert_eq!(grads[0].to_vec::<f32>()?, vec![3.0, 3.0]);
    let g = f.clone();
    let (_, tans) = jvp(move |a| g.call(a), std::slice::from_ref(&x), &[ops::ones(&[2], Dtype::F32)?])?;
    assert_eq!(tans[0].to_vec::<f32>()?, vec![5.0, 5.0]);
    let batch = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    let out = vmap(move |a| f.call(a), &[batch], &[Some(0)], &[Some(0)])?;
    assert_eq!(out[0].to_vec::<f32>()?, vec![7.0, 14.0, 21.0, 28.0]);
    Ok(())
}

#[test]
fn missing_rules_are_derived_from_the_forward_function() -> Result<()> {
    let f = square();
    let x = Array::from_slice(&[1.0f64, -2.0], &[2])?;
    let g = f.clone();
    let (_, grads) = vjp(move |a| g.call(a), std::slice::from_ref(&x), &[ops::ones_like(&x)?])?;
    assert_eq!(grads[0].to_vec::<f64>()?, vec![2.0, -4.0]);
    let batch = Array::from_slice(&[1.0f64, 2.0, 3.0], &[3, 1])?;
    let out = vmap(move |a| f.call(a), &[batch], &[Some(0)], &[Some(0)])?;
    assert_eq!(out[0].to_vec::<f64>()?, vec![1.0, 4.0, 9.0]);
    Ok(())
}

#[test]
fn a_custom_vjp_hides_the_forward_derivative() -> Result<()> {
    // log(x) at 0 has an infinite derivative; the custom rule says 0.
    let mut f = CustomFunction::new(|x| Ok(vec![ops::log(&x[0])?]));
    f.vjp = Some(Arc::new(|p, _, _| Ok(vec![ops::zeros_like(&p[0])?])));
    let x = Array::from_slice(&[0.0f32, 1.0], &[2])?;
    let (_, grads) = vjp(move |a| f.call(a), std::slice::from_ref(&x), &[ops::ones_like(&x)?])?;
    assert_eq!(grads[0].to_vec::<f32>()?, vec![0.0, 0.0]);
    Ok(())
}

#[test]
fn checkpoint_matches_plain_gradients() -> Result<()> {
    let block = |x: &[Array]| -> Result<Vec<Array>> { Ok(vec![ops::tanh(&ops::matmul(&x[0], &x[1])?)?]) };
    let w = Array::from_slice(&[0.5f64, -1.0, 2.0, 0.25], &[2, 2])?;
    let x = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
    let loss = |y: Vec<Array>| -> Result<Vec<Array>> { Ok(vec![ops::sum(&y[0], None, false)?]) };
    let (_, plain) = value_and_grad(|a| loss(block(a)?), &[x.clone(), w.clone()], &[0, 1])?;
    let ck = checkpoint(block);
    let (_, recomputed) = value_and_grad(move |a| loss(ck.call(a)?), &[x, w], &[0, 1])?;
    for (p, r) in plain.iter().zip(&recomputed) {
        assert_eq!(p.to_vec::<f64>()?, r.to_vec::<f64>()?);
    }
    Ok(())
}
