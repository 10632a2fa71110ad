//! Layers against float64 references computed here, with MLX's parameter
//! names, shapes and initial values, and their argument checks.

use ferrox::{ops, random, Array, Dtype};
use ferrox_nn::functions;
use ferrox_nn::layers::*;
use ferrox_nn::module::{value_and_grad, Forward, Module};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

mod common;
use common::*;

/// `x W^T + b` for `rows` rows of `x` (row-major `[rows, n_in]`), `w`
/// `[n_out, n_in]`.
fn linear_ref(x: &[f64], w: &[f64], b: Option<&[f64]>, n_in: usize, n_out: usize) -> Vec<f64> {
    let rows = x.len() / n_in;
    let mut y = vec![0.0; rows * n_out];
    for r in 0..rows {
        for o in 0..n_out {
            let mut s = b.map_or(0.0, |b| b[o]);
            for i in 0..n_in {
                s += x[r * n_in + i] * w[o * n_in + i];
            }
            y[r * n_out + o] = s;
        }
    }
    y
}

/// Layer norm over rows of `d` features.
fn layer_norm_ref(x: &[f64], d: usize, w: Option<&[f64]>, b: Option<&[f64]>, eps: f64) -> Vec<f64> {
    x.chunks(d)
        .flat_map(|row| {
            let mean = row.iter().sum::<f64>() / d as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d as f64;
            (0..d)
                .map(move |i| (row[i] - mean) / (var + eps).sqrt() * w.map_or(1.0, |w| w[i]) + b.map_or(0.0, |b| b[i]))
        })
        .collect()
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// Multi-head attention over `[batch, len, dims]` inputs with the projection
/// weights of `p` under `prefix` (no biases unless present) and an additive
/// `[lq, lk]` mask.
#[allow(clippy::too_many_arguments)]
fn mha_ref(
    p: &BTreeMap<String, Vec<f64>>,
    prefix: &str,
    q: &[f64],
    kv: &[f64],
    batch: usize,
    dims: usize,
    heads: usize,
    mask: Option<&[f64]>,
) -> Vec<f64> {
    let proj = |name: &str, x: &[f64]| {
        let b = p.get(&format!("{prefix}{name}.bias")).map(Vec::as_slice);
        linear_ref(x, &p[&format!("{prefix}{name}.weight")], b, dims, dims)
    };
    let (qp, kp, vp) = (proj("query_proj", q), proj("key_proj", kv), proj("value_proj", kv));
    let (lq, lk) = (q.len() / batch / dims, kv.len() / batch / dims);
    let hd = dims / heads;
    let scale = 1.0 / (hd as f64).sqrt();
    let mut out = vec![0.0; batch * lq * dims];
    for b in 0..batch {
        for h in 0..heads {
            for i in 0..lq {
                let scores: Vec<f64> = (0..lk)
                    .map(|j| {
                        let dot: f64 = (0..hd)
                            .map(|d| qp[(b * lq + i) * dims + h * hd + d] * kp[(b * lk + j) * dims + h * hd + d])
                            .sum();
                        dot * scale + mask.map_or(0.0, |m| m[i * lk + j])
                    })
                    .collect();
                let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|s| (s - m).exp()).collect();
                let z: f64 = e.iter().sum();
                for d in 0..hd {
                    out[(b * lq + i) * dims + h * hd + d] =
                        (0..lk).map(|j| e[j] / z * vp[(b * lk + j) * dims + h * hd + d]).sum();
                }
            }
        }
    }
    proj("out_proj", &out)
}

/// The MLP of a transformer block with ReLU.
fn mlp_ref(p: &BTreeMap<String, Vec<f64>>, prefix: &str, x: &[f64], dims: usize, mlp: usize) -> Vec<f64> {
    let h =
        linear_ref(x, &p[&format!("{prefix}linear1.weight")], Some(&p[&format!("{prefix}linear1.bias")]), dims, mlp);
    let h: Vec<f64> = h.into_iter().map(|v| v.max(0.0)).collect();
    linear_ref(&h, &p[&format!("{prefix}linear2.weight")], Some(&p[&format!("{prefix}linear2.bias")]), mlp, dims)
}

fn ln_ref(p: &BTreeMap<String, Vec<f64>>, name: &str, x: &[f64], dims: usize) -> Vec<f64> {
    layer_norm_ref(x, dims, Some(&p[&format!("{name}.weight")]), Some(&p[&format!("{name}.bias")]), 1e-5)
}

fn add(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// The additive causal mask `[n, n]` as MLX builds it for float32.
fn causal(n: usize) -> Vec<f64> {
    (0..n * n).map(|k| if k % n > k / n { -(f32::MAX as f64) } else { 0.0 }).collect()
}

// ---------------------------------------------------------------------------
// Initialization as MLX's
// ---------------------------------------------------------------------------

/// After `seed(42)`, the layers draw MLX's values (printed by MLX 0.x:
/// `mx.random.seed(42); nn.Linear(3, 2); nn.Embedding(3, 2); nn.GRU(2, 1)`).
/// This is the only test of this file using the global key sequence.
#[test]
fn initial_values_are_mlx_values_after_the_same_seed() {
    random::seed(42);
    let lin = Linear::new(3, 2, true, None).unwrap();
    let emb = Embedding::new(3, 2, None).unwrap();
    let gru = GRU::new(2, 1, true, None).unwrap();
    let f32s = |a: &Array| a.to_vec::<f32>().unwrap();
    let want = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    assert_eq!(
        f32s(&lin.weight),
        want(&[
            -0.242488294839859,
            0.37814992666244507,
            0.06673592329025269,
            -0.25175023078918457,
            0.4269447326660156,
            0.41532325744628906
        ])
    );
    assert_eq!(f32s(lin.bias.as_ref().unwrap()), want(&[0.04284393787384033, -0.457147479057312]));
    assert_eq!(
        f32s(&emb.weight),
        want(&[
            0.3683250844478607,
            0.4079330563545227,
            0.300539493560791,
            -0.6277479529380798,
            -0.1881469190120697,
            -0.9573332667350769
        ])
    );
    assert_eq!(
        f32s(&gru.wx),
        want(&[
            0.8400763273239136,
            -0.9023174047470093,
            0.3953428268432617,
            0.4752439260482788,
            0.06486010551452637,
            0.4520580768585205
        ])
    );
    assert_eq!(f32s(&gru.wh), want(&[0.41347408294677734, -0.5702439546585083, 0.16479361057281494]));
    assert_eq!(f32s(gru.b.as_ref().unwrap()), want(&[0.6555869579315186, 0.22101783752441406, 0.9513660669326782]));
    assert_eq!(f32s(gru.bhn.as_ref().unwrap()), want(&[-0.34348493814468384]));
}

#[test]
fn keyed_initialization_is_deterministic_and_in_range() {
    let a = Linear::new(16, 8, true, Some(&key(3))).unwrap();
    let b = Linear::new(16, 8, true, Some(&key(3))).unwrap();
    let c = Linear::new(16, 8, true, Some(&key(4))).unwrap();
    assert_eq!(get(&a.weight), get(&b.weight));
    assert_ne!(get(&a.weight), get(&c.weight));
    assert_ne!(get(&a.weight)[..8], get(a.bias.as_ref().unwrap())[..]);
    let bound = 0.25; // 1 / sqrt(16)
    assert!(get(&a.weight).iter().chain(&get(a.bias.as_ref().unwrap())).all(|v| v.abs() <= bound));
    assert_eq!(a.weight.dtype(), Dtype::F32);
    // Embedding: N(0, 1/dims).
    let e = Embedding::new(500, 4, Some(&key(5))).unwrap();
    let v = get(&e.weight);
    let var = v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64;
    assert!((var - 0.25).abs() < 0.03, "embedding variance {var}");
    // Recurrent layers: U(-1/sqrt(H), 1/sqrt(H)).
    let lstm = LSTM::new(3, 4, true, Some(&key(6))).unwrap();
    assert!(lstm.parameters().values().all(|p| get(p).iter().all(|v| v.abs() <= 0.5)));
    // Normalizations start at ones and zeros.
    let ln = LayerNorm::new(3).unwrap();
    assert_eq!(get(ln.weight.as_ref().unwrap()), vec![1.0; 3]);
    assert_eq!(get(ln.bias.as_ref().unwrap()), vec![0.0; 3]);
    assert_eq!(get(&RMSNorm::new(2).unwrap().weight), vec![1.0; 2]);
    assert_eq!(get(&PReLU::new(3, 0.25).unwrap().weight), vec![0.25; 3]);
}

#[test]
fn parameter_names_and_shapes_are_mlx_names() {
    let opts = MultiHeadAttentionOptions { bias: true, ..Default::default() };
    let mha = MultiHeadAttention::with_options(8, 2, &opts, Some(&key(0))).unwrap();
    assert_eq!(
        layout(&mha),
        names(&[
            ("key_proj.bias", &[8]),
            ("key_proj.weight", &[8, 8]),
            ("out_proj.bias", &[8]),
            ("out_proj.weight", &[8, 8]),
            ("query_proj.bias", &[8]),
            ("query_proj.weight", &[8, 8]),
            ("value_proj.bias", &[8]),
            ("value_proj.weight", &[8, 8]),
        ])
    );
    let topts = TransformerOptions { mlp_dims: Some(16), ..Default::default() };
    let enc = TransformerEncoder::new(1, 8, 2, &topts, false, Some(&key(1))).unwrap();
    let enc_names = [
        ("layers.0.attention.key_proj.weight", &[8, 8][..]),
        ("layers.0.attention.out_proj.weight", &[8, 8]),
        ("layers.0.attention.query_proj.weight", &[8, 8]),
        ("layers.0.attention.value_proj.weight", &[8, 8]),
        ("layers.0.linear1.bias", &[16]),
        ("layers.0.linear1.weight", &[16, 8]),
        ("layers.0.linear2.bias", &[8]),
        ("layers.0.linear2.weight", &[8, 16]),
        ("layers.0.ln1.bias", &[8]),
        ("layers.0.ln1.weight", &[8]),
        ("layers.0.ln2.bias", &[8]),
        ("layers.0.ln2.weight", &[8]),
        ("ln.bias", &[8]),
        ("ln.weight", &[8]),
    ];
    assert_eq!(layout(&enc), names(&enc_names));
    let config = TransformerConfig {
        dims: 8,
        num_heads: 2,
        num_encoder_layers: 1,
        num_decoder_layers: 1,
        layer: topts,
        checkpoint: false,
    };
    let t = Transformer::new(&config, Some(&key(2))).unwrap();
    let got = layout(&t);
    assert_eq!(got.len(), 20 + 14);
    let dec: Vec<_> = got.iter().filter(|(k, _)| k.starts_with("decoder.")).map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        dec,
        [
            "decoder.layers.0.cross_attention.key_proj.weight",
            "decoder.layers.0.cross_attention.out_proj.weight",
            "decoder.layers.0.cross_attention.query_proj.weight",
            "decoder.layers.0.cross_attention.value_proj.weight",
            "decoder.layers.0.linear1.bias",
            "decoder.layers.0.linear1.weight",
            "decoder.layers.0.linear2.bias",
            "decoder.layers.0.linear2.weight",
            "decoder.layers.0.ln1.bias",
            "decoder.layers.0.ln1.weight",
            "decoder.layers.0.ln2.bias",
            "decoder.layers.0.ln2.weight",
            "decoder.layers.0.ln3.bias",
            "decoder.layers.0.ln3.weight",
            "decoder.layers.0.self_attention.key_proj.weight",
            "decoder.layers.0.self_attention.out_proj.weight",
            "decoder.layers.0.self_attention.query_proj.weight",
            "decoder.layers.0.self_attention.value_proj.weight",
            "decoder.ln.bias",
            "decoder.ln.weight",
        ]
    );
    let enc_in_t: Vec<_> = got.iter().filter(|(k, _)| k.starts_with("encoder.")).cloned().collect();
    let prefixed: Vec<_> = names(&enc_names).into_iter().map(|(k, s)| (format!("encoder.{k}"), s)).collect();
    assert_eq!(enc_in_t, prefixed);

    let k = Some(key(3));
    assert_eq!(
        layout(&RNN::new(3, 4, true, None, k.as_ref()).unwrap()),
        names(&[("Whh", &[4, 4]), ("Wxh", &[4, 3]), ("bias", &[4])])
    );
    assert_eq!(
        layout(&GRU::new(3, 4, true, k.as_ref()).unwrap()),
        names(&[("Wh", &[12, 4]), ("Wx", &[12, 3]), ("b", &[12]), ("bhn", &[4])])
    );
    assert_eq!(layout(&GRU::new(3, 4, false, k.as_ref()).unwrap()), names(&[("Wh", &[12, 4]), ("Wx", &[12, 3])]));
    assert_eq!(
        layout(&LSTM::new(3, 4, true, k.as_ref()).unwrap()),
        names(&[("Wh", &[16, 4]), ("Wx", &[16, 3]), ("bias", &[16])])
    );
    let seq = Sequential::new()
        .push(Linear::new(2, 3, true, k.as_ref()).unwrap())
        .push(ReLU::new())
        .push(Linear::new(3, 1, true, k.as_ref()).unwrap());
    assert_eq!(
        layout(&seq),
        names(&[
            ("layers.0.bias", &[3]),
            ("layers.0.weight", &[3, 2]),
            ("layers.2.bias", &[1]),
            ("layers.2.weight", &[1, 3])
        ])
    );
    assert_eq!(layout(&LayerNorm::with_options(4, 1e-5, true, false).unwrap()), names(&[("weight", &[4])]));
    assert!(LayerNorm::with_options(4, 1e-5, false, true).unwrap().parameters().is_empty());
    assert_eq!(
        layout(&Bilinear::new(2, 3, 4, true, k.as_ref()).unwrap()),
        names(&[("bias", &[4]), ("weight", &[4, 3, 2])])
    );
    assert_eq!(layout(&Linear::new(2, 3, false, k.as_ref()).unwrap()), names(&[("weight", &[3, 2])]));
}

// ---------------------------------------------------------------------------
// Affine layers and embeddings
// ---------------------------------------------------------------------------

#[test]
fn linear_bilinear_identity_forward() {
    let mut lin = Linear::new(3, 4, true, Some(&key(0))).unwrap();
    let p = randomize(&mut lin, 10);
    let (x, xv) = input(1, &[2, 5, 3]);
    let y = lin.forward(&x).unwrap();
    assert_eq!(y.shape(), &[2, 5, 4]);
    close("linear", &y, &linear_ref(&xv, &p["weight"], Some(&p["bias"]), 3, 4), 1e-5);
    let nobias = Linear::new(3, 4, false, Some(&key(0))).unwrap();
    let w = get(&nobias.weight);
    close("linear no bias", &nobias.forward(&x).unwrap(), &linear_ref(&xv, &w, None, 3, 4), 1e-5);
    assert_eq!((lin.input_dims(), lin.output_dims()), (3, 4));
    assert!(lin.forward(&input(2, &[2, 5]).0).is_err());
    assert_eq!(
        Linear::new(0, 4, true, None).unwrap_err().to_string(),
        "[Linear] input_dims must be positive but got 0."
    );

    let mut bil = Bilinear::new(3, 2, 4, true, Some(&key(1))).unwrap();
    let p = randomize(&mut bil, 20);
    let (x1, v1) = input(3, &[2, 3, 3]);
    let (x2, v2) = input(4, &[2, 3, 2]);
    let y = bil.forward(&x1, &x2).unwrap();
    assert_eq!(y.shape(), &[2, 3, 4]);
    let want: Vec<f64> = (0..6)
        .flat_map(|r| {
            let (p, v1, v2) = (&p, &v1, &v2);
            (0..4).map(move |o| {
                let mut s = p["bias"][o];
                for i in 0..2 {
                    for j in 0..3 {
                        s += v2[r * 2 + i] * p["weight"][(o * 2 + i) * 3 + j] * v1[r * 3 + j];
                    }
                }
                s
            })
        })
        .collect();
    close("bilinear", &y, &want, 1e-5);

    let (x, xv) = input(5, &[3, 2]);
    close("identity", &Identity::new().forward(&x).unwrap(), &xv, 0.0);
}

#[test]
fn embedding_lookup_and_as_linear() {
    let emb = Embedding::new(5, 3, Some(&key(2))).unwrap();
    let w = get(&emb.weight);
    let ids = Array::from_slice(&[4i32, 0, 2, 2, 1, 3], &[2, 3]).unwrap();
    let y = emb.forward(&ids).unwrap();
    assert_eq!(y.shape(), &[2, 3, 3]);
    let want: Vec<f64> = [4, 0, 2, 2, 1, 3].iter().flat_map(|&i| w[i * 3..i * 3 + 3].to_vec()).collect();
    close("embedding", &y, &want, 0.0);
    let (x, xv) = input(6, &[2, 3]);
    close("as_linear", &emb.as_linear(&x).unwrap(), &linear_ref(&xv, &w, None, 3, 5), 1e-5);
    let err = emb.forward(&arr(&[1.0], &[1])).unwrap_err();
    assert_eq!(err.to_string(), "[Embedding] Indices must be integers but got float32.");
}

// ---------------------------------------------------------------------------
// Dropout
// ---------------------------------------------------------------------------

#[test]
fn dropout_train_and_eval() {
    assert_eq!(Dropout::new(1.0).unwrap_err().to_string(), "[Dropout] The dropout probability 1.0 is not in [0, 1)");
    assert!(Dropout::new(-0.1).is_err());
    let mut d = Dropout::new(0.25).unwrap();
    assert!(d.training());
    let n = 20000;
    let (x, xv) = input(7, &[n]);
    let k = key(8);
    let y = get(&d.forward_with_key(&x, Some(&k)).unwrap());
    assert_eq!(y, get(&d.forward_with_key(&x, Some(&k)).unwrap()), "same key, same mask");
    let mut zeros = 0;
    for (a, b) in y.iter().zip(&xv) {
        if *a == 0.0 && *b != 0.0 {
            zeros += 1;
        } else {
            assert!((a - b / 0.75).abs() <= 1e-6 * (1.0 + a.abs()), "kept value {a} for input {b}");
        }
    }
    let rate = zeros as f64 / n as f64;
    assert!((rate - 0.25).abs() < 0.015, "dropped fraction {rate}");
    d.train(false);
    assert!(!d.training());
    close("eval", &d.forward(&x).unwrap(), &xv, 0.0);
    let zero = Dropout::new(0.0).unwrap();
    close("p = 0", &zero.forward_with_key(&x, Some(&k)).unwrap(), &xv, 0.0);
    assert_eq!(zero.p(), 0.0);
}

// ---------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------

#[test]
fn layer_norm_and_rms_norm_forward() {
    let mut ln = LayerNorm::new(4).unwrap();
    let p = randomize(&mut ln, 30);
    let (x, xv) = input(9, &[2, 3, 4]);
    let want = layer_norm_ref(&xv, 4, Some(&p["weight"]), Some(&p["bias"]), 1e-5);
    close("layer_norm", &ln.forward(&x).unwrap(), &want, 1e-5);
    let plain = LayerNorm::with_options(4, 1e-3, false, false).unwrap();
    close("layer_norm plain", &plain.forward(&x).unwrap(), &layer_norm_ref(&xv, 4, None, None, 1e-3), 1e-5);
    assert_eq!(
        LayerNorm::with_options(4, 0.0, true, true).unwrap_err().to_string(),
        "[LayerNorm] 'eps' must be positive but got 0.0."
    );
    // 16-bit inputs: float32 statistics, float16 result when the weights are float16.
    let mut half = LayerNorm::new(4).unwrap();
    half.set_dtype(Dtype::F16).unwrap();
    let y = half.forward(&x.astype(Dtype::F16).unwrap()).unwrap();
    assert_eq!(y.dtype(), Dtype::F16);
    close("layer_norm f16", &y, &layer_norm_ref(&xv, 4, None, None, 1e-5), 2e-3);
    assert!(ln.forward(&input(10, &[2, 3]).0).is_err());
    assert!(layer_norm(&Array::scalar(1.0f32), None, None, 1e-5).is_err());

    let mut rms = RMSNorm::new(4).unwrap();
    let p = randomize(&mut rms, 40);
    let want: Vec<f64> = xv
        .chunks(4)
        .flat_map(|row| {
            let ms = row.iter().map(|v| v * v).sum::<f64>() / 4.0;
            let w = &p["weight"];
            (0..4).map(move |i| row[i] / (ms + 1e-5).sqrt() * w[i])
        })
        .collect();
    close("rms_norm", &rms.forward(&x).unwrap(), &want, 1e-5);
    assert_eq!(RMSNorm::with_eps(4, -1.0).unwrap_err().to_string(), "[RMSNorm] 'eps' must be positive but got -1.0.");
    let err = rms_norm(&x, Some(&arr(&[1.0; 3], &[3])), 1e-5).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[rms_norm] (*weight) must have the same size as the last dimension of x but has 3 elements."
    );
}

// ---------------------------------------------------------------------------
// Positional encodings
// ---------------------------------------------------------------------------

/// RoPE over `[b, t, d]` rows (`outer` leading rows of `t` positions).
#[allow(clippy::too_many_arguments)]
fn rope_ref(
    x: &[f64],
    t: usize,
    d: usize,
    dims: usize,
    traditional: bool,
    base: f64,
    scale: f64,
    offset: usize,
) -> Vec<f64> {
    let half = dims / 2;
    let mut y = x.to_vec();
    for (r, row) in x.chunks(d).enumerate() {
        let pos = ((r % t) + offset) as f64 * scale;
        for i in 0..half {
            let theta = pos * base.powf(-(i as f64) / half as f64);
            let (a, b) = if traditional { (2 * i, 2 * i + 1) } else { (i, i + half) };
            y[r * d + a] = row[a] * theta.cos() - row[b] * theta.sin();
            y[r * d + b] = row[a] * theta.sin() + row[b] * theta.cos();
        }
    }
    y
}

#[test]
fn rope_traditional_and_not_with_base_scale_offset() {
    let (x, xv) = input(11, &[2, 3, 5, 8]);
    for &(dims, traditional, base, scale, offset) in
        &[(8, false, 10000.0, 1.0, 0), (8, true, 10000.0, 1.0, 0), (6, false, 500.0, 0.5, 3), (4, true, 10.0, 2.0, 7)]
    {
        let rope_layer = RoPE::with_options(dims, traditional, base, scale);
        let want = rope_ref(&xv, 5, 8, dims, traditional, base, scale, offset);
        let what = format!("rope dims={dims} traditional={traditional}");
        close(&what, &rope_layer.forward_with(&x, offset).unwrap(), &want, 2e-5);
    }
    // 3-d and 5-d inputs keep their shapes.
    let (x3, v3) = input(12, &[2, 5, 8]);
    close("rope 3-d", &RoPE::new(8).forward(&x3).unwrap(), &rope_ref(&v3, 5, 8, 8, false, 10000.0, 1.0, 0), 2e-5);
    let (x5, v5) = input(13, &[2, 2, 2, 3, 4]);
    let y5 = rope(&x5, 4, true, 10000.0, 1.0, 1).unwrap();
    assert_eq!(y5.shape(), &[2, 2, 2, 3, 4]);
    close("rope 5-d", &y5, &rope_ref(&v5, 3, 4, 4, true, 10000.0, 1.0, 1), 2e-5);
    assert!(RoPE::new(8).forward(&input(14, &[5, 8]).0).is_err());
    assert_eq!(RoPE::new(5).forward(&x).unwrap_err().to_string(), "[rope] dims must be even but got 5.");
    assert!(RoPE::new(10).forward(&x).is_err());
    assert!(RoPE::new(8).forward(&Array::from_slice(&[1i32; 8], &[1, 1, 8]).unwrap()).is_err());
}

#[test]
fn sinusoidal_positional_encoding() {
    let (x, xv) = input(15, &[2, 3]);
    for &(dims, min_freq, max_freq, scale, cos_first, full_turns) in &[
        (8, 1e-4, 1.0, None, false, false),
        (6, 1e-2, 2.0, Some(1.0), true, true),
        (2, 1e-4, 0.5, Some(3.0), false, false),
    ] {
        let pe =
            SinusoidalPositionalEncoding::with_options(dims, min_freq, max_freq, scale, cos_first, full_turns).unwrap();
        let half = dims / 2;
        let sigmas: Vec<f64> = (0..half)
            .map(|i| {
                let one_zero = if half == 1 { 1.0 } else { 1.0 - i as f64 / (half - 1) as f64 };
                let s = (one_zero * (max_freq.ln() - min_freq.ln()) + min_freq.ln()).exp();
                if full_turns {
                    s * 2.0 * std::f64::consts::PI
                } else {
                    s
                }
            })
            .collect();
        let scale = scale.unwrap_or((2.0 / dims as f64).sqrt());
        let want: Vec<f64> = xv
            .iter()
            .flat_map(|&p| {
                let sin: Vec<f64> = sigmas.iter().map(|s| (p * s).sin() * scale).collect();
                let cos: Vec<f64> = sigmas.iter().map(|s| (p * s).cos() * scale).collect();
                if cos_first {
                    [cos, sin].concat()
                } else {
                    [sin, cos].concat()
                }
            })
            .collect();
        let y = pe.forward(&x).unwrap();
        assert_eq!(y.shape(), &[2, 3, dims]);
        close(&format!("sinusoidal dims={dims}"), &y, &want, 1e-5);
    }
    assert!(SinusoidalPositionalEncoding::new(5).is_err());
    assert!(SinusoidalPositionalEncoding::new(0).is_err());
    assert!(SinusoidalPositionalEncoding::new(4).unwrap().parameters().is_empty());
}

#[test]
fn alibi_slopes_matrix_and_forward() {
    let s8 = get(&ALiBi::create_alibi_slope(8, Dtype::F32).unwrap());
    close("slopes 8", &arr(&s8, &[8]), &(1..=8).map(|i| 2f64.powi(-i)).collect::<Vec<_>>(), 1e-7);
    // 6 heads: the 4-head slopes, then every other 8-head slope.
    let s6 = ALiBi::create_alibi_slope(6, Dtype::F32).unwrap();
    assert_eq!(s6.shape(), &[6, 1, 1]);
    let want6 = [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125];
    close("slopes 6", &s6, &want6, 1e-7);
    let m = ALiBi::create_alibi_matrix(5, 4, 6, 2, Dtype::F32).unwrap();
    assert_eq!(m.shape(), &[1, 6, 3, 4]);
    let want: Vec<f64> = (0..6)
        .flat_map(|h| (2..5).flat_map(move |i: i64| (0..4).map(move |j: i64| -((i - j).abs() as f64) * want6[h])))
        .collect();
    close("alibi matrix", &m, &want, 1e-7);
    let (scores, sv) = input(16, &[1, 6, 3, 4]);
    let mask = arr(&causal(4)[..12], &[3, 4]);
    let y = ALiBi::new().forward(&scores, 2, Some(&mask)).unwrap();
    let want_y: Vec<f64> = (0..72).map(|k| sv[k] + want[k] + causal(4)[k % 12]).collect();
    close("alibi forward", &y, &want_y, 1e-6);
    assert!(ALiBi::new().forward(&input(17, &[6, 3, 4]).0, 0, None).is_err());
    assert!(ALiBi::create_alibi_slope(0, Dtype::F32).is_err());
}

// ---------------------------------------------------------------------------
// Recurrent layers
// ---------------------------------------------------------------------------

/// Splits `[N, L, D]` values into per-sequence, per-step rows.
fn steps_of(v: &[f64], n: usize, l: usize, d: usize) -> Vec<Vec<Vec<f64>>> {
    (0..n).map(|b| (0..l).map(|t| v[(b * l + t) * d..(b * l + t + 1) * d].to_vec()).collect()).collect()
}

fn mat_vec(w: &[f64], v: &[f64]) -> Vec<f64> {
    w.chunks(v.len()).map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum()).collect()
}

#[test]
fn rnn_forward_with_and_without_state() {
    let (n, l, d, h) = (2, 4, 3, 5);
    let mut rnn = RNN::new(d, h, true, None, Some(&key(20))).unwrap();
    let p = randomize(&mut rnn, 50);
    let (x, xv) = input(18, &[n, l, d]);
    let (h0, h0v) = input(19, &[n, h]);
    for with_state in [false, true] {
        let mut want = Vec::new();
        for (b, seq) in steps_of(&xv, n, l, d).iter().enumerate() {
            let mut state: Option<Vec<f64>> = with_state.then(|| h0v[b * h..(b + 1) * h].to_vec());
            for xt in seq {
                let mut pre = add(&mat_vec(&p["Wxh"], xt), &p["bias"]);
                if let Some(s) = &state {
                    pre = add(&pre, &mat_vec(&p["Whh"], s));
                }
                let next: Vec<f64> = pre.iter().map(|v| v.tanh()).collect();
                want.extend(&next);
                state = Some(next);
            }
        }
        let y = rnn.forward_with(&x, with_state.then_some(&h0)).unwrap();
        assert_eq!(y.shape(), &[n, l, h]);
        close(&format!("rnn state={with_state}"), &y, &want, 1e-5);
    }
    // Unbatched input, custom nonlinearity, no bias.
    let relu_rnn = RNN::new(d, h, false, Some(functions::relu), Some(&key(21))).unwrap();
    let (wxh, whh) = (get(&relu_rnn.wxh), get(&relu_rnn.whh));
    let (x1, x1v) = input(22, &[l, d]);
    let mut state: Option<Vec<f64>> = None;
    let mut want = Vec::new();
    for xt in &steps_of(&x1v, 1, l, d)[0] {
        let mut pre = mat_vec(&wxh, xt);
        if let Some(s) = &state {
            pre = add(&pre, &mat_vec(&whh, s));
        }
        let next: Vec<f64> = pre.iter().map(|v| v.max(0.0)).collect();
        want.extend(&next);
        state = Some(next);
    }
    close("rnn relu unbatched", &relu_rnn.forward(&x1).unwrap(), &want, 1e-5);
    assert!(rnn.forward(&input(23, &[3]).0).is_err());
    assert!(rnn.forward(&input(23, &[2, 0, 3]).0).is_err());
}

#[test]
fn gru_forward_with_and_without_state_and_bias() {
    let (n, l, d, h) = (2, 3, 3, 4);
    for bias in [true, false] {
        let mut gru = GRU::new(d, h, bias, Some(&key(24))).unwrap();
        let p = randomize(&mut gru, 60);
        let (x, xv) = input(25, &[n, l, d]);
        let (h0, h0v) = input(26, &[n, h]);
        let zero = vec![0.0; 3 * h];
        let b = p.get("b").unwrap_or(&zero);
        let bhn = p.get("bhn").map_or(vec![0.0; h], Clone::clone);
        for with_state in [false, true] {
            let mut want = Vec::new();
            for (bi, seq) in steps_of(&xv, n, l, d).iter().enumerate() {
                let mut state: Option<Vec<f64>> = with_state.then(|| h0v[bi * h..(bi + 1) * h].to_vec());
                for xt in seq {
                    let xp = add(&mat_vec(&p["Wx"], xt), b);
                    let hp = state.as_ref().map_or(vec![0.0; 3 * h], |s| mat_vec(&p["Wh"], s));
                    let r: Vec<f64> = (0..h).map(|i| sigmoid(xp[i] + hp[i])).collect();
                    let z: Vec<f64> = (0..h).map(|i| sigmoid(xp[h + i] + hp[h + i])).collect();
                    let nn: Vec<f64> =
                        (0..h).map(|i| (xp[2 * h + i] + r[i] * (hp[2 * h + i] + bhn[i])).tanh()).collect();
                    let next: Vec<f64> =
                        (0..h).map(|i| (1.0 - z[i]) * nn[i] + z[i] * state.as_ref().map_or(0.0, |s| s[i])).collect();
                    want.extend(&next);
                    state = Some(next);
                }
            }
            let y = gru.forward_with(&x, with_state.then_some(&h0)).unwrap();
            close(&format!("gru bias={bias} state={with_state}"), &y, &want, 1e-5);
        }
    }
}

#[test]
fn lstm_forward_with_and_without_states() {
    let (n, l, d, h) = (2, 3, 2, 3);
    let mut lstm = LSTM::new(d, h, true, Some(&key(27))).unwrap();
    let p = randomize(&mut lstm, 70);
    let (x, xv) = input(28, &[n, l, d]);
    let (h0, h0v) = input(29, &[n, h]);
    let (c0, c0v) = input(30, &[n, h]);
    for (with_h, with_c) in [(false, false), (true, true), (false, true)] {
        let (mut want_h, mut want_c) = (Vec::new(), Vec::new());
        for (bi, seq) in steps_of(&xv, n, l, d).iter().enumerate() {
            let mut hs: Option<Vec<f64>> = with_h.then(|| h0v[bi * h..(bi + 1) * h].to_vec());
            let mut cs: Option<Vec<f64>> = with_c.then(|| c0v[bi * h..(bi + 1) * h].to_vec());
            for xt in seq {
                let mut g = add(&mat_vec(&p["Wx"], xt), &p["bias"]);
                if let Some(s) = &hs {
                    g = add(&g, &mat_vec(&p["Wh"], s));
                }
                let c: Vec<f64> = (0..h)
                    .map(|k| {
                        let (i, f, gg) = (sigmoid(g[k]), sigmoid(g[h + k]), g[2 * h + k].tanh());
                        f * cs.as_ref().map_or(0.0, |c| c[k]) + i * gg
                    })
                    .collect();
                let hn: Vec<f64> = (0..h).map(|k| sigmoid(g[3 * h + k]) * c[k].tanh()).collect();
                want_h.extend(&hn);
                want_c.extend(&c);
                hs = Some(hn);
                cs = Some(c);
            }
        }
        let (hy, cy) = lstm.forward(&x, with_h.then_some(&h0), with_c.then_some(&c0)).unwrap();
        assert_eq!(hy.shape(), &[n, l, h]);
        close(&format!("lstm hidden h={with_h} c={with_c}"), &hy, &want_h, 1e-5);
        close(&format!("lstm cell h={with_h} c={with_c}"), &cy, &want_c, 1e-5);
    }
}

// ---------------------------------------------------------------------------
// Attention and transformers
// ---------------------------------------------------------------------------

#[test]
fn multi_head_attention_with_masks() {
    let (b, lq, lk, dims, heads) = (2, 3, 4, 8, 2);
    let opts = MultiHeadAttentionOptions { bias: true, ..Default::default() };
    let mut mha = MultiHeadAttention::with_options(dims, heads, &opts, Some(&key(31))).unwrap();
    let p = randomize(&mut mha, 80);
    let (q, qv) = input(32, &[b, lq, dims]);
    let (kv, kvv) = input(33, &[b, lk, dims]);
    let want = mha_ref(&p, "", &qv, &kvv, b, dims, heads, None);
    close("mha", &mha.forward(&q, &kv, &kv, None).unwrap(), &want, 1e-5);
    // Additive mask and the equivalent boolean mask.
    let mv: Vec<f64> = (0..lq * lk).map(|k| if (k * 7) % 5 == 0 { -1e9 } else { 0.3 * (k % 3) as f64 }).collect();
    let want = mha_ref(&p, "", &qv, &kvv, b, dims, heads, Some(&mv));
    close("mha additive", &mha.forward(&q, &kv, &kv, Some(&arr(&mv, &[lq, lk]))).unwrap(), &want, 1e-5);
    let keep: Vec<bool> = (0..lq * lk).map(|k| (k * 7) % 5 != 0).collect();
    let bool_mask = Array::from_slice(&keep, &[lq, lk]).unwrap();
    let mv0: Vec<f64> = keep.iter().map(|&k| if k { 0.0 } else { -1e9 }).collect();
    let want = mha_ref(&p, "", &qv, &kvv, b, dims, heads, Some(&mv0));
    close("mha boolean", &mha.forward(&q, &kv, &kv, Some(&bool_mask)).unwrap(), &want, 1e-5);
    // Causal self-attention.
    let mask = MultiHeadAttention::create_additive_causal_mask(lk, Dtype::F32).unwrap();
    close("causal mask", &mask, &causal(lk), 0.0);
    let want = mha_ref(&p, "", &kvv, &kvv, b, dims, heads, Some(&causal(lk)));
    close("mha causal", &mha.forward(&kv, &kv, &kv, Some(&mask)).unwrap(), &want, 1e-5);
    assert_eq!(
        MultiHeadAttention::new(6, 4, None).unwrap_err().to_string(),
        "[MultiHeadAttention] The input feature dimensions should be divisible by the number of heads (6 % 4) != 0"
    );
    assert!(MultiHeadAttention::create_additive_causal_mask(3, Dtype::I32).is_err());
    // Other sizes.
    let opts = MultiHeadAttentionOptions {
        query_input_dims: Some(3),
        key_input_dims: Some(5),
        value_dims: Some(4),
        value_output_dims: Some(7),
        ..Default::default()
    };
    let odd = MultiHeadAttention::with_options(8, 2, &opts, Some(&key(34))).unwrap();
    assert_eq!(odd.value_proj.weight.shape(), &[4, 5]);
    let y = odd.forward(&input(35, &[1, 2, 3]).0, &input(36, &[1, 6, 5]).0, &input(37, &[1, 6, 5]).0, None).unwrap();
    assert_eq!(y.shape(), &[1, 2, 7]);
}

/// An encoder block of `p` under `prefix` (ReLU MLP), pre- or post-norm.
#[allow(clippy::too_many_arguments)]
fn encoder_layer_ref(
    p: &BTreeMap<String, Vec<f64>>,
    prefix: &str,
    x: &[f64],
    b: usize,
    dims: usize,
    heads: usize,
    mlp: usize,
    norm_first: bool,
    mask: Option<&[f64]>,
) -> Vec<f64> {
    let ln = |name: &str, v: &[f64]| ln_ref(p, &format!("{prefix}{name}"), v, dims);
    let att = |v: &[f64]| mha_ref(p, &format!("{prefix}attention."), v, v, b, dims, heads, mask);
    if norm_first {
        let x = add(x, &att(&ln("ln1", x)));
        add(&x, &mlp_ref(p, prefix, &ln("ln2", &x), dims, mlp))
    } else {
        let x = ln("ln1", &add(x, &att(x)));
        ln("ln2", &add(&x, &mlp_ref(p, prefix, &x, dims, mlp)))
    }
}

#[test]
fn transformer_encoder_layers_pre_and_post_norm() {
    let (b, l, dims, heads, mlp) = (2, 3, 8, 2, 16);
    let mask = MultiHeadAttention::create_additive_causal_mask(l, Dtype::F32).unwrap();
    let (x, xv) = input(38, &[b, l, dims]);
    for norm_first in [true, false] {
        let opts = TransformerOptions { mlp_dims: Some(mlp), norm_first, ..Default::default() };
        let mut layer = TransformerEncoderLayer::new(dims, heads, &opts, Some(&key(39))).unwrap();
        let p = randomize(&mut layer, 90);
        let want = encoder_layer_ref(&p, "", &xv, b, dims, heads, mlp, norm_first, Some(&causal(l)));
        close(&format!("encoder layer norm_first={norm_first}"), &layer.forward(&x, Some(&mask)).unwrap(), &want, 2e-5);
    }
    let opts = TransformerOptions { mlp_dims: Some(mlp), ..Default::default() };
    let mut enc = TransformerEncoder::new(2, dims, heads, &opts, false, Some(&key(40))).unwrap();
    let p = randomize(&mut enc, 100);
    let h = encoder_layer_ref(&p, "layers.0.", &xv, b, dims, heads, mlp, true, None);
    let h = encoder_layer_ref(&p, "layers.1.", &h, b, dims, heads, mlp, true, None);
    let want = ln_ref(&p, "ln", &h, dims);
    close("encoder", &enc.forward(&x, None).unwrap(), &want, 2e-5);
    // GELU activation and the default MLP size.
    let gelu_opts = TransformerOptions { activation: functions::gelu, ..Default::default() };
    let g = TransformerEncoderLayer::new(dims, heads, &gelu_opts, Some(&key(41))).unwrap();
    assert_eq!(g.linear1.weight.shape(), &[32, 8]);
    assert_eq!(g.forward(&x, None).unwrap().shape(), &[b, l, dims]);
}

#[test]
fn transformer_decoder_and_full_transformer() {
    let (b, l, lm, dims, heads, mlp) = (1, 3, 2, 8, 2, 16);
    let (x, xv) = input(42, &[b, l, dims]);
    let (mem, mv) = input(43, &[b, lm, dims]);
    let mask = MultiHeadAttention::create_additive_causal_mask(l, Dtype::F32).unwrap();
    for norm_first in [true, false] {
        let opts = TransformerOptions { mlp_dims: Some(mlp), norm_first, ..Default::default() };
        let mut layer = TransformerDecoderLayer::new(dims, heads, &opts, Some(&key(44))).unwrap();
        let p = randomize(&mut layer, 110);
        let ln = |name: &str, v: &[f64]| ln_ref(&p, name, v, dims);
        let self_att = |v: &[f64]| mha_ref(&p, "self_attention.", v, v, b, dims, heads, Some(&causal(l)));
        let cross = |v: &[f64]| mha_ref(&p, "cross_attention.", v, &mv, b, dims, heads, None);
        let want = if norm_first {
            let y = add(&xv, &self_att(&ln("ln1", &xv)));
            let y = add(&y, &cross(&ln("ln2", &y)));
            add(&y, &mlp_ref(&p, "", &ln("ln3", &y), dims, mlp))
        } else {
            let y = ln("ln1", &add(&xv, &self_att(&xv)));
            let y = ln("ln2", &add(&y, &cross(&y)));
            ln("ln3", &add(&y, &mlp_ref(&p, "", &y, dims, mlp)))
        };
        let got = layer.forward(&x, &mem, Some(&mask), None).unwrap();
        close(&format!("decoder layer norm_first={norm_first}"), &got, &want, 2e-5);
    }
    let config = TransformerConfig {
        dims,
        num_heads: heads,
        num_encoder_layers: 1,
        num_decoder_layers: 1,
        layer: TransformerOptions { mlp_dims: Some(mlp), ..Default::default() },
        checkpoint: false,
    };
    let mut t = Transformer::new(&config, Some(&key(45))).unwrap();
    let p = randomize(&mut t, 120);
    let memory = ln_ref(
        &p,
        "encoder.ln",
        &encoder_layer_ref(&p, "encoder.layers.0.", &mv, b, dims, heads, mlp, true, None),
        dims,
    );
    let pre = "decoder.layers.0.";
    let ln = |name: &str, v: &[f64]| ln_ref(&p, &format!("{pre}{name}"), v, dims);
    let y = add(
        &xv,
        &mha_ref(
            &p,
            &format!("{pre}self_attention."),
            &ln("ln1", &xv),
            &ln("ln1", &xv),
            b,
            dims,
            heads,
            Some(&causal(l)),
        ),
    );
    let y = add(&y, &mha_ref(&p, &format!("{pre}cross_attention."), &ln("ln2", &y), &memory, b, dims, heads, None));
    let y = add(&y, &mlp_ref(&p, pre, &ln("ln3", &y), dims, mlp));
    let want = ln_ref(&p, "decoder.ln", &y, dims);
    close("transformer", &t.forward(&mem, &x, None, Some(&mask), None).unwrap(), &want, 2e-5);
    let d = TransformerConfig::default();
    assert_eq!((d.dims, d.num_heads, d.num_encoder_layers, d.num_decoder_layers), (512, 8, 6, 6));
}

#[test]
fn checkpointed_blocks_give_the_same_values_and_gradients() {
    let (b, l, dims, heads) = (1, 3, 4, 2);
    let opts = TransformerOptions { mlp_dims: Some(8), ..Default::default() };
    let (x, _) = input(46, &[b, l, dims]);
    let (mem, _) = input(47, &[b, 2, dims]);
    let mask = MultiHeadAttention::create_additive_causal_mask(l, Dtype::F32).unwrap();
    let run = |checkpoint: bool| {
        let mut enc = TransformerEncoder::new(2, dims, heads, &opts, checkpoint, Some(&key(48))).unwrap();
        let mut dec = TransformerDecoder::new(1, dims, heads, &opts, checkpoint, Some(&key(49))).unwrap();
        randomize(&mut enc, 130);
        randomize(&mut dec, 140);
        let (v1, g1) =
            value_and_grad(&mut enc, |m| ops::sum(&ops::square(&m.forward(&x, Some(&mask))?)?, None, false)).unwrap();
        let (v2, g2) = value_and_grad(&mut dec, |m| {
            ops::sum(&ops::square(&m.forward(&x, &mem, Some(&mask), None)?)?, None, false)
        })
        .unwrap();
        (get(&v1)[0], g1, get(&v2)[0], g2)
    };
    let (a1, ga1, a2, ga2) = run(false);
    let (b1, gb1, b2, gb2) = run(true);
    assert!((a1 - b1).abs() < 1e-5 && (a2 - b2).abs() < 1e-5);
    for (ga, gb) in [(ga1, gb1), (ga2, gb2)] {
        assert_eq!(ga.keys().collect::<Vec<_>>(), gb.keys().collect::<Vec<_>>());
        for (k, g) in &ga {
            close(&format!("checkpointed gradient {k}"), &gb[k], &get(g), 1e-4);
        }
    }
}

// ---------------------------------------------------------------------------
// Activation layers and Sequential
// ---------------------------------------------------------------------------

#[test]
fn activation_layers_apply_their_functions() {
    let (x, _) = input(50, &[2, 4]);
    let same =
        |what: &str, layer: &dyn Forward, want: Array| close(what, &layer.forward(&x).unwrap(), &get(&want), 0.0);
    same("relu", &ReLU::new(), functions::relu(&x).unwrap());
    same("relu2", &ReLU2::new(), functions::relu2(&x).unwrap());
    same("relu6", &ReLU6::new(), functions::relu6(&x).unwrap());
    same("sigmoid", &Sigmoid::new(), functions::sigmoid(&x).unwrap());
    same("mish", &Mish::new(), functions::mish(&x).unwrap());
    same("softmax", &Softmax::new(), functions::softmax(&x, &[-1]).unwrap());
    same("softplus", &Softplus::new(), functions::softplus(&x).unwrap());
    same("softsign", &Softsign::new(), functions::softsign(&x).unwrap());
    same("silu", &SiLU::new(), functions::silu(&x).unwrap());
    same("log_softmax", &LogSoftmax::new(), functions::log_softmax(&x, &[-1]).unwrap());
    same("log_sigmoid", &LogSigmoid::new(), functions::log_sigmoid(&x).unwrap());
    same("tanh", &Tanh::new(), functions::tanh(&x).unwrap());
    same("hardswish", &Hardswish::new(), functions::hardswish(&x).unwrap());
    same("selu", &SELU::new(), functions::selu(&x).unwrap());
    same("hard_tanh", &HardTanh::new(), functions::hard_tanh(&x, -1.0, 1.0).unwrap());
    same("softmin", &Softmin::new(), functions::softmin(&x, &[-1]).unwrap());
    same("glu", &GLU::default(), functions::glu(&x, -1).unwrap());
    same("glu axis 0", &GLU::new(0), functions::glu(&x, 0).unwrap());
    same("leaky_relu", &LeakyReLU::default(), functions::leaky_relu(&x, 0.01).unwrap());
    same("elu", &ELU::new(0.5), functions::elu(&x, 0.5).unwrap());
    same("softshrink", &Softshrink::default(), functions::softshrink(&x, 0.5).unwrap());
    same("celu", &CELU::default(), functions::celu(&x, 1.0).unwrap());
    same("step", &Step::new(0.2), functions::step(&x, 0.2).unwrap());
    same("hard_shrink", &HardShrink::default(), functions::hard_shrink(&x, 0.5).unwrap());
    same("gelu", &GELU::default(), functions::gelu(&x).unwrap());
    same("gelu tanh", &GELU::new(GeluApprox::parse("tanh").unwrap()), functions::gelu_approx(&x).unwrap());
    same("gelu fast", &GELU::new(GeluApprox::parse("fast").unwrap()), functions::gelu_fast_approx(&x).unwrap());
    assert_eq!(GeluApprox::parse("precise").unwrap(), GeluApprox::Precise);
    assert_eq!(
        GeluApprox::parse("erf").unwrap_err().to_string(),
        "[GELU] The approximation should be in ['none', 'precise', 'tanh', 'fast'] but 'erf' was given"
    );
    let prelu = PReLU::new(4, 0.1).unwrap();
    same("prelu", &prelu, functions::prelu(&x, &arr(&[0.1; 4], &[4])).unwrap());
    assert!(ReLU::new().parameters().is_empty());
}

#[test]
fn sequential_calls_its_layers_in_order() {
    let l1 = Linear::new(3, 4, true, Some(&key(51))).unwrap();
    let l2 = Linear::new(4, 2, false, Some(&key(52))).unwrap();
    let (x, _) = input(53, &[5, 3]);
    let want = l2.forward(&functions::relu(&l1.forward(&x).unwrap()).unwrap()).unwrap();
    let seq = Sequential::new().push(l1).push(ReLU::new()).push(l2);
    close("sequential", &seq.forward(&x).unwrap(), &get(&want), 0.0);
    assert_eq!(seq.layers.len(), 3);
    close("empty sequential", &Sequential::new().forward(&x).unwrap(), &get(&x), 0.0);
}
