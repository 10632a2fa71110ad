//! The Convolution primitive through `conv_with_params` (the parameters the
//! derivatives use: signed padding cropping the dilated input, groups in
//! every rank) against a direct float64 sum, the kernel's tiling on larger
//! shapes, and the primitive's identity for compile and export.

use ferrox::backend::ConvParams;
use ferrox::ops;
use ferrox::primitives::{decode, Convolution, Primitive, PrimitiveIdentity};
use ferrox::{Array, Dtype};

/// A deterministic generator of values in [-1, 1) and small integers.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }
    fn values(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next() as f64 / (1u64 << 30) as f64 - 1.0).collect()
    }
}

/// The convolution by its definition: output `o` sums, over taps `i` and
/// the group's channels, input element `(o s + i kd - lo) / D` where that
/// position of the dilated input is a real element.
fn direct(p: &ConvParams, x: &[f64], xs: &[usize], w: &[f64], ws: &[usize], out: &[usize]) -> Vec<f64> {
    let dims = p.dims();
    let (c_in, c_out) = (xs[dims + 1], ws[0]);
    let (cg, og) = (c_in / p.groups, c_out / p.groups);
    let index = |shape: &[usize], mut flat: usize| {
        let mut idx = vec![0; shape.len()];
        for a in (0..shape.len()).rev() {
            idx[a] = flat % shape[a];
            flat /= shape[a];
        }
        idx
    };
    let offset = |shape: &[usize], idx: &[usize]| idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i);
    let taps: usize = ws[1..=dims].iter().product();
    (0..out.iter().product::<usize>())
        .map(|flat| {
            let o = index(out, flat);
            let co = o[dims + 1];
            let g = co / og;
            let mut acc = 0.0;
            for t in 0..taps {
                let tap = index(&ws[1..=dims], t);
                let mut xi = vec![o[0]];
                for a in 0..dims {
                    let i = if p.flip { ws[a + 1] - 1 - tap[a] } else { tap[a] } as i64;
                    let u = o[a + 1] as i64 * p.stride[a] + i * p.kernel_dilation[a] - p.padding_lo[a];
                    let d = p.input_dilation[a];
                    if u < 0 || u % d != 0 || u / d >= xs[a + 1] as i64 {
                        break;
                    }
                    xi.push((u / d) as usize);
                }
                if xi.len() < dims + 1 {
                    continue;
                }
                for ci in 0..cg {
                    let mut xidx = xi.clone();
                    xidx.push(g * cg + ci);
                    let mut widx = vec![co];
                    widx.extend(&tap);
                    widx.push(ci);
                    acc += x[offset(xs, &xidx)] * w[offset(ws, &widx)];
                }
            }
            acc
        })
        .collect()
}

fn check(p: &ConvParams, xs: &[usize], ws: &[usize], dtype: Dtype, tol: f64, rng: &mut Lcg) {
    let x = rng.values(xs.iter().product());
    let w = rng.values(ws.iter().product());
    let xa = Array::from_slice(&x, xs).unwrap().astype(dtype).unwrap();
    let wa = Array::from_slice(&w, ws).unwrap().astype(dtype).unwrap();
    let got = ops::conv_with_params(&xa, &wa, p).unwrap();
    let want = direct(p, &x, xs, &w, ws, got.shape());
    let got = got.astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(got.len(), want.len());
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{p:?} {xs:?} {ws:?}: element {k}: {a} vs {b}");
    }
}

#[test]
fn signed_padding_groups_and_dilations_match_the_definition() {
    let mut rng = Lcg(7);
    let mut checked = 0;
    while checked < 60 {
        let dims = 1 + checked % 3;
        let groups = rng.int(1, 4) as usize;
        let (cg, og) = (rng.int(1, 4) as usize, rng.int(1, 4) as usize);
        let mut xs = vec![rng.int(1, 3) as usize];
        let mut ws = vec![groups * og];
        let mut p = ConvParams {
            stride: vec![],
            padding_lo: vec![],
            padding_hi: vec![],
            kernel_dilation: vec![],
            input_dilation: vec![],
            groups,
            flip: rng.int(0, 2) == 1,
        };
        for _ in 0..dims {
            xs.push(rng.int(1, 7) as usize);
            ws.push(rng.int(1, 4) as usize);
            p.stride.push(rng.int(1, 4));
            p.padding_lo.push(rng.int(-2, 4));
            p.padding_hi.push(rng.int(-2, 4));
            p.kernel_dilation.push(rng.int(1, 3));
            p.input_dilation.push(rng.int(1, 4));
        }
        xs.push(groups * cg);
        ws.push(cg);
        if p.output_shape("conv", &xs, &ws).is_err() {
            continue; // the padded input is smaller than the filters
        }
        check(&p, &xs, &ws, Dtype::F64, 1e-12, &mut rng);
        checked += 1;
    }
}

#[test]
fn large_shapes_split_into_tiles_and_chunks() {
    let mut rng = Lcg(11);
    let params = |stride: Vec<i64>, lo: Vec<i64>, hi: Vec<i64>, kd: Vec<i64>, id: Vec<i64>, groups, flip| ConvParams {
        stride,
        padding_lo: lo,
        padding_hi: hi,
        kernel_dilation: kd,
        input_dilation: id,
        groups,
        flip,
    };
    // Many output positions (several row tiles and threads).
    let p = params(vec![1, 1], vec![1, 1], vec![1, 1], vec![1, 1], vec![1, 1], 1, false);
    check(&p, &[4, 17, 19, 24], &[20, 3, 3, 24], Dtype::F32, 1e-5, &mut rng);
    // A long filter (the shape of a filter gradient): K is chunked.
    let p = params(vec![1, 1], vec![1, 1], vec![-1, 0], vec![1, 1], vec![1, 1], 1, false);
    check(&p, &[6, 30, 31, 8], &[5, 27, 29, 8], Dtype::F64, 1e-12, &mut rng);
    // Input dilation classes with groups, in float16 and bfloat16.
    let p = params(vec![1, 2], vec![2, 1], vec![1, 2], vec![1, 2], vec![2, 3], 2, true);
    check(&p, &[2, 9, 8, 12], &[8, 3, 3, 6], Dtype::F16, 4e-3, &mut rng);
    check(&p, &[2, 9, 8, 12], &[8, 3, 3, 6], Dtype::BF16, 3e-2, &mut rng);
    // Depthwise with a channel multiplier, 3-D with groups.
    let p = params(vec![2, 1, 1], vec![1, 0, 1], vec![0, 1, 1], vec![1, 1, 2], vec![1, 2, 1], 4, false);
    check(&p, &[2, 5, 4, 6, 4], &[8, 2, 3, 2, 1], Dtype::F32, 1e-5, &mut rng);
}

#[test]
fn parameters_decide_equivalence_and_survive_export() {
    let p = ConvParams {
        stride: vec![2, 1],
        padding_lo: vec![1, -1],
        padding_hi: vec![0, 2],
        kernel_dilation: vec![1, 3],
        input_dilation: vec![2, 1],
        groups: 2,
        flip: true,
    };
    let a = Convolution(p.clone());
    assert!(a.is_equivalent(&Convolution(p.clone())));
    assert!(!a.is_equivalent(&Convolution(ConvParams { flip: false, ..p.clone() })));
    assert!(!a.is_equivalent(&Convolution(ConvParams { padding_hi: vec![0, 1], ..p.clone() })));
    let back = decode("import", a.tag().unwrap(), a.params().unwrap()).unwrap();
    assert!(back.is_equivalent(&a));
    assert_eq!(back.name(), "Convolution");
}

#[test]
fn output_specs_check_imported_graphs() {
    let p = ConvParams {
        stride: vec![1],
        padding_lo: vec![0],
        padding_hi: vec![0],
        kernel_dilation: vec![1],
        input_dilation: vec![1],
        groups: 2,
        flip: false,
    };
    let conv = Convolution(p);
    let x = ops::zeros(&[1, 5, 4], Dtype::F32).unwrap();
    let w = ops::zeros(&[6, 3, 2], Dtype::F32).unwrap();
    let specs = conv.output_specs(&[x.clone(), w.clone()]).unwrap();
    assert_eq!(specs[0].shape, vec![1, 3, 6]);
    let w_int = ops::zeros(&[6, 3, 2], Dtype::I32).unwrap();
    let x_int = ops::zeros(&[1, 5, 4], Dtype::I32).unwrap();
    assert!(conv.output_specs(&[x.clone(), w_int]).is_err());
    assert!(conv.output_specs(&[x_int, ops::zeros(&[6, 3, 2], Dtype::I32).unwrap()]).is_err());
    assert!(conv.output_specs(&[x.clone(), ops::zeros(&[6, 3, 4], Dtype::F32).unwrap()]).is_err());
    assert!(conv.output_specs(&[x, ops::zeros(&[6, 9, 2], Dtype::F32).unwrap()]).is_err());
}
