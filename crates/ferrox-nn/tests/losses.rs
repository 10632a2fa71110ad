//! Losses against float64 references, their argument checks, and the
//! gradient of cross entropy.

use ferrox::{ops, value_and_grad, Array, Dtype, Error};
use ferrox_nn::losses::{self as l, Reduction};

fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn close(got: &Array, want: &[f64], tol: f64) {
    let got = got.to_vec::<f64>().unwrap();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "got {got:?}, want {want:?}");
    }
}

fn log_softmax_row(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    row.iter().map(|v| v - lse).collect()
}

#[test]
fn cross_entropy_indices_probabilities_smoothing_weights() {
    let logits = arr(&[2.0, -1.0, 0.5, -1.0, 2.0, 3.0], &[2, 3]);
    let classes = Array::from_slice(&[0i32, 2], &[2]).unwrap();
    let ls: Vec<Vec<f64>> = [[2.0, -1.0, 0.5], [-1.0, 2.0, 3.0]].iter().map(|r| log_softmax_row(r)).collect();
    let plain = [-ls[0][0], -ls[1][2]];
    close(&l::cross_entropy(&logits, &classes, None, -1, 0.0, Reduction::None).unwrap(), &plain, 1e-12);
    let onehot = arr(&[1.0, 0.0, 0.0, 0.0, 0.0, 1.0], &[2, 3]);
    close(
        &l::cross_entropy(&logits, &onehot, None, -1, 0.0, Reduction::Mean).unwrap(),
        &[(plain[0] + plain[1]) / 2.0],
        1e-12,
    );
    // Smoothing: (1 - s) * nll + s * mean over classes of -log p.
    let s = 0.2;
    let smooth: Vec<f64> = (0..2).map(|r| (1.0 - s) * plain[r] - s * ls[r].iter().sum::<f64>() / 3.0).collect();
    close(&l::cross_entropy(&logits, &classes, None, -1, s, Reduction::None).unwrap(), &smooth, 1e-12);
    // Class axis 0 with weights.
    let t = ops::transpose(&logits, None).unwrap();
    let w = arr(&[0.5, 2.0], &[2]);
    let out = l::cross_entropy(&t, &classes, Some(&w), 0, 0.0, Reduction::Sum).unwrap();
    close(&out, &[0.5 * plain[0] + 2.0 * plain[1]], 1e-12);
}

#[test]
fn cross_entropy_checks_its_arguments() {
    let logits = arr(&[0.0; 6], &[2, 3]);
    let bad_targets = Array::from_slice(&[0i32, 1, 2], &[3]).unwrap();
    let err = l::cross_entropy(&logits, &bad_targets, None, -1, 0.0, Reduction::None).unwrap_err();
    assert_eq!(err.to_string(), "[cross_entropy] Targets shape (3,) does not match logits shape (2, 3).");
    let targets = Array::from_slice(&[0i32, 1], &[2]).unwrap();
    let err = l::cross_entropy(&logits, &targets, None, -1, 1.0, Reduction::None).unwrap_err();
    assert_eq!(err.to_string(), "[cross_entropy] Label smoothing must be in [0, 1), got 1.0.");
    let err = l::cross_entropy(&logits, &targets, Some(&arr(&[1.0; 3], &[3])), -1, 0.0, Reduction::None).unwrap_err();
    assert!(err.to_string().contains("Weights with shape (3,) is not the same as output loss with shape (2,)."));
    let err = Reduction::parse("mse_loss", "avg").unwrap_err();
    assert_eq!(err.to_string(), "[mse_loss] Invalid reduction. Must be one of ('none', 'mean', 'sum').");
    assert!(matches!(
        l::mse_loss(&logits, &arr(&[0.0; 3], &[3]), Reduction::Mean),
        Err(Error::ShapeMismatch { op: "mse_loss", .. })
    ));
}

#[test]
fn cross_entropy_gradient_is_softmax_minus_onehot() {
    let logits = arr(&[1.0, 2.0, 3.0, 0.0, -1.0, 4.0], &[2, 3]);
    let targets = Array::from_slice(&[1i32, 2], &[2]).unwrap();
    let (_, grads) = value_and_grad(
        |a| Ok(vec![l::cross_entropy(&a[0], &targets, None, -1, 0.0, Reduction::Sum)?]),
        &[logits],
        &[0],
    )
    .unwrap();
    let mut want = Vec::new();
    for (r, row) in [[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]].iter().enumerate() {
        let p: Vec<f64> = log_softmax_row(row).iter().map(|v| v.exp()).collect();
        want.extend((0..3).map(|c| p[c] - if c == [1, 2][r] { 1.0 } else { 0.0 }));
    }
    close(&grads[0], &want, 1e-12);
}

#[test]
fn elementwise_losses_match_formulas() {
    let p = arr(&[0.5, -1.0, 2.0, 3.5], &[4]);
    let t = arr(&[0.0, 1.0, 2.5, 1.0], &[4]);
    let d = [0.5f64, -2.0, -0.5, 2.5];
    let map = |g: &dyn Fn(f64) -> f64| d.iter().map(|&v| g(v)).collect::<Vec<_>>();
    close(&l::l1_loss(&p, &t, Reduction::None).unwrap(), &map(&|v| v.abs()), 0.0);
    close(&l::mse_loss(&p, &t, Reduction::Mean).unwrap(), &[d.iter().map(|v| v * v).sum::<f64>() / 4.0], 1e-15);
    let smooth = |v: f64| if v.abs() < 1.5 { 0.5 * v * v / 1.5 } else { v.abs() - 0.75 };
    close(&l::smooth_l1_loss(&p, &t, 1.5, Reduction::None).unwrap(), &map(&smooth), 1e-15);
    let huber = |v: f64| if v.abs() <= 1.0 { 0.5 * v * v } else { v.abs() - 0.5 };
    close(&l::huber_loss(&p, &t, 1.0, Reduction::None).unwrap(), &map(&huber), 1e-15);
    close(&l::log_cosh_loss(&p, &t, Reduction::None).unwrap(), &map(&|v| v.cosh().ln()), 1e-12);
    close(&l::hinge_loss(&p, &t, Reduction::Sum).unwrap(), &[1.0 + 2.0 + 0.0 + 0.0], 0.0);
    let bce = l::binary_cross_entropy(&p, &arr(&[0.0, 1.0, 1.0, 0.0], &[4]), None, true, Reduction::None).unwrap();
    let sp = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
    close(&bce, &[sp(0.5), sp(1.0), sp(-2.0), sp(3.5)], 1e-12);
    let probs = arr(&[0.1, 0.9, 0.0, 1.0], &[4]);
    let bce = l::binary_cross_entropy(&probs, &arr(&[0.0, 1.0, 1.0, 0.0], &[4]), None, false, Reduction::None).unwrap();
    close(&bce, &[-(0.9f64.ln()), -(0.9f64.ln()), 100.0, 100.0], 1e-12);
}

#[test]
fn distribution_and_pair_losses() {
    let x1 = arr(&[1.0, 2.0, 3.0, 0.0, 1.0, 0.0], &[2, 3]);
    let x2 = arr(&[2.0, 0.0, 1.0, 0.0, 2.0, 0.0], &[2, 3]);
    let cos = l::cosine_similarity_loss(&x1, &x2, 1, 1e-8, Reduction::None).unwrap();
    close(&cos, &[5.0 / (14.0f64.sqrt() * 5.0f64.sqrt()), 1.0], 1e-12);
    let trip = l::triplet_loss(&x1, &x2, &ops::zeros(&[2, 3], Dtype::F64).unwrap(), -1, 2.0, 1.0, 0.0, Reduction::None)
        .unwrap();
    close(&trip, &[3.0 - 14.0f64.sqrt() + 1.0, 1.0], 1e-12);
    let logp = ops::log(&arr(&[0.2, 0.3, 0.5, 0.1, 0.1, 0.8], &[2, 3])).unwrap();
    let logq = ops::log(&arr(&[0.3, 0.3, 0.4, 0.2, 0.2, 0.6], &[2, 3])).unwrap();
    let kl = |q: [f64; 3], p: [f64; 3]| (0..3).map(|i| q[i] * (q[i] / p[i]).ln()).sum::<f64>();
    close(
        &l::kl_div_loss(&logp, &logq, -1, Reduction::None).unwrap(),
        &[kl([0.3, 0.3, 0.4], [0.2, 0.3, 0.5]), kl([0.2, 0.2, 0.6], [0.1, 0.1, 0.8])],
        1e-12,
    );
    let nll = l::nll_loss(&logp, &Array::from_slice(&[2i32, 0], &[2]).unwrap(), -1, Reduction::Sum).unwrap();
    close(&nll, &[-(0.5f64.ln()) - 0.1f64.ln()], 1e-12);
    let g = l::gaussian_nll_loss(
        &arr(&[0.0, 1.0], &[2]),
        &arr(&[1.0, 1.0], &[2]),
        &arr(&[2.0, 0.0], &[2]),
        true,
        1e-6,
        Reduction::None,
    )
    .unwrap();
    let c = 0.5 * (2.0 * std::f64::consts::PI).ln();
    close(&g, &[0.5 * (2.0f64.ln() + 0.5) + c, 0.5 * (1e-6f64).ln() + c], 1e-12);
    let m = l::margin_ranking_loss(
        &arr(&[1.0, 0.0], &[2]),
        &arr(&[0.0, 1.0], &[2]),
        &arr(&[1.0, 1.0], &[2]),
        0.5,
        Reduction::None,
    )
    .unwrap();
    close(&m, &[0.0, 1.5], 0.0);
    let err =
        l::margin_ranking_loss(&arr(&[1.0], &[1]), &arr(&[0.0, 1.0], &[2]), &arr(&[1.0], &[1]), 0.0, Reduction::None)
            .unwrap_err();
    assert!(err.to_string().contains("inputs1.shape=(1,), inputs2.shape=(2,), and targets.shape=(1,)"), "{err}");
    assert!(l::triplet_loss(&x1, &x2, &x2, -1, 0.0, 1.0, 1e-6, Reduction::None).is_err());
}
