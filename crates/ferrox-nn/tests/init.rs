//! Initializers: fans, statistics of large draws, determinism with a key,
//! sparsity per row, orthogonality, and argument errors.

use ferrox::ops::random;
use ferrox::{Array, Dtype};
use ferrox_nn::init::{self, FanMode};

fn stats(a: &Array) -> (f64, f64) {
    let v: Vec<f64> = a.astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (mean, (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt())
}

#[test]
fn fans_follow_mlx() {
    assert_eq!(init::fan_in_fan_out("t", &[8, 3]).unwrap(), (3, 8));
    assert_eq!(init::fan_in_fan_out("t", &[8, 2, 5, 3]).unwrap(), (30, 80));
    let err = init::fan_in_fan_out("glorot_normal", &[8]).unwrap_err();
    assert!(err.to_string().starts_with("[glorot_normal] Glorot / He initialization requires at least 2"));
    assert!(FanMode::parse("he_normal", "fan_avg").is_err());
}

#[test]
fn scaled_draws_have_the_right_statistics() {
    let key = random::key(3).unwrap();
    let shape = [200, 300];
    let (m, s) = stats(&init::glorot_normal(&shape, Dtype::F32, 2.0, Some(&key)).unwrap());
    let want = 2.0 * (2.0f64 / 500.0).sqrt();
    assert!(m.abs() < 0.01 && (s / want - 1.0).abs() < 0.02, "glorot_normal {m} {s}");
    let u = init::he_uniform(&shape, Dtype::F32, FanMode::FanOut, 1.0, Some(&key)).unwrap();
    let limit = (3.0f64 / 200.0).sqrt();
    let v = u.to_vec::<f32>().unwrap();
    assert!(v.iter().all(|&x| (x as f64).abs() <= limit));
    let (m, s) = stats(&u);
    assert!(m.abs() < 0.01 && (s / (limit / 3f64.sqrt()) - 1.0).abs() < 0.02, "he_uniform {m} {s}");
    let (m, s) = stats(&init::normal(&shape, Dtype::BF16, 1.5, 0.5, Some(&key)).unwrap());
    assert!((m - 1.5).abs() < 0.01 && (s - 0.5).abs() < 0.01, "normal {m} {s}");
}

#[test]
fn a_key_makes_draws_repeatable() {
    let key = random::key(11).unwrap();
    let a = init::he_normal(&[4, 6], Dtype::F32, FanMode::FanIn, 1.0, Some(&key)).unwrap().to_vec::<f32>().unwrap();
    let b = init::he_normal(&[4, 6], Dtype::F32, FanMode::FanIn, 1.0, Some(&key)).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(a, b);
    let c = init::he_normal(&[4, 6], Dtype::F32, FanMode::FanIn, 1.0, None).unwrap().to_vec::<f32>().unwrap();
    assert_ne!(a, c);
}

#[test]
fn sparse_zeroes_the_same_count_in_every_row() {
    let key = random::key(5).unwrap();
    let a = init::sparse(&[6, 10], Dtype::F32, 0.25, 0.0, 1.0, Some(&key)).unwrap();
    let v = a.to_vec::<f32>().unwrap();
    for row in v.chunks(10) {
        assert_eq!(row.iter().filter(|&&x| x == 0.0).count(), 3);
    }
    assert!(init::sparse(&[6], Dtype::F32, 0.25, 0.0, 1.0, None).is_err());
    assert!(init::sparse(&[6, 2], Dtype::F32, 1.5, 0.0, 1.0, None).is_err());
}

#[test]
fn orthogonal_matrices_are_orthonormal() {
    for (shape, gain) in [([5usize, 5usize], 1.0), ([3, 7], 2.0), ([7, 3], 0.5)] {
        let q = init::orthogonal(&shape, Dtype::F32, gain, Some(&random::key(1).unwrap())).unwrap();
        assert_eq!(q.shape(), &shape);
        let v: Vec<f64> = q.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect();
        let (r, c) = (shape[0], shape[1]);
        // The smaller side is orthonormal (times gain^2).
        let vectors: Vec<Vec<f64>> = if r <= c {
            v.chunks(c).map(|row| row.to_vec()).collect()
        } else {
            (0..c).map(|j| (0..r).map(|i| v[i * c + j]).collect()).collect()
        };
        for (i, a) in vectors.iter().enumerate() {
            for (j, b) in vectors.iter().enumerate() {
                let d: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                let want = if i == j { gain * gain } else { 0.0 };
                assert!((d - want).abs() < 1e-5, "{shape:?}: <{i},{j}> = {d}");
            }
        }
    }
    assert!(init::orthogonal(&[2, 2, 2], Dtype::F32, 1.0, None).is_err());
}

#[test]
fn constant_and_identity() {
    let c = init::constant(&[2, 3], Dtype::F16, &Array::scalar(0.5f32)).unwrap();
    assert_eq!(c.dtype(), Dtype::F16);
    assert_eq!(c.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap(), vec![0.5; 6]);
    let i = init::identity(&[3, 3], Dtype::I32).unwrap();
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![1, 0, 0, 0, 1, 0, 0, 0, 1]);
    let err = init::identity(&[2, 3], Dtype::F32).unwrap_err();
    assert_eq!(err.to_string(), "[identity] The input array must be a square matrix but got shape (2, 3).");
}
