//! Helpers shared by the layer tests (`layers.rs`, `image_layers.rs`):
//! deterministic inputs, float64 comparisons and parameter handling.
// Each test binary compiles this module and uses only some of it.
#![allow(dead_code)]

use ferrox::{random, Array, Dtype};
use ferrox_nn::module::{Module, Params};
use std::collections::BTreeMap;

/// Deterministic values in [lo, hi), rounded to float32 so that the f32
/// arrays made from them hold exactly the reference's inputs.
pub fn values(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)) as f32 as f64
        })
        .collect()
}

/// A float32 array of `v`.
pub fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap().astype(Dtype::F32).unwrap()
}

/// Random float32 input of `shape` and its values.
pub fn input(seed: u64, shape: &[usize]) -> (Array, Vec<f64>) {
    let v = values(seed, shape.iter().product(), -1.5, 1.5);
    (arr(&v, shape), v)
}

/// The values of `a`, as float64.
pub fn get(a: &Array) -> Vec<f64> {
    a.astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap()
}

pub fn close(what: &str, got: &Array, want: &[f64], tol: f64) {
    let g = get(got);
    assert_eq!(g.len(), want.len(), "{what}: length");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{what}[{i}]: got {a}, want {b}");
    }
}

/// Every parameter of `m` replaced by random values of its shape; returns
/// the values by name.
pub fn randomize<M: Module>(m: &mut M, seed: u64) -> BTreeMap<String, Vec<f64>> {
    let mut new = Params::new();
    let mut vals = BTreeMap::new();
    for (i, (name, p)) in m.parameters().into_iter().enumerate() {
        let v = values(seed + i as u64, p.size(), -0.8, 0.8);
        new.insert(name.clone(), arr(&v, p.shape()));
        vals.insert(name, v);
    }
    m.update(&new).unwrap();
    vals
}

/// Names and shapes of the parameters of `m`.
pub fn layout<M: Module>(m: &M) -> Vec<(String, Vec<usize>)> {
    m.parameters().into_iter().map(|(k, v)| (k, v.shape().to_vec())).collect()
}

/// `(name, shape)` pairs from literals.
pub fn names(expected: &[(&str, &[usize])]) -> Vec<(String, Vec<usize>)> {
    expected.iter().map(|(k, s)| (k.to_string(), s.to_vec())).collect()
}

/// A PRNG key from `seed`.
pub fn key(seed: u64) -> Array {
    random::key(seed).unwrap()
}
