//! Convolution, pooling, upsampling, image normalization and channel
//! dropout layers against float64 references computed here (direct
//! loops), with MLX's parameter names, shapes and initial values, a
//! gradient against finite differences, and the argument checks.

use ferrox::{ops, Array, Dtype};
use ferrox_nn::layers::*;
use ferrox_nn::module::{value_and_grad, Forward, Module, Params};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

mod common;
use common::*;

/// The error message of `r`, which must be an error.
fn err<T: std::fmt::Debug>(r: ferrox::Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

/// Asserts that `r` fails with a message containing `text`.
fn fails<T: std::fmt::Debug>(r: ferrox::Result<T>, text: &str) {
    let msg = err(r);
    assert!(msg.contains(text), "message {msg:?} lacks {text:?}");
}

/// Every multi-index of `shape`, row-major.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        out = out.iter().flat_map(|p| (0..n).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    out
}

/// The row-major offset of `idx` in `shape`.
fn flat(shape: &[usize], idx: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

// ---------------------------------------------------------------------------
// References
// ---------------------------------------------------------------------------

/// The settings of a reference convolution, one entry per spatial axis.
struct Geometry {
    stride: Vec<usize>,
    padding: Vec<usize>,
    dilation: Vec<usize>,
    output_padding: Vec<usize>,
    groups: usize,
}

/// The cross-correlation of `x` (`[N, *sp, C]`) with `w` (`[O, *k, C/g]`)
/// plus `b`; returns the values and the output shape.
fn conv_ref(
    x: &[f64],
    xs: &[usize],
    w: &[f64],
    ws: &[usize],
    b: Option<&[f64]>,
    g: &Geometry,
) -> (Vec<f64>, Vec<usize>) {
    let d = xs.len() - 2;
    let (n, c, o) = (xs[0], xs[d + 1], ws[0]);
    let cg = ws[d + 1];
    let og = o / g.groups;
    let mut ys = vec![n];
    for a in 0..d {
        let span = g.dilation[a] * (ws[a + 1] - 1) + 1;
        ys.push((xs[a + 1] + 2 * g.padding[a] - span) / g.stride[a] + 1);
    }
    ys.push(o);
    let kernel = &ws[1..=d];
    let mut y = vec![0.0; ys.iter().product()];
    for yi in indices(&ys) {
        let (bn, co) = (yi[0], yi[d + 1]);
        let grp = co / og;
        let mut s = b.map_or(0.0, |b| b[co]);
        for k in indices(kernel) {
            let mut pos = vec![bn];
            let mut inside = true;
            for a in 0..d {
                let p = (yi[a + 1] * g.stride[a] + k[a] * g.dilation[a]) as i64 - g.padding[a] as i64;
                inside &= p >= 0 && p < xs[a + 1] as i64;
                pos.push(p.max(0) as usize);
            }
            if !inside {
                continue;
            }
            for ci in 0..cg {
                let mut xi = pos.clone();
                xi.push(grp * cg + ci);
                let mut wi = vec![co];
                wi.extend(&k);
                wi.push(ci);
                s += x[flat(xs, &xi)] * w[flat(ws, &wi)];
            }
        }
        y[flat(&ys, &yi)] = s;
    }
    assert_eq!(c, cg * g.groups);
    (y, ys)
}

/// The transposed convolution of `x` (`[N, *sp, C]`) with `w`
/// (`[O, *k, C]`) plus `b`, scattering each input into the output.
fn conv_transpose_ref(
    x: &[f64],
    xs: &[usize],
    w: &[f64],
    ws: &[usize],
    b: Option<&[f64]>,
    g: &Geometry,
) -> (Vec<f64>, Vec<usize>) {
    let d = xs.len() - 2;
    let (c, o) = (xs[d + 1], ws[0]);
    let mut ys = vec![xs[0]];
    for a in 0..d {
        ys.push(
            (xs[a + 1] - 1) * g.stride[a] - 2 * g.padding[a]
                + g.dilation[a] * (ws[a + 1] - 1)
                + 1
                + g.output_padding[a],
        );
    }
    ys.push(o);
    let mut y = vec![0.0; ys.iter().product()];
    for yi in indices(&ys) {
        y[flat(&ys, &yi)] = b.map_or(0.0, |b| b[yi[d + 1]]);
    }
    for xi in indices(&xs[..=d]) {
        for k in indices(&ws[1..=d]) {
            let mut pos = vec![xi[0]];
            let mut inside = true;
            for a in 0..d {
                let p = (xi[a + 1] * g.stride[a] + k[a] * g.dilation[a]) as i64 - g.padding[a] as i64;
                inside &= p >= 0 && p < ys[a + 1] as i64;
                pos.push(p.max(0) as usize);
            }
            if !inside {
                continue;
            }
            for co in 0..o {
                let mut s = 0.0;
                for ci in 0..c {
                    let mut xf = xi.clone();
                    xf.push(ci);
                    let mut wi = vec![co];
                    wi.extend(&k);
                    wi.push(ci);
                    s += x[flat(xs, &xf)] * w[flat(ws, &wi)];
                }
                let mut yf = pos.clone();
                yf.push(co);
                y[flat(&ys, &yf)] += s;
            }
        }
    }
    (y, ys)
}

/// Max (`max`) or average pooling of `x` (`[N, *sp, C]`) with windows
/// `k`, strides `s` and padding `p` (`-inf` or zeros).
fn pool_ref(x: &[f64], xs: &[usize], k: &[usize], s: &[usize], p: &[usize], max: bool) -> (Vec<f64>, Vec<usize>) {
    let d = k.len();
    let mut ys = vec![xs[0]];
    ys.extend((0..d).map(|a| (xs[a + 1] + 2 * p[a] - k[a]) / s[a] + 1));
    ys.push(xs[d + 1]);
    let count = k.iter().product::<usize>() as f64;
    let y = indices(&ys)
        .iter()
        .map(|yi| {
            let vals: Vec<f64> = indices(k)
                .iter()
                .map(|w| {
                    let mut xi = vec![yi[0]];
                    for a in 0..d {
                        let q = (yi[a + 1] * s[a] + w[a]) as i64 - p[a] as i64;
                        if q < 0 || q >= xs[a + 1] as i64 {
                            return if max { f64::NEG_INFINITY } else { 0.0 };
                        }
                        xi.push(q as usize);
                    }
                    xi.push(yi[d + 1]);
                    x[flat(xs, &xi)]
                })
                .collect();
            if max {
                vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
            } else {
                vals.iter().sum::<f64>() / count
            }
        })
        .collect();
    (y, ys)
}

/// The taps (input index, weight) of output `o` along an axis of `n`
/// inputs scaled by `scale`, for `mode` "linear" or "cubic".
fn taps_ref(n: usize, scale: f64, o: usize, align: bool, mode: &str) -> Vec<(usize, f64)> {
    let m = (scale * n as f64) as usize;
    // Without align_corners MLX centers the output grid on the input's
    // (half-pixel centers when scale * n is whole).
    let step = 1.0 / scale;
    let c = if align {
        o as f64 * (n as f64 - 1.0) / (m.max(2) - 1) as f64
    } else {
        o as f64 * step - ((m as f64 - 1.0) * step - n as f64 + 1.0) / 2.0
    };
    let clamp = |v: f64| v.max(0.0).min(n as f64 - 1.0);
    if mode == "linear" {
        let c = clamp(c);
        let (l, r) = (c.floor(), c.ceil());
        return vec![(l as usize, 1.0 - (c - l)), (r as usize, c - l)];
    }
    let a = -0.75;
    let kernel = |x: f64| {
        let x = x.abs();
        if x <= 1.0 {
            ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        } else {
            (((x - 5.0) * x + 8.0) * x - 4.0) * a
        }
    };
    let f = c.floor();
    (-1..=2).map(|t| (clamp(f + t as f64) as usize, kernel(c - (f + t as f64)))).collect()
}

/// Separable interpolation of `x` (`[N, *sp, C]`) with per-axis `taps`
/// (`taps[a][o]` lists the input index and weight of output `o`).
fn interpolate_ref(x: &[f64], xs: &[usize], taps: &[Vec<Vec<(usize, f64)>>]) -> (Vec<f64>, Vec<usize>) {
    let d = taps.len();
    let mut ys = vec![xs[0]];
    ys.extend(taps.iter().map(|t| t.len()));
    ys.push(xs[d + 1]);
    let y = indices(&ys)
        .iter()
        .map(|yi| {
            let per_axis: Vec<&Vec<(usize, f64)>> = (0..d).map(|a| &taps[a][yi[a + 1]]).collect();
            let counts: Vec<usize> = per_axis.iter().map(|t| t.len()).collect();
            indices(&counts)
                .iter()
                .map(|combo| {
                    let mut xi = vec![yi[0]];
                    let mut w = 1.0;
                    for a in 0..d {
                        let (i, wa) = per_axis[a][combo[a]];
                        xi.push(i);
                        w *= wa;
                    }
                    xi.push(yi[d + 1]);
                    w * x[flat(xs, &xi)]
                })
                .sum()
        })
        .collect();
    (y, ys)
}

/// Mean and (biased) variance of `v`.
fn moments(v: &[f64]) -> (f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (mean, v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64)
}

/// `x` (`[N, rest, C]` flattened) normalized over the entries sharing the
/// key `group(n, r, c)`, then scaled and shifted per channel.
fn normalize_ref(
    x: &[f64],
    n: usize,
    c: usize,
    group: impl Fn(usize, usize, usize) -> usize,
    eps: f64,
    affine: Option<(&[f64], &[f64])>,
) -> Vec<f64> {
    let rest = x.len() / n / c;
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for b in 0..n {
        for r in 0..rest {
            for ch in 0..c {
                members.entry(group(b, r, ch)).or_default().push((b * rest + r) * c + ch);
            }
        }
    }
    let mut y = vec![0.0; x.len()];
    for idx in members.values() {
        let (mean, var) = moments(&idx.iter().map(|&i| x[i]).collect::<Vec<_>>());
        for &i in idx {
            let ch = i % c;
            let v = (x[i] - mean) / (var + eps).sqrt();
            y[i] = affine.map_or(v, |(w, b)| v * w[ch] + b[ch]);
        }
    }
    y
}

// ---------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------

#[test]
fn conv_layers_init_as_mlx() {
    let conv =
        Conv2d::with_options(6, 4, &[2, 3], &ConvLayerOptions { groups: 3, ..Default::default() }, Some(&key(3)))
            .unwrap();
    assert_eq!(layout(&conv), names(&[("bias", &[4]), ("weight", &[4, 2, 3, 2])]));
    let scale = (1.0f64 / (2.0 * 6.0)).sqrt();
    let w = get(&conv.weight);
    assert!(w.iter().all(|v| v.abs() <= scale) && w.iter().any(|v| v.abs() > scale / 2.0));
    assert_eq!(get(conv.bias.as_ref().unwrap()), vec![0.0; 4]);
    // The weight is MLX's uniform draw from the key.
    let want = ferrox_nn::init::uniform(&[4, 2, 3, 2], Dtype::F32, -scale, scale, Some(&key(3))).unwrap();
    assert_eq!(get(&conv.weight), get(&want));
    assert_eq!((conv.in_channels(), conv.out_channels(), conv.groups()), (6, 4, 3));

    let no_bias =
        Conv1d::with_options(3, 5, &[4], &ConvLayerOptions { bias: false, ..Default::default() }, None).unwrap();
    assert_eq!(layout(&no_bias), names(&[("weight", &[5, 4, 3])]));
    let c3 = Conv3d::new(2, 3, &[1, 2, 3], None).unwrap();
    assert_eq!(layout(&c3), names(&[("bias", &[3]), ("weight", &[3, 1, 2, 3, 2])]));
    let t2 = ConvTranspose2d::new(3, 2, &[2], Some(&key(1))).unwrap();
    assert_eq!(layout(&t2), names(&[("bias", &[2]), ("weight", &[2, 2, 2, 3])]));
    let scale = (1.0f64 / 12.0).sqrt();
    assert!(get(&t2.weight).iter().all(|v| v.abs() <= scale));
}

#[test]
fn conv_layers_match_reference() {
    // (dims, in, out, kernel, stride, padding, dilation, groups, bias)
    type Case = (usize, usize, usize, Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>, usize, bool);
    let cases: Vec<Case> = vec![
        (1, 3, 4, vec![3], vec![1], vec![0], vec![1], 1, true),
        (1, 4, 6, vec![2], vec![2], vec![1], vec![2], 2, false),
        (2, 4, 4, vec![2, 3], vec![2, 1], vec![1, 0], vec![1, 2], 2, true),
        (2, 2, 3, vec![3, 3], vec![1, 1], vec![1, 1], vec![1, 1], 1, true),
        (3, 2, 3, vec![2, 1, 2], vec![1, 2, 1], vec![0, 1, 1], vec![1, 1, 2], 1, true),
    ];
    for (ci, (d, cin, cout, k, s, p, dil, groups, bias)) in cases.into_iter().enumerate() {
        let options = ConvLayerOptions { stride: s.clone(), padding: p.clone(), dilation: dil.clone(), groups, bias };
        let spatial: Vec<usize> = [7, 6, 5][..d].to_vec();
        let mut xs = vec![2];
        xs.extend(&spatial);
        xs.push(cin);
        let (x, xv) = input(10 + ci as u64, &xs);
        let g = Geometry { stride: s, padding: p, dilation: dil, output_padding: vec![0; d], groups };
        let (y, vals, ws): (Array, BTreeMap<String, Vec<f64>>, Vec<usize>) = match d {
            1 => {
                let mut m = Conv1d::with_options(cin, cout, &k, &options, None).unwrap();
                let vals = randomize(&mut m, 50 + ci as u64);
                (m.forward(&x).unwrap(), vals, m.weight.shape().to_vec())
            }
            2 => {
                let mut m = Conv2d::with_options(cin, cout, &k, &options, None).unwrap();
                let vals = randomize(&mut m, 50 + ci as u64);
                (m.forward(&x).unwrap(), vals, m.weight.shape().to_vec())
            }
            _ => {
                let mut m = Conv3d::with_options(cin, cout, &k, &options, None).unwrap();
                let vals = randomize(&mut m, 50 + ci as u64);
                (m.forward(&x).unwrap(), vals, m.weight.shape().to_vec())
            }
        };
        let (want, ys) = conv_ref(&xv, &xs, &vals["weight"], &ws, vals.get("bias").map(Vec::as_slice), &g);
        assert_eq!(y.shape(), ys.as_slice(), "case {ci}");
        close(&format!("conv case {ci}"), &y, &want, 1e-5);
    }
}

#[test]
fn conv_transpose_layers_match_reference() {
    // (dims, in, out, kernel, stride, padding, dilation, output_padding)
    type Case = (usize, usize, usize, Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>);
    let cases: Vec<Case> = vec![
        (1, 3, 2, vec![3], vec![2], vec![1], vec![1], vec![1]),
        (2, 2, 3, vec![2, 3], vec![2, 1], vec![0, 1], vec![1, 2], vec![1, 0]),
        (3, 2, 2, vec![2, 2, 1], vec![1, 2, 1], vec![0, 0, 0], vec![1, 1, 1], vec![0, 1, 0]),
    ];
    for (ci, (d, cin, cout, k, s, p, dil, op)) in cases.into_iter().enumerate() {
        let options = ConvTransposeOptions {
            stride: s.clone(),
            padding: p.clone(),
            dilation: dil.clone(),
            output_padding: op.clone(),
            bias: true,
        };
        let mut xs = vec![2];
        xs.extend(&[4, 3, 3][..d]);
        xs.push(cin);
        let (x, xv) = input(20 + ci as u64, &xs);
        let g = Geometry { stride: s, padding: p, dilation: dil, output_padding: op, groups: 1 };
        let (y, vals, ws): (Array, BTreeMap<String, Vec<f64>>, Vec<usize>) = match d {
            1 => {
                let mut m = ConvTranspose1d::with_options(cin, cout, &k, &options, None).unwrap();
                let vals = randomize(&mut m, 70 + ci as u64);
                (m.forward(&x).unwrap(), vals, m.weight.shape().to_vec())
            }
            2 => {
                let mut m = ConvTranspose2d::with_options(cin, cout, &k, &options, None).unwrap();
                let vals = randomize(&mut m, 70 + ci as u64);
                (m.forward(&x).unwrap(), vals, m.weight.shape().to_vec())
            }
            _ => {
                let mut m = ConvTranspose3d::with_options(cin, cout, &k, &options, None).unwrap();
                let vals = randomize(&mut m, 70 + ci as u64);
                (m.forward(&x).unwrap(), vals, m.weight.shape().to_vec())
            }
        };
        let (want, ys) = conv_transpose_ref(&xv, &xs, &vals["weight"], &ws, Some(&vals["bias"]), &g);
        assert_eq!(y.shape(), ys.as_slice(), "case {ci}");
        close(&format!("conv transpose case {ci}"), &y, &want, 1e-5);
    }
}

#[test]
fn conv2d_gradient_matches_finite_differences() {
    let options = ConvLayerOptions { stride: vec![2, 1], padding: vec![1], groups: 2, ..Default::default() };
    let mut conv = Conv2d::with_options(4, 2, &[2, 2], &options, Some(&key(5))).unwrap();
    conv.set_dtype(Dtype::F64).unwrap();
    let xv = values(8, 2 * 3 * 4 * 4, -1.0, 1.0);
    let x = Array::from_slice(&xv, &[2, 3, 4, 4]).unwrap();
    let loss = |m: &Conv2d| {
        let y = m.forward(&x)?;
        ops::sum(&ops::multiply(&y, &ops::sin(&y)?)?, None, false)
    };
    let (value, grads) = value_and_grad(&mut conv, loss).unwrap();
    assert_eq!(value.dtype(), Dtype::F64);
    for name in ["weight", "bias"] {
        let p = conv.parameters()[name].clone();
        let base = get(&p);
        let g = get(&grads[name]);
        let h = 1e-6;
        for i in 0..base.len() {
            let at = |delta: f64| {
                let mut v = base.clone();
                v[i] += delta;
                let mut probe = conv.clone();
                let new: Params = [(name.to_string(), Array::from_slice(&v, p.shape()).unwrap())].into();
                probe.update(&new).unwrap();
                loss(&probe).unwrap().item::<f64>().unwrap()
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            assert!((fd - g[i]).abs() <= 1e-6 * (1.0 + fd.abs()), "{name}[{i}]: grad {} vs fd {fd}", g[i]);
        }
    }
}

#[test]
fn conv_layers_refuse_bad_arguments() {
    fails(
        Conv2d::with_options(5, 2, &[3], &ConvLayerOptions { groups: 2, ..Default::default() }, None),
        "The number of input channels (5) must be divisible by the number of groups (2)",
    );
    fails(Conv2d::with_options(4, 2, &[3], &ConvLayerOptions { groups: 0, ..Default::default() }, None), "groups");
    fails(Conv3d::with_options(4, 2, &[3], &ConvLayerOptions { groups: 2, ..Default::default() }, None), "groups");
    fails(Conv2d::new(2, 2, &[3, 3, 3], None), "[Conv2d] 'kernel_size' must be an integer or a tuple containing 2");
    fails(Conv1d::new(2, 2, &[0], None), "'kernel_size' must be positive");
    fails(Conv1d::new(0, 2, &[3], None), "'in_channels' must be positive");
    fails(
        Conv2d::with_options(2, 2, &[3], &ConvLayerOptions { stride: vec![0], ..Default::default() }, None),
        "'stride' must be positive",
    );
    fails(
        ConvTranspose2d::with_options(
            2,
            2,
            &[3],
            &ConvTransposeOptions { output_padding: vec![1, 2, 3], ..Default::default() },
            None,
        ),
        "'output_padding'",
    );
    let conv = Conv2d::new(3, 2, &[2], None).unwrap();
    fails(
        conv.forward(&ops::zeros(&[1, 4, 3], Dtype::F32).unwrap()),
        "[Conv2d] Invalid input array with 3 dimensions for 2D convolution",
    );
    fails(conv.forward(&ops::zeros(&[1, 4, 4, 2], Dtype::F32).unwrap()), "Expected an input with 3 channels but got 2");
    let t = ConvTranspose1d::new(3, 2, &[2], None).unwrap();
    fails(
        t.forward(&ops::zeros(&[1, 4, 4], Dtype::F32).unwrap()),
        "[ConvTranspose1d] Expected an input with 3 channels",
    );
}

// ---------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------

#[test]
fn pooling_layers_match_reference() {
    // (dims, kernel, stride, padding)
    type Case = (usize, Vec<usize>, Option<Vec<usize>>, Vec<usize>);
    let cases: Vec<Case> = vec![
        (1, vec![2], None, vec![0]),
        (1, vec![3], Some(vec![2]), vec![1]),
        (2, vec![2], None, vec![0]),
        (2, vec![3, 2], Some(vec![1, 2]), vec![1, 0]),
        (2, vec![2], None, vec![1]),
        (3, vec![2], Some(vec![1]), vec![0]),
        (3, vec![2, 1, 2], None, vec![1, 0, 0]),
    ];
    for (ci, (d, k, s, p)) in cases.into_iter().enumerate() {
        let mut xs = vec![2];
        xs.extend(&[6, 4, 4][..d]);
        xs.push(3);
        let (x, xv) = input(30 + ci as u64, &xs);
        let kk = if k.len() == 1 { vec![k[0]; d] } else { k.clone() };
        let ss = s.clone().map_or(kk.clone(), |s| if s.len() == 1 { vec![s[0]; d] } else { s });
        let pp = if p.len() == 1 { vec![p[0]; d] } else { p.clone() };
        for max in [true, false] {
            let y = match (d, max) {
                (1, true) => MaxPool1d::new(&k, s.as_deref(), &p).unwrap().forward(&x),
                (1, false) => AvgPool1d::new(&k, s.as_deref(), &p).unwrap().forward(&x),
                (2, true) => MaxPool2d::new(&k, s.as_deref(), &p).unwrap().forward(&x),
                (2, false) => AvgPool2d::new(&k, s.as_deref(), &p).unwrap().forward(&x),
                (_, true) => MaxPool3d::new(&k, s.as_deref(), &p).unwrap().forward(&x),
                (_, false) => AvgPool3d::new(&k, s.as_deref(), &p).unwrap().forward(&x),
            }
            .unwrap();
            let (want, ys) = pool_ref(&xv, &xs, &kk, &ss, &pp, max);
            assert_eq!(y.shape(), ys.as_slice(), "case {ci} max={max}");
            close(&format!("pool case {ci} max={max}"), &y, &want, 1e-6);
        }
    }
    // A window longer than the axis with no room for one: no windows.
    let y = MaxPool1d::new(&[3], Some(&[2]), &[0]).unwrap().forward(&ops::zeros(&[1, 2, 2], Dtype::F32).unwrap());
    assert_eq!(y.unwrap().shape(), &[1, 0, 2]);
    // A transposed (non-contiguous) input pools its logical values.
    let (x, xv) = input(40, &[2, 3, 5]);
    let xt = ops::transpose(&x, Some(&[0, 2, 1])).unwrap();
    let xtv: Vec<f64> = indices(&[2, 5, 3]).iter().map(|i| xv[flat(&[2, 3, 5], &[i[0], i[2], i[1]])]).collect();
    let (want, _) = pool_ref(&xtv, &[2, 5, 3], &[2], &[1], &[0], true);
    close("transposed input", &MaxPool1d::new(&[2], Some(&[1]), &[0]).unwrap().forward(&xt).unwrap(), &want, 0.0);
}

#[test]
fn pooling_layers_refuse_bad_arguments() {
    fails(
        MaxPool2d::new(&[2, 2, 2], None, &[0]),
        "[MaxPool2d] 'kernel_size' must be an integer or a tuple containing 2 integers",
    );
    fails(
        AvgPool1d::new(&[2], Some(&[1, 1]), &[0]),
        "[AvgPool1d] 'stride' must be an integer or a tuple containing 1 integer",
    );
    fails(MaxPool3d::new(&[2], None, &[0, 0]), "'padding' must be an integer or a tuple containing 3 integers");
    fails(AvgPool2d::new(&[0, 2], None, &[0]), "[AvgPool2d] 'kernel_size' must be positive but got (0, 2).");
    fails(MaxPool1d::new(&[2], Some(&[0]), &[0]), "'stride' must be positive but got (0,).");
    let pool = MaxPool2d::new(&[2], None, &[0]).unwrap();
    fails(
        pool.forward(&ops::zeros(&[2, 4, 3], Dtype::F32).unwrap()),
        "[MaxPool2d] Expected an input with 4 dimensions",
    );
    fails(
        MaxPool1d::new(&[4], Some(&[1]), &[0]).unwrap().forward(&ops::zeros(&[1, 2, 1], Dtype::F32).unwrap()),
        "does not fit",
    );
}

// ---------------------------------------------------------------------------
// Upsampling
// ---------------------------------------------------------------------------

#[test]
fn upsample_nearest_matches_reference() {
    let (x, xv) = input(41, &[2, 3, 4, 2]);
    for scales in [vec![2.0, 3.0], vec![1.5, 0.5], vec![2.0, 1.75]] {
        let y = upsample_nearest(&x, &scales).unwrap();
        let taps: Vec<Vec<Vec<(usize, f64)>>> = [3usize, 4]
            .iter()
            .zip(&scales)
            .map(|(&n, &s)| {
                let m = (s * n as f64) as usize;
                (0..m)
                    .map(|o| {
                        let i = if m > n {
                            ((o as f64 + 0.5) * (n as f64 / m as f64) - 0.5).round_ties_even()
                        } else {
                            (o as f64 * (n as f64 / m as f64)).floor()
                        };
                        vec![(i as usize, 1.0)]
                    })
                    .collect()
            })
            .collect();
        let (want, ys) = interpolate_ref(&xv, &[2, 3, 4, 2], &taps);
        assert_eq!(y.shape(), ys.as_slice(), "{scales:?}");
        close(&format!("nearest {scales:?}"), &y, &want, 0.0);
    }
    let layer = Upsample::new(2.0, UpsampleMode::Nearest).unwrap();
    let (x1, _) = input(42, &[1, 3, 2]);
    assert_eq!(layer.forward(&x1).unwrap().shape(), &[1, 6, 2]);
}

#[test]
fn upsample_linear_and_cubic_match_reference() {
    let (x, xv) = input(43, &[2, 4, 3, 2]);
    for mode in ["linear", "cubic"] {
        for align in [false, true] {
            for scales in [vec![2.0, 1.5], vec![0.75, 2.0]] {
                let layer = Upsample::with_options(
                    UpsampleScale::PerAxis(scales.clone()),
                    UpsampleMode::parse(mode).unwrap(),
                    align,
                    false,
                )
                .unwrap();
                let y = layer.forward(&x).unwrap();
                let taps: Vec<Vec<Vec<(usize, f64)>>> = [4usize, 3]
                    .iter()
                    .zip(&scales)
                    .map(|(&n, &s)| (0..(s * n as f64) as usize).map(|o| taps_ref(n, s, o, align, mode)).collect())
                    .collect();
                let (want, ys) = interpolate_ref(&xv, &[2, 4, 3, 2], &taps);
                assert_eq!(y.shape(), ys.as_slice());
                close(&format!("{mode} align={align} {scales:?}"), &y, &want, 1e-5);
            }
        }
    }
    // 1-D and 3-D inputs with one scale for every axis.
    let (x1, x1v) = input(44, &[1, 5, 2]);
    let y = upsample_linear(&x1, &[2.0], false, false).unwrap();
    let taps = vec![(0..10).map(|o| taps_ref(5, 2.0, o, false, "linear")).collect()];
    close("linear 1-D", &y, &interpolate_ref(&x1v, &[1, 5, 2], &taps).0, 1e-6);
    let (x3, x3v) = input(45, &[1, 2, 3, 2, 1]);
    let y = Upsample::new(2.0, UpsampleMode::Linear).unwrap().forward(&x3).unwrap();
    let taps: Vec<Vec<Vec<(usize, f64)>>> =
        [2usize, 3, 2].iter().map(|&n| (0..2 * n).map(|o| taps_ref(n, 2.0, o, false, "linear")).collect()).collect();
    close("trilinear", &y, &interpolate_ref(&x3v, &[1, 2, 3, 2, 1], &taps).0, 1e-5);
}

#[test]
fn upsample_antialias_matches_reference() {
    // Downscaling by 0.5 with the triangle filter widened to radius 2.
    let (x, xv) = input(46, &[1, 8, 2]);
    let y = upsample_linear(&x, &[0.5], false, true).unwrap();
    let n = 8;
    let taps: Vec<Vec<(usize, f64)>> = (0..4)
        .map(|o| {
            let c = (o as f64 + 0.5) / 0.5 - 0.5;
            let raw: Vec<(usize, f64)> =
                (0..n).map(|i| (i, (1.0 - (c - i as f64).abs() / 2.0).max(0.0))).filter(|(_, w)| *w > 0.0).collect();
            let total: f64 = raw.iter().map(|(_, w)| w).sum();
            raw.into_iter().map(|(i, w)| (i, w / total)).collect()
        })
        .collect();
    close("antialiased linear", &y, &interpolate_ref(&xv, &[1, 8, 2], &[taps]).0, 1e-5);
    // Upscaling with antialias is plain interpolation (weights sum to one).
    let up = upsample_cubic(&x, &[2.0], false, true).unwrap();
    assert_eq!(up.shape(), &[1, 16, 2]);
    let ones = upsample_cubic(&ops::ones(&[1, 8, 1], Dtype::F32).unwrap(), &[0.5], false, true).unwrap();
    close("antialiased cubic of ones", &ones, &[1.0; 4], 1e-6);
}

#[test]
fn upsample_refuses_bad_arguments() {
    fails(UpsampleMode::parse("bilinear"), "[Upsample] Got unsupported upsampling algorithm: bilinear");
    fails(
        Upsample::with_options(UpsampleScale::All(2.0), UpsampleMode::Nearest, false, true),
        "Antialiasing is not supported for nearest neighbor upsampling",
    );
    fails(
        Upsample::with_options(UpsampleScale::All(2.0), UpsampleMode::Linear, true, true),
        "antialias=True with align_corners=True is not supported",
    );
    fails(Upsample::new(0.0, UpsampleMode::Linear), "positive");
    let layer = Upsample::with_options(UpsampleScale::PerAxis(vec![2.0]), UpsampleMode::Linear, false, false).unwrap();
    fails(
        layer.forward(&ops::zeros(&[1, 2, 2, 1], Dtype::F32).unwrap()),
        "One scale per spatial dimension is required",
    );
    let layer = Upsample::new(2.0, UpsampleMode::Cubic).unwrap();
    fails(layer.forward(&ops::zeros(&[2, 2], Dtype::F32).unwrap()), "at least 3D but 2D was provided");
    fails(
        upsample_nearest(&ops::zeros(&[1, 2, 2, 1], Dtype::F32).unwrap(), &[2.0]),
        "A scale needs to be provided for each spatial dimension",
    );
}

// ---------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------

#[test]
fn instance_norm_matches_reference() {
    let (x, xv) = input(50, &[2, 3, 4, 5]);
    let plain = InstanceNorm::new(5).unwrap();
    assert!(plain.parameters().is_empty());
    let want = normalize_ref(&xv, 2, 5, |b, _, c| b * 5 + c, 1e-5, None);
    close("instance norm", &plain.forward(&x).unwrap(), &want, 1e-4);
    let mut affine = InstanceNorm::with_options(5, 1e-3, true).unwrap();
    assert_eq!(layout(&affine), names(&[("bias", &[5]), ("weight", &[5])]));
    let p = randomize(&mut affine, 51);
    let want = normalize_ref(&xv, 2, 5, |b, _, c| b * 5 + c, 1e-3, Some((&p["weight"], &p["bias"])));
    close("affine instance norm", &affine.forward(&x).unwrap(), &want, 1e-4);
    fails(plain.forward(&ops::zeros(&[2, 5], Dtype::F32).unwrap()), "at least 3 dimensions");
    fails(plain.forward(&ops::zeros(&[2, 3, 4], Dtype::F32).unwrap()), "Expected an input with 5 features");
    fails(InstanceNorm::with_options(5, 0.0, false), "'eps' must be positive");
}

#[test]
fn group_norm_matches_reference() {
    let (x, xv) = input(52, &[2, 3, 2, 6]);
    let mut mlx = GroupNorm::new(3, 6).unwrap();
    assert_eq!(layout(&mlx), names(&[("bias", &[6]), ("weight", &[6])]));
    let p = randomize(&mut mlx, 53);
    let want = normalize_ref(&xv, 2, 6, |b, _, c| b * 3 + c % 3, 1e-5, Some((&p["weight"], &p["bias"])));
    close("group norm", &mlx.forward(&x).unwrap(), &want, 1e-4);
    let torch = GroupNorm::with_options(3, 6, 1e-5, false, true).unwrap();
    assert!(torch.parameters().is_empty());
    let want = normalize_ref(&xv, 2, 6, |b, _, c| b * 3 + c / 2, 1e-5, None);
    close("pytorch group norm", &torch.forward(&x).unwrap(), &want, 1e-4);
    // A [N, C] input: each sample's groups over their channels only.
    let (x2, x2v) = input(54, &[3, 6]);
    let want = normalize_ref(&x2v, 3, 6, |b, _, c| b * 2 + c / 3, 1e-5, None);
    close(
        "2-D group norm",
        &GroupNorm::with_options(2, 6, 1e-5, false, true).unwrap().forward(&x2).unwrap(),
        &want,
        1e-4,
    );
    fails(GroupNorm::new(4, 6), "The number of features (6) must be evenly divisible by the number of groups (4).");
    fails(GroupNorm::new(0, 6), "The number of groups (0) must be a positive integer.");
    fails(mlx.forward(&ops::zeros(&[6], Dtype::F32).unwrap()), "at least 2 dimensions");
    fails(mlx.forward(&ops::zeros(&[2, 4], Dtype::F32).unwrap()), "Expected an input with 6 features");
}

#[test]
fn batch_norm_trains_and_evaluates() {
    let (x, xv) = input(55, &[4, 3, 2]);
    let mut bn = BatchNorm::with_options(2, 1e-5, 0.25, true, true).unwrap();
    assert_eq!(layout(&bn), names(&[("bias", &[2]), ("running_mean", &[2]), ("running_var", &[2]), ("weight", &[2])]));
    let trainable: Vec<String> = bn.trainable_parameters().into_keys().collect();
    assert_eq!(trainable, ["bias", "weight"]);
    bn.unfreeze("").unwrap();
    assert_eq!(bn.trainable_parameters().len(), 2);
    let p = randomize(&mut bn, 56);
    let rm0 = p["running_mean"].clone();
    let rv0 = p["running_var"].iter().map(|v| v.abs() + 0.5).collect::<Vec<_>>();
    let update: Params = [("running_var".to_string(), arr(&rv0, &[2]))].into();
    bn.update(&update).unwrap();

    // Training: batch statistics, and the running statistics move.
    let y = bn.forward(&x).unwrap();
    let want = normalize_ref(&xv, 1, 2, |_, _, c| c, 1e-5, Some((&p["weight"], &p["bias"])));
    close("batch norm (train)", &y, &want, 1e-4);
    let (mut rm, mut rv) = (vec![], vec![]);
    for c in 0..2 {
        let col: Vec<f64> = xv.iter().skip(c).step_by(2).copied().collect();
        let (mean, var) = moments(&col);
        let unbiased = var * col.len() as f64 / (col.len() - 1) as f64;
        rm.push(0.75 * rm0[c] + 0.25 * mean);
        rv.push(0.75 * rv0[c] + 0.25 * unbiased);
    }
    close("running mean", &bn.running_mean().unwrap(), &rm, 1e-5);
    close("running var", &bn.running_var().unwrap(), &rv, 1e-5);
    assert_eq!(get(&bn.parameters()["running_mean"]), get(&bn.running_mean().unwrap()));

    // Evaluation: the running statistics, unchanged by the call.
    bn.train(false);
    let y = bn.forward(&x).unwrap();
    let want: Vec<f64> = xv
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let c = i % 2;
            (v - rm[c]) / (rv[c] + 1e-5).sqrt() * p["weight"][c] + p["bias"][c]
        })
        .collect();
    close("batch norm (eval)", &y, &want, 1e-4);
    close("running mean after eval", &bn.running_mean().unwrap(), &rm, 1e-5);

    // Without running statistics, batch statistics in both modes.
    let mut plain = BatchNorm::with_options(2, 1e-5, 0.1, false, false).unwrap();
    assert!(plain.parameters().is_empty() && plain.running_mean().is_none());
    plain.train(false);
    close("untracked", &plain.forward(&x).unwrap(), &normalize_ref(&xv, 1, 2, |_, _, c| c, 1e-5, None), 1e-4);
}

#[test]
fn batch_norm_refuses_bad_input() {
    let bn = BatchNorm::new(3).unwrap();
    fails(
        bn.forward(&ops::zeros(&[1, 2, 2, 2, 3], Dtype::F32).unwrap()),
        "Expected input tensor to have 2, 3 or 4 dimensions, but got 5",
    );
    fails(bn.forward(&ops::zeros(&[4, 2], Dtype::F32).unwrap()), "Expected an input with 3 features");
    fails(
        bn.forward(&ops::zeros(&[1, 3], Dtype::F32).unwrap()),
        "BatchNorm training requires more than one value per channel.",
    );
    fails(BatchNorm::with_options(3, -1.0, 0.1, true, true), "'eps' must be positive");
}

// ---------------------------------------------------------------------------
// Channel dropout
// ---------------------------------------------------------------------------

#[test]
fn channel_dropout_zeroes_whole_channels() {
    let x = ops::ones(&[4, 3, 5, 6], Dtype::F32).unwrap();
    let layer = Dropout2d::new(0.5).unwrap();
    let y = get(&layer.forward_with_key(&x, Some(&key(9))).unwrap());
    let mut kept = 0;
    for n in 0..4 {
        for c in 0..6 {
            let vals: Vec<f64> = (0..15).map(|s| y[(n * 15 + s) * 6 + c]).collect();
            assert!(vals.iter().all(|&v| v == vals[0]) && (vals[0] == 0.0 || vals[0] == 2.0), "{vals:?}");
            kept += (vals[0] == 2.0) as usize;
        }
    }
    assert!(kept > 0 && kept < 24, "kept {kept} of 24 channels");
    // Unbatched input: one draw per channel.
    let y = get(&layer.forward_with_key(&ops::ones(&[3, 5, 6], Dtype::F32).unwrap(), Some(&key(2))).unwrap());
    for c in 0..6 {
        assert!((0..15).all(|s| y[s * 6 + c] == y[c]));
    }
    let d3 = Dropout3d::new(0.25).unwrap();
    let x3 = ops::ones(&[2, 2, 3, 2, 4], Dtype::F32).unwrap();
    let y = get(&d3.forward_with_key(&x3, Some(&key(4))).unwrap());
    for n in 0..2 {
        for c in 0..4 {
            let vals: Vec<f64> = (0..12).map(|s| y[(n * 12 + s) * 4 + c]).collect();
            assert!(vals.iter().all(|&v| v == vals[0]) && (vals[0] == 0.0 || (vals[0] - 4.0 / 3.0).abs() < 1e-6));
        }
    }
    // Evaluation mode and p = 0 return the input.
    let mut eval = Dropout2d::new(0.5).unwrap();
    eval.train(false);
    let (xi, xv) = input(60, &[2, 3, 3, 2]);
    close("eval", &eval.forward(&xi).unwrap(), &xv, 0.0);
    close("p = 0", &Dropout3d::new(0.0).unwrap().forward(&ops::expand_dims(&xi, &[0]).unwrap()).unwrap(), &xv, 0.0);
    assert_eq!(layer.p(), 0.5);
    assert!(layer.parameters().is_empty());
}

#[test]
fn channel_dropout_refuses_bad_arguments() {
    fails(Dropout2d::new(1.0), "The dropout probability 1.0 is not in [0, 1)");
    fails(Dropout3d::new(-0.1), "is not in [0, 1)");
    let d2 = Dropout2d::new(0.5).unwrap();
    fails(
        d2.forward(&ops::zeros(&[2, 3], Dtype::F32).unwrap()),
        "[Dropout2d] Received input with 2 dimensions. Expected 3 or 4 dimensions.",
    );
    let d3 = Dropout3d::new(0.5).unwrap();
    fails(d3.forward(&ops::zeros(&[1, 2, 2, 2, 2, 2], Dtype::F32).unwrap()), "Expected 4 or 5 dimensions.");
}

#[test]
fn batch_norm_gradient_in_training_updates_running_stats() {
    let (x, xv) = input(61, &[5, 2]);
    let mut bn = BatchNorm::new(2).unwrap();
    let p = randomize(&mut bn, 62);
    let (_, grads) = value_and_grad(&mut bn, |m| ops::sum(&ops::square(&m.forward(&x)?)?, None, false)).unwrap();
    // d/dw sum((w z + b)^2) = sum(2 (w z + b) z), d/db = sum(2 (w z + b)).
    let z = normalize_ref(&xv, 1, 2, |_, _, c| c, 1e-5, None);
    let (mut gw, mut gb) = (vec![0.0; 2], vec![0.0; 2]);
    for (i, zi) in z.iter().enumerate() {
        let c = i % 2;
        let y = p["weight"][c] * zi + p["bias"][c];
        gw[c] += 2.0 * y * zi;
        gb[c] += 2.0 * y;
    }
    close("grad weight", &grads["weight"], &gw, 1e-4);
    close("grad bias", &grads["bias"], &gb, 1e-4);
    assert!(!grads.contains_key("running_mean"));
    // The traced call moved the running mean, which stays readable.
    let mean: Vec<f64> = (0..2).map(|c| xv.iter().skip(c).step_by(2).sum::<f64>() / 5.0).collect();
    let want: Vec<f64> = (0..2).map(|c| 0.9 * p["running_mean"][c] + 0.1 * mean[c]).collect();
    close("running mean", &bn.running_mean().unwrap(), &want, 1e-5);
}
