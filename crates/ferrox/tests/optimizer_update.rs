//! The fused optimizer step against a float64 transcription of MLX's
//! optimizer formulas, over several steps, every rule and real float dtype,
//! with strided and broadcast inputs; its errors and its batching rule.

use ferrox::backend::UpdateRule;
use ferrox::ops::{self, optimizer_update};
use ferrox::{value_and_grad, vmap, Array, Dtype};

fn values(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// MLX's formulas in float64, written out separately from the kernels:
/// returns the new parameter; `s` holds the states.
fn reference(rule: &UpdateRule, lr: f64, t: f64, p: f64, g: f64, s: &mut [f64]) -> f64 {
    match *rule {
        UpdateRule::Sgd { momentum, weight_decay, dampening, nesterov } => {
            let g = g + weight_decay * p;
            if momentum <= 0.0 {
                return p - lr * g;
            }
            s[0] = momentum * s[0] + if dampening > 0.0 { (1.0 - dampening) * g } else { g };
            p - lr * if nesterov { g + momentum * s[0] } else { s[0] }
        }
        UpdateRule::RmsProp { alpha, eps } => {
            s[0] = alpha * s[0] + (1.0 - alpha) * g * g;
            p - lr * g / (s[0].sqrt() + eps)
        }
        UpdateRule::Adagrad { eps } => {
            s[0] += g * g;
            p - lr * g / (s[0].sqrt() + eps)
        }
        UpdateRule::AdaDelta { rho, eps } => {
            s[0] = rho * s[0] + (1.0 - rho) * g * g;
            let d = (s[1] + eps).sqrt() / (s[0] + eps).sqrt() * g;
            s[1] = rho * s[1] + (1.0 - rho) * d * d;
            p - lr * d
        }
        UpdateRule::Adam { beta1, beta2, eps, weight_decay, bias_correction } => {
            let p = p * (1.0 - lr * weight_decay);
            s[0] = beta1 * s[0] + (1.0 - beta1) * g;
            s[1] = beta2 * s[1] + (1.0 - beta2) * g * g;
            if bias_correction {
                let c1 = lr / (1.0 - beta1.powf(t));
                let c2 = 1.0 / (1.0 - beta2.powf(t)).sqrt();
                p - c1 * s[0] / (s[1].sqrt() * c2 + eps)
            } else {
                p - lr * s[0] / (s[1].sqrt() + eps)
            }
        }
        UpdateRule::Adamax { beta1, beta2, eps } => {
            s[0] = beta1 * s[0] + (1.0 - beta1) * g;
            s[1] = (beta2 * s[1]).max(g.abs());
            p - lr * s[0] / (s[1] + eps)
        }
        UpdateRule::Lion { beta1, beta2, weight_decay } => {
            let c = beta1 * s[0] + (1.0 - beta1) * g;
            s[0] = beta2 * s[0] + (1.0 - beta2) * g;
            let p = if weight_decay > 0.0 { (1.0 - lr * weight_decay) * p } else { p };
            p - lr
                * if c > 0.0 {
                    1.0
                } else if c < 0.0 {
                    -1.0
                } else {
                    0.0
                }
        }
    }
}

fn rules() -> Vec<UpdateRule> {
    vec![
        UpdateRule::Sgd { momentum: 0.0, weight_decay: 0.0, dampening: 0.0, nesterov: false },
        UpdateRule::Sgd { momentum: 0.9, weight_decay: 0.01, dampening: 0.0, nesterov: true },
        UpdateRule::Sgd { momentum: 0.5, weight_decay: 0.0, dampening: 0.25, nesterov: false },
        UpdateRule::RmsProp { alpha: 0.99, eps: 1e-8 },
        UpdateRule::Adagrad { eps: 1e-8 },
        UpdateRule::AdaDelta { rho: 0.9, eps: 1e-6 },
        UpdateRule::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0, bias_correction: false },
        UpdateRule::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01, bias_correction: true },
        UpdateRule::Adamax { beta1: 0.9, beta2: 0.999, eps: 1e-8 },
        UpdateRule::Lion { beta1: 0.9, beta2: 0.99, weight_decay: 0.1 },
    ]
}

fn to_f64(x: &Array) -> Vec<f64> {
    x.astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap()
}

/// Three steps of every rule on a (7, 9) parameter whose gradient is a
/// transposed (strided) array, against the float64 reference run on the
/// same rounded inputs.
#[test]
fn every_rule_matches_the_reference_over_steps() {
    let (rows, cols) = (7usize, 9usize);
    let n = rows * cols;
    for dtype in [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::BF16] {
        let tol = match dtype {
            Dtype::F64 => 1e-12,
            Dtype::F32 => 2e-6,
            _ => 1e-2,
        };
        for (r, rule) in rules().iter().enumerate() {
            let k = rule.state_names().len();
            let mut param =
                Array::from_vec(values(r as u64, n, -1.0, 1.0), &[rows, cols]).unwrap().astype(dtype).unwrap();
            let mut states: Vec<Array> = (0..k).map(|_| ops::zeros(&[rows, cols], dtype).unwrap()).collect();
            let mut want_p = to_f64(&param);
            let mut want_s = vec![vec![0.0; k]; n];
            let lr = Array::scalar(0.05f32);
            for t in 1..=3u32 {
                let g_t = Array::from_vec(values(100 * t as u64 + r as u64, n, -2.0, 2.0), &[cols, rows])
                    .unwrap()
                    .astype(dtype)
                    .unwrap();
                let grad = g_t.transpose(None).unwrap();
                let g = to_f64(&grad);
                for i in 0..n {
                    want_p[i] = reference(rule, 0.05f32 as f64, t as f64, want_p[i], g[i], &mut want_s[i]);
                }
                let step = Array::scalar(t as f32);
                let out = optimizer_update(*rule, &param, &grad, &states, &lr, &step).unwrap();
                assert_eq!(out.len(), k + 1);
                for o in &out {
                    assert_eq!((o.shape(), o.dtype()), (&[rows, cols][..], dtype), "{rule:?}");
                }
                param = out[0].clone();
                states = out[1..].to_vec();
                // Compare, then continue from the kernel's rounded values.
                let got_p = to_f64(&param);
                for i in 0..n {
                    let scale = 1.0 + want_p[i].abs();
                    assert!(
                        (got_p[i] - want_p[i]).abs() <= tol * scale,
                        "{rule:?} {dtype} step {t} p[{i}]: {} vs {}",
                        got_p[i],
                        want_p[i]
                    );
                }
                want_p = got_p;
                for (j, st) in states.iter().enumerate() {
                    let got = to_f64(st);
                    for i in 0..n {
                        let w = want_s[i][j];
                        assert!(
                            (got[i] - w).abs() <= tol * (1.0 + w.abs()),
                            "{rule:?} {dtype} step {t} state {j}[{i}]: {} vs {w}",
                            got[i]
                        );
                        want_s[i][j] = got[i];
                    }
                }
            }
        }
    }
}

/// Broadcast gradients and states, other gradient dtypes, empty and 0-d
/// parameters, and a learning rate given as a 1-element float64 array.
#[test]
fn inputs_of_any_layout_and_shape() {
    let rule = UpdateRule::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0, bias_correction: false };
    let p = Array::from_vec(values(1, 12, -1.0, 1.0), &[3, 4]).unwrap().astype(Dtype::F32).unwrap();
    let g = Array::from_vec(vec![0.5f64, -0.25, 1.0, 2.0], &[4]).unwrap().broadcast_to(&[3, 4]).unwrap();
    let zero = ops::zeros(&[1], Dtype::F32).unwrap().broadcast_to(&[3, 4]).unwrap();
    let lr = Array::from_vec(vec![0.1f64], &[1]).unwrap();
    let out = optimizer_update(rule, &p, &g, &[zero.clone(), zero], &lr, &Array::scalar(1u64)).unwrap();
    let (pv, gv, got) = (to_f64(&p), to_f64(&g), to_f64(&out[0]));
    for i in 0..12 {
        let mut s = [0.0, 0.0];
        let want = reference(&rule, 0.1f32 as f64, 1.0, pv[i], gv[i], &mut s);
        assert!((got[i] - want).abs() < 1e-6, "{i}: {} vs {want}", got[i]);
    }
    for shape in [&[0usize, 3][..], &[][..]] {
        let p = ops::ones(shape, Dtype::F32).unwrap();
        let z = ops::zeros(shape, Dtype::F32).unwrap();
        let out = optimizer_update(rule, &p, &z, &[z.clone(), z.clone()], &lr, &Array::scalar(1f32)).unwrap();
        assert_eq!(out[0].shape(), shape);
        assert_eq!(to_f64(&out[0]), to_f64(&p));
    }
}

#[test]
fn bad_arguments_are_errors_naming_the_op() {
    let rule = UpdateRule::Adagrad { eps: 1e-8 };
    let p = ops::ones(&[2, 3], Dtype::F32).unwrap();
    let lr = Array::scalar(0.1f32);
    let t = Array::scalar(1f32);
    let err = |r: ferrox::Result<Vec<Array>>| match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    };
    let e = err(optimizer_update(rule, &p, &p, &[], &lr, &t));
    assert!(e.contains("optimizer_update") && e.contains("state"), "{e}");
    let e =
        err(optimizer_update(rule, &p, &ops::ones(&[3, 2], Dtype::F32).unwrap(), std::slice::from_ref(&p), &lr, &t));
    assert!(e.contains("shape"), "{e}");
    let ints = ops::ones(&[2, 3], Dtype::I32).unwrap();
    let e = err(optimizer_update(rule, &ints, &ints, std::slice::from_ref(&ints), &lr, &t));
    assert!(e.contains("real floats"), "{e}");
    let e = err(optimizer_update(rule, &p, &p, std::slice::from_ref(&p), &ops::ones(&[2], Dtype::F32).unwrap(), &t));
    assert!(e.contains("learning rate"), "{e}");
    let e = err(optimizer_update(UpdateRule::Adagrad { eps: f64::NAN }, &p, &p, std::slice::from_ref(&p), &lr, &t));
    assert!(e.contains("finite"), "{e}");
    // Not differentiable: a clear error, not a panic.
    let loss = |x: &[Array]| {
        Ok(vec![ops::sum(&optimizer_update(rule, &x[0], &x[0], &[x[0].clone()], &lr, &t)?[0], None, false)?])
    };
    let e = match value_and_grad(loss, std::slice::from_ref(&p), &[0]) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("not differentiable"), "{e}");
}

/// vmap over the parameter (gradient unbatched, broadcast) equals a loop.
#[test]
fn batches_like_a_loop() {
    let rule = UpdateRule::Sgd { momentum: 0.9, weight_decay: 0.0, dampening: 0.0, nesterov: false };
    let p = Array::from_vec(values(3, 15, -1.0, 1.0), &[3, 5]).unwrap().astype(Dtype::F32).unwrap();
    let g = Array::from_vec(values(4, 5, -1.0, 1.0), &[5]).unwrap().astype(Dtype::F32).unwrap();
    let v = Array::from_vec(values(5, 15, -1.0, 1.0), &[5, 3]).unwrap().astype(Dtype::F32).unwrap();
    let (lr, t) = (Array::scalar(0.1f32), Array::scalar(1f32));
    let f = |x: &[Array]| optimizer_update(rule, &x[0], &x[1], &[x[2].clone()], &lr, &t);
    let got = vmap(f, &[p.clone(), g.clone(), v.clone()], &[Some(0), None, Some(1)], &[Some(0), Some(0)]).unwrap();
    for i in 0..3i32 {
        let row = |x: &Array, axis: isize| ops::take(x, &Array::scalar(i), Some(axis)).unwrap();
        let want = f(&[row(&p, 0), g.clone(), row(&v, 1)]).unwrap();
        assert_eq!(to_f64(&row(&got[0], 0)), to_f64(&want[0]));
        assert_eq!(to_f64(&row(&got[1], 0)), to_f64(&want[1]));
    }
}
