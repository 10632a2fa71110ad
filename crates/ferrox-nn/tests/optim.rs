//! ferrox_nn::optim: the Optimizer's plumbing (state creation, schedules,
//! state save and restore, errors), Adafactor's and Muon's first steps
//! against closed forms, clip_grad_norm and the schedules. The per-element
//! formulas are checked against float64 references in ferrox's
//! `optimizer_update` tests and in python/tests/test_optimizers.py.

use ferrox::backend::UpdateRule;
use ferrox::ops::{self, optimizer_update};
use ferrox::{Array, Dtype};
use ferrox_nn::optim::{self, schedulers, Adafactor, Adam, AdamW, Muon, Optimizer, Sgd};
use std::collections::BTreeMap;

fn vec_of(x: &Array) -> Vec<f64> {
    x.astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap()
}

fn params() -> BTreeMap<String, Array> {
    BTreeMap::from([
        ("a.weight".to_string(), Array::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], &[2, 2]).unwrap()),
        ("b".to_string(), Array::from_vec(vec![1.0f32, -3.0], &[2]).unwrap()),
    ])
}

fn grads(t: u32) -> BTreeMap<String, Array> {
    let s = t as f32;
    BTreeMap::from([
        ("a.weight".to_string(), Array::from_vec(vec![0.1 * s, -0.2, 0.3, -0.4 * s], &[2, 2]).unwrap()),
        ("b".to_string(), Array::from_vec(vec![-0.5f32, 0.7 * s], &[2]).unwrap()),
    ])
}

/// Three AdamW updates equal three direct calls of the fused op with the
/// learning rate and step counts the optimizer should pass.
#[test]
fn updates_call_the_fused_rule_with_the_step_count() {
    let cfg = AdamW { learning_rate: 0.05, weight_decay: 0.1, bias_correction: true, ..Default::default() };
    let rule = UpdateRule::Adam { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.1, bias_correction: true };
    let mut opt = Optimizer::new(cfg);
    let mut p = params();
    let mut want = params();
    let mut states: BTreeMap<String, Vec<Array>> =
        want.iter().map(|(k, v)| (k.clone(), vec![ops::zeros_like(v).unwrap(), ops::zeros_like(v).unwrap()])).collect();
    for t in 1..=3 {
        opt.update(&mut p, &grads(t)).unwrap();
        for (k, g) in grads(t) {
            let out =
                optimizer_update(rule, &want[&k], &g, &states[&k], &Array::scalar(0.05f32), &Array::scalar(t as f32))
                    .unwrap();
            want.insert(k.clone(), out[0].clone());
            states.insert(k.clone(), out[1..].to_vec());
        }
        for k in want.keys() {
            assert_eq!(vec_of(&p[k]), vec_of(&want[k]), "step {t} {k}");
        }
    }
    assert_eq!(opt.step(), 3);
    let state = opt.state();
    let keys: Vec<&str> = state.keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["a.weight.m", "a.weight.v", "b.m", "b.v", "learning_rate", "step"]);
    assert_eq!(vec_of(&state["b.v"]), vec_of(&states["b"][1]));
}

/// A restored state continues exactly where the saved one was.
#[test]
fn state_round_trips() {
    let mut opt = Optimizer::new(Sgd { learning_rate: 0.1, momentum: 0.9, ..Default::default() });
    let mut p = params();
    opt.update(&mut p, &grads(1)).unwrap();
    let saved = opt.state();
    let mut restored = Optimizer::new(Sgd { learning_rate: 0.5, momentum: 0.9, ..Default::default() });
    restored.load_state(&saved).unwrap();
    assert_eq!((restored.step(), restored.learning_rate()), (1, 0.1f32 as f64));
    let mut q = p.clone();
    opt.update(&mut p, &grads(2)).unwrap();
    restored.update(&mut q, &grads(2)).unwrap();
    for k in p.keys() {
        assert_eq!(vec_of(&p[k]), vec_of(&q[k]));
    }
    let mut bad = saved.clone();
    bad.insert("b.extra".to_string(), Array::scalar(1.0f32));
    let e = restored.load_state(&bad).unwrap_err().to_string();
    assert!(e.contains("unexpected key"), "{e}");
    let mut missing = saved;
    missing.remove("step");
    assert!(restored.load_state(&missing).is_err());
}

#[test]
fn schedules_run_before_each_update_in_mlx_order() {
    let mut opt = Optimizer::new(Adam { learning_rate: 1.0, ..Default::default() })
        .with_schedule(schedulers::exponential_decay(0.1, 0.5));
    assert_eq!(opt.learning_rate(), 0.1);
    let mut p = params();
    for t in 0..3 {
        opt.update(&mut p, &grads(1)).unwrap();
        assert!((opt.learning_rate() - 0.1 * 0.5f64.powi(t)).abs() < 1e-12);
    }
}

#[test]
fn bad_gradients_are_errors() {
    let mut opt = Optimizer::new(Sgd::default());
    let mut p = params();
    let mut g = grads(1);
    g.insert("missing".to_string(), Array::scalar(1.0f32));
    assert!(opt.update(&mut p, &g).unwrap_err().to_string().contains("not a parameter"));
    let g = BTreeMap::from([("b".to_string(), ops::ones(&[3], Dtype::F32).unwrap())]);
    assert!(opt.update(&mut p, &g).unwrap_err().to_string().contains("shape"));
    assert_eq!(opt.step(), 0, "a refused update changes nothing");
}

/// First steps in closed form: Adafactor's second moment is the squared
/// gradient (beta_2 = 0 at step 1), so a 1-D update is
/// `max(eps2, rms(p)) * 0.01 * sign(g)`; Muon's on a vector is plain
/// Nesterov momentum.
#[test]
fn adafactor_and_muon_first_steps() {
    let mut p = BTreeMap::from([("v".to_string(), Array::from_vec(vec![3.0f32, -4.0], &[2]).unwrap())]);
    let g = BTreeMap::from([("v".to_string(), Array::from_vec(vec![0.5f32, -2.0], &[2]).unwrap())]);
    let mut opt = Optimizer::new(Adafactor::default());
    opt.update(&mut p, &g).unwrap();
    let rms = (12.5f64).sqrt();
    let got = vec_of(&p["v"]);
    assert!((got[0] - (3.0 - rms * 0.01)).abs() < 1e-5 && (got[1] - (-4.0 + rms * 0.01)).abs() < 1e-5, "{got:?}");
    assert_eq!(opt.state().keys().filter(|k| k.starts_with("v.")).collect::<Vec<_>>(), ["v.exp_avg_sq"]);
    // Factored state for a matrix: row and column averages.
    let mut m = params();
    let mut opt = Optimizer::new(Adafactor { beta_1: Some(0.9), ..Default::default() });
    opt.update(&mut m, &grads(1)).unwrap();
    let state = opt.state();
    assert_eq!(state["a.weight.exp_avg_sq_row"].shape(), &[2]);
    assert_eq!(state["a.weight.exp_avg_sq_col"].shape(), &[2]);
    assert_eq!(state["a.weight.exp_avg"].shape(), &[2, 2]);

    let mut p = BTreeMap::from([("v".to_string(), Array::from_vec(vec![1.0f32, 2.0], &[2]).unwrap())]);
    let mut opt = Optimizer::new(Muon { learning_rate: 0.1, weight_decay: 0.0, ..Default::default() });
    opt.update(&mut p, &g).unwrap();
    let got = vec_of(&p["v"]);
    for (i, (p0, g0)) in [(1.0, 0.5), (2.0, -2.0)].iter().enumerate() {
        let v = 0.05 * g0;
        let want = p0 - 0.1 * (g0 * 0.05 + v * 0.95);
        assert!((got[i] - want).abs() < 1e-6, "{i}: {} vs {want}", got[i]);
    }
    // A matrix update is orthogonalized: its singular values approach 1.
    let w = Array::from_vec(vec![2.0f32, 0.0, 0.0, 0.5], &[2, 2]).unwrap();
    let out = optim::muon_update(
        &Muon { momentum: 0.0, nesterov: false, weight_decay: 0.0, ..Default::default() },
        &ops::zeros(&[2, 2], Dtype::F32).unwrap(),
        &w,
        &[ops::zeros(&[2, 2], Dtype::F32).unwrap()],
        &Array::scalar(1.0f32),
    )
    .unwrap();
    let u = vec_of(&out[0]);
    assert!(u[0] < -0.6 && u[3] < -0.6 && u[1].abs() < 1e-6, "{u:?}");
}

#[test]
fn clip_grad_norm_scales_down_only() {
    let g = BTreeMap::from([
        ("a".to_string(), Array::from_vec(vec![2.0f32, 3.0], &[2]).unwrap()),
        ("b".to_string(), Array::from_vec(vec![1.0f32], &[1]).unwrap()),
    ]);
    let (clipped, norm) = optim::clip_grad_norm(&g, 2.0).unwrap();
    assert!((norm.item::<f32>().unwrap() as f64 - 14f64.sqrt()).abs() < 1e-6);
    let scale = 2.0 / (14f64.sqrt() + 1e-6);
    assert!((vec_of(&clipped["a"])[1] - 3.0 * scale).abs() < 1e-6);
    let (same, _) = optim::clip_grad_norm(&g, 10.0).unwrap();
    assert_eq!(vec_of(&same["a"]), vec![2.0, 3.0]);
    assert!(optim::clip_grad_norm(&g, -1.0).is_err());
}

#[test]
fn schedules_match_their_formulas() {
    let cos = schedulers::cosine_decay(0.1, 10, 0.0).unwrap();
    assert!((cos(5) - 0.05).abs() < 1e-12 && cos(20) == 0.0);
    let lin = schedulers::linear_schedule(0.0, 1.0, 4).unwrap();
    assert_eq!((lin(2), lin(9)), (0.5, 1.0));
    let step = schedulers::step_decay(1.0, 0.5, 2).unwrap();
    assert_eq!((step(1), step(2), step(5)), (1.0, 0.5, 0.25));
    let joined = schedulers::join_schedules(vec![lin, schedulers::exponential_decay(1.0, 0.5)], vec![4]).unwrap();
    assert_eq!((joined(3), joined(4), joined(6)), (0.75, 1.0, 0.25));
    assert!(schedulers::step_decay(1.0, 0.5, 0).is_err());
    assert!(schedulers::join_schedules(vec![], vec![1]).is_err());
}
