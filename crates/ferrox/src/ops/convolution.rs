//! Convolutions with MLX's channels-last layout: `conv_general` (strides,
//! asymmetric padding, kernel and input dilation, groups, flip), `conv1d`,
//! `conv2d`, `conv3d`, their transposes and `convolve`.
//!
//! A convolution is built from graph ops: the input is dilated and padded,
//! its windows are viewed with one `as_strided` (im2col without a copy
//! until the product needs one), and each group's windows are multiplied
//! with its filters in one batched matmul. It therefore runs on every
//! backend, and its derivatives and batching rules come from those ops.

use super::elementwise::astype;
use super::linalg::matmul;
use super::rearrange::{as_strided, contiguous, flip, pad, slice_axis, PadMode};
use super::shaping::{reshape, transpose};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::{fmt_shape, Error, Result};

const OP: &str = "conv";

/// How a convolution slides its filters, one entry per spatial axis.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvOptions {
    /// Step between output positions (default 1).
    pub stride: Vec<i64>,
    /// Zeros added before each axis (negative values crop the input).
    pub padding_lo: Vec<i64>,
    /// Zeros added after each axis (negative values crop the input).
    pub padding_hi: Vec<i64>,
    /// Spacing between filter taps (default 1).
    pub kernel_dilation: Vec<i64>,
    /// Spacing between input elements (zeros in between; default 1).
    pub input_dilation: Vec<i64>,
    /// Number of channel groups (input and output channels split evenly).
    pub groups: i64,
    /// Whether the filters are flipped along their spatial axes (a true
    /// convolution rather than a cross-correlation).
    pub flip: bool,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            stride: vec![],
            padding_lo: vec![],
            padding_hi: vec![],
            kernel_dilation: vec![],
            input_dilation: vec![],
            groups: 1,
            flip: false,
        }
    }
}

/// `v` with one entry per spatial axis: empty means `default`, one entry is
/// repeated (MLX's rule).
fn per_axis(v: &[i64], dims: usize, default: i64) -> Vec<i64> {
    match v {
        [] => vec![default; dims],
        [x] => vec![*x; dims],
        _ => v.to_vec(),
    }
}

fn fmt_list(v: &[i64]) -> String {
    format!("({})", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// MLX's argument checks of every convolution.
fn check_operands(input: &Array, weight: &Array, dims: usize, groups: i64) -> Result<()> {
    if !input.dtype().is_floating() {
        return Err(Error::invalid(
            OP,
            format!(
                "Invalid input array with type {}. Convolution currently only supports floating point types",
                input.dtype()
            ),
        ));
    }
    if input.ndim() != dims + 2 {
        return Err(Error::invalid(
            OP,
            format!(
                "Invalid input array with {} dimensions for {dims}D convolution. Expected an array with {} dimensions following the format [N, ..., C_in].",
                input.ndim(),
                dims + 2
            ),
        ));
    }
    if weight.ndim() != dims + 2 {
        return Err(Error::invalid(
            OP,
            format!(
                "Invalid weight array with {} dimensions for {dims}D convolution. Expected an array with {} dimensions following the format [C_out, ..., C_in].",
                weight.ndim(),
                dims + 2
            ),
        ));
    }
    if groups <= 0 {
        return Err(Error::invalid(OP, format!("Groups must be positive, got {groups}.")));
    }
    let c_in = input.shape()[dims + 1] as i64;
    if c_in % groups != 0 {
        return Err(Error::invalid(
            OP,
            format!(
                "The input channels must be divisible by the number of groups. Got input with shape {} and {groups} groups.",
                fmt_shape(input.shape())
            ),
        ));
    }
    let c_out = weight.shape()[0] as i64;
    if groups > 1 && c_out % groups != 0 {
        return Err(Error::invalid(
            OP,
            format!(
                "If groups > 1, the output channels must be divisible by the number of groups. Got {c_out} output channels and {groups} groups."
            ),
        ));
    }
    if c_in != groups * weight.shape()[dims + 1] as i64 {
        let msg = if groups == 1 {
            format!(
                "Expect the input channels in the input and weight array to match but got shapes - input: {} and weight: {}",
                fmt_shape(input.shape()),
                fmt_shape(weight.shape())
            )
        } else {
            format!(
                "Given groups={groups} and weights of shape {}, expected to have {} input channels but got {c_in} input channels instead.",
                fmt_shape(weight.shape()),
                groups * weight.shape()[dims + 1] as i64
            )
        };
        return Err(Error::invalid(OP, msg));
    }
    Ok(())
}

/// The general convolution of `input` `(N, ..., C_in)` with `weight`
/// `(C_out, ..., C_in / groups)`, giving `(N, ..., C_out)` in their promoted
/// dtype. Output size per axis: `(in' + lo + hi - k') / stride + 1`, where
/// `in'` and `k'` are the input and filter sizes after dilation.
pub fn conv_general(input: &Array, weight: &Array, options: &ConvOptions) -> Result<Array> {
    let nd = input.ndim();
    if options.groups != 1 && nd != 3 && nd != 4 {
        return Err(Error::invalid(OP, "Can only handle groups != 1 in 1D or 2D convolutions."));
    }
    if !(3..=5).contains(&nd) {
        return Err(Error::invalid(
            OP,
            "Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format [N, ..., C_in]",
        ));
    }
    let dims = nd - 2;
    check_operands(input, weight, dims, options.groups)?;
    let dtype = Dtype::promote(input.dtype(), weight.dtype());
    let mut x = astype(input, dtype)?;
    let w = astype(weight, dtype)?;
    let stride = per_axis(&options.stride, dims, 1);
    let mut lo = per_axis(&options.padding_lo, dims, 0);
    let mut hi = per_axis(&options.padding_hi, dims, 0);
    let kd = per_axis(&options.kernel_dilation, dims, 1);
    let id = per_axis(&options.input_dilation, dims, 1);
    for (name, v) in [("strides", &stride), ("kernel dilation", &kd), ("input dilation", &id)] {
        if v.len() != dims {
            return Err(Error::invalid(OP, format!("Invalid {name} {} for {dims}D convolution.", fmt_list(v))));
        }
    }
    if lo.len() != dims || hi.len() != dims {
        return Err(Error::invalid(
            OP,
            format!("Invalid padding {} | {} for {dims}D convolution.", fmt_list(&lo), fmt_list(&hi)),
        ));
    }
    // Negative padding crops the (undilated) input, as in MLX.
    for i in 0..dims {
        let ax = i + 1;
        let size = x.shape()[ax] as i64;
        let start = (-lo[i]).max(0).min(size);
        let stop = (size + hi[i].min(0)).max(start);
        if start > 0 || stop < size {
            x = slice_axis(&x, ax, start as usize, (stop - start) as usize, 1)?;
        }
        lo[i] = lo[i].max(0);
        hi[i] = hi[i].max(0);
    }
    let mut out_sizes = Vec::with_capacity(dims);
    for i in 0..dims {
        if kd[i] <= 0 {
            return Err(Error::invalid(
                OP,
                format!("Kernel dilation sizes must be positive. Got kernel dilation {}.", fmt_list(&kd)),
            ));
        }
        if id[i] <= 0 {
            return Err(Error::invalid(
                OP,
                format!("Input dilation sizes must be positive. Got input dilation {}.", fmt_list(&id)),
            ));
        }
        if stride[i] <= 0 {
            return Err(Error::invalid(
                OP,
                format!("Stride sizes must be positive. Got strides {}.", fmt_list(&stride)),
            ));
        }
        let dilate = |n: i64, d: i64| if n == 0 { 0 } else { 1 + d * (n - 1) };
        let k = dilate(w.shape()[i + 1] as i64, kd[i]);
        let n = dilate(x.shape()[i + 1] as i64, id[i]);
        let span = n + lo[i] + hi[i] - k;
        if span < 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. Got error at axis {} for input with shape {}, padding low {}, padding high {}, and weight of shape {}.",
                    i + 1,
                    fmt_shape(input.shape()),
                    fmt_list(&lo),
                    fmt_list(&hi),
                    fmt_shape(weight.shape())
                ),
            ));
        }
        out_sizes.push((span / stride[i] + 1) as usize);
    }
    // Input dilation: id - 1 zeros between neighbours along each axis.
    for (i, &d) in id.iter().enumerate().take(dims) {
        if d > 1 && x.shape()[i + 1] > 0 {
            x = dilate_axis(&x, i + 1, d as usize)?;
        }
    }
    if lo.iter().chain(&hi).any(|&p| p > 0) {
        let mut widths = vec![(0, 0); nd];
        for i in 0..dims {
            widths[i + 1] = (lo[i], hi[i]);
        }
        x = pad(&x, &widths, PadMode::Constant, &Array::scalar_of(crate::Scalar::Float(0.0), dtype))?;
    }
    let w = if options.flip {
        let axes: Vec<isize> = (1..=dims as isize).collect();
        flip(&w, Some(&axes))?
    } else {
        w
    };
    windows_times_filters(&x, &w, &out_sizes, &stride, &kd, options.groups as usize)
}

/// `x` with `d - 1` zeros inserted between neighbours along axis `ax`.
fn dilate_axis(x: &Array, ax: usize, d: usize) -> Result<Array> {
    let n = x.shape()[ax];
    let mut spread: Vec<isize> = x.shape().iter().map(|&s| s as isize).collect();
    spread.insert(ax + 1, 1);
    let mut widths = vec![(0, 0); spread.len()];
    widths[ax + 1] = (0, d as i64 - 1);
    let zero = Array::scalar_of(crate::Scalar::Float(0.0), x.dtype());
    let padded = pad(&reshape(x, &spread)?, &widths, PadMode::Constant, &zero)?;
    let mut merged: Vec<isize> = x.shape().iter().map(|&s| s as isize).collect();
    merged[ax] = (n * d) as isize;
    slice_axis(&reshape(&padded, &merged)?, ax, 0, (n - 1) * d + 1, 1)
}

/// The cross-correlation of the (dilated, padded) input `x` with filters `w`:
/// every output position's window, viewed in place, times each group's
/// filters.
fn windows_times_filters(
    x: &Array,
    w: &Array,
    out_sizes: &[usize],
    stride: &[i64],
    kernel_dilation: &[i64],
    groups: usize,
) -> Result<Array> {
    let dims = out_sizes.len();
    let x = contiguous(x, false)?;
    let n = x.shape()[0];
    let c_in = x.shape()[dims + 1];
    let c_out = w.shape()[0];
    let kernel: Vec<usize> = w.shape()[1..=dims].to_vec();
    // Row-major strides of x, in elements.
    let mut x_strides = vec![1isize; x.ndim()];
    for ax in (0..x.ndim() - 1).rev() {
        x_strides[ax] = x_strides[ax + 1] * x.shape()[ax + 1] as isize;
    }
    // Windows: (N, out..., kernel..., C_in).
    let mut shape = vec![n];
    let mut strides = vec![x_strides[0]];
    for i in 0..dims {
        shape.push(out_sizes[i]);
        strides.push(x_strides[i + 1] * stride[i] as isize);
    }
    for i in 0..dims {
        shape.push(kernel[i]);
        strides.push(x_strides[i + 1] * kernel_dilation[i] as isize);
    }
    shape.push(c_in);
    strides.push(1);
    let positions: usize = out_sizes.iter().product::<usize>() * n;
    let taps: usize = kernel.iter().product();
    let windows = if x.size() == 0 || positions == 0 {
        super::creation::zeros(&shape, x.dtype())?
    } else {
        as_strided(&x, Some(&shape), Some(&strides), 0)?
    };
    let cg = c_in / groups;
    let og = c_out / groups;
    let mut out_shape: Vec<isize> = std::iter::once(n as isize).chain(out_sizes.iter().map(|&s| s as isize)).collect();
    out_shape.push(c_out as isize);
    let y = if groups == 1 {
        let cols = reshape(&windows, &[positions as isize, (taps * c_in) as isize])?;
        let filters = reshape(w, &[c_out as isize, (taps * c_in) as isize])?;
        matmul(&cols, &transpose(&filters, None)?)?
    } else {
        // (P, taps, G, Cg) -> (G, P, taps * Cg) times (G, taps * Cg, Og).
        let cols = reshape(&windows, &[positions as isize, taps as isize, groups as isize, cg as isize])?;
        let cols = reshape(
            &transpose(&cols, Some(&[2, 0, 1, 3]))?,
            &[groups as isize, positions as isize, (taps * cg) as isize],
        )?;
        let filters = reshape(w, &[groups as isize, og as isize, (taps * cg) as isize])?;
        let y = matmul(&cols, &transpose(&filters, Some(&[0, 2, 1]))?)?;
        transpose(&y, Some(&[1, 0, 2]))?
    };
    reshape(&y, &out_shape)
}

/// Options of the `convNd` shorthands: one stride, padding and dilation per
/// axis, symmetric padding, no input dilation, no flip.
fn simple(stride: &[i64], padding: &[i64], dilation: &[i64], groups: i64) -> ConvOptions {
    ConvOptions {
        stride: stride.to_vec(),
        padding_lo: padding.to_vec(),
        padding_hi: padding.to_vec(),
        kernel_dilation: dilation.to_vec(),
        input_dilation: vec![],
        groups,
        flip: false,
    }
}

/// 1-D convolution (cross-correlation) of `(N, L, C_in)` with `(C_out, K, C_in / groups)`.
pub fn conv1d(input: &Array, weight: &Array, stride: i64, padding: i64, dilation: i64, groups: i64) -> Result<Array> {
    conv_nd(input, weight, 1, &simple(&[stride], &[padding], &[dilation], groups))
}

/// 2-D convolution of `(N, H, W, C_in)` with `(C_out, KH, KW, C_in / groups)`.
pub fn conv2d(
    input: &Array,
    weight: &Array,
    stride: [i64; 2],
    padding: [i64; 2],
    dilation: [i64; 2],
    groups: i64,
) -> Result<Array> {
    conv_nd(input, weight, 2, &simple(&stride, &padding, &dilation, groups))
}

/// 3-D convolution of `(N, D, H, W, C_in)` with `(C_out, KD, KH, KW, C_in)`.
pub fn conv3d(
    input: &Array,
    weight: &Array,
    stride: [i64; 3],
    padding: [i64; 3],
    dilation: [i64; 3],
    groups: i64,
) -> Result<Array> {
    conv_nd(input, weight, 3, &simple(&stride, &padding, &dilation, groups))
}

/// A convolution whose input and weight must have `dims` spatial axes
/// (`conv1d`, `conv2d` and `conv3d` with explicit options).
pub fn conv_nd(input: &Array, weight: &Array, dims: usize, options: &ConvOptions) -> Result<Array> {
    if input.ndim() != dims + 2 || weight.ndim() != dims + 2 {
        check_operands(input, weight, dims, options.groups)?;
    }
    conv_general(input, weight, options)
}

/// The transposed convolution (the gradient of a convolution with respect
/// to its input) of `input` with `weight` `(C_out, ..., C_in / groups)`,
/// one entry per spatial axis in each option.
pub fn conv_transpose(
    input: &Array,
    weight: &Array,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    output_padding: &[i64],
    groups: i64,
) -> Result<Array> {
    let dims = stride.len();
    if input.ndim() != dims + 2 || weight.ndim() != dims + 2 {
        check_operands(input, weight, dims, groups)?;
    }
    let mut lo = Vec::with_capacity(dims);
    let mut hi = Vec::with_capacity(dims);
    for i in 0..dims {
        let k = weight.shape()[i + 1] as i64;
        let n = input.shape()[i + 1] as i64;
        let wt_size = 1 + dilation[i] * (k - 1);
        lo.push(wt_size - padding[i] - 1);
        let conv_out = (n - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + 1;
        let out_size = 1 + stride[i] * (n - 1);
        hi.push(conv_out - out_size + padding[i] + output_padding[i]);
    }
    conv_general(
        input,
        weight,
        &ConvOptions {
            stride: vec![1; dims],
            padding_lo: lo,
            padding_hi: hi,
            kernel_dilation: dilation.to_vec(),
            input_dilation: stride.to_vec(),
            groups,
            flip: true,
        },
    )
}

/// The discrete convolution of two 1-D arrays (NumPy's `convolve`) in mode
/// `"full"`, `"valid"` or `"same"`; the longer array is the signal.
pub fn convolve(a: &Array, v: &Array, mode: &str) -> Result<Array> {
    let op = "convolve";
    if a.ndim() != 1 || v.ndim() != 1 {
        return Err(Error::invalid(op, "Inputs must be 1D."));
    }
    if a.size() == 0 || v.size() == 0 {
        return Err(Error::invalid(op, "Inputs cannot be empty."));
    }
    let (signal, filter) = if a.size() < v.size() { (v, a) } else { (a, v) };
    let k = filter.size() as i64;
    let filter = flip(filter, None)?;
    let mut x = reshape(signal, &[1, -1, 1])?;
    let w = reshape(&filter, &[1, -1, 1])?;
    let padding = match mode {
        "full" => k - 1,
        "valid" => 0,
        "same" if k % 2 == 1 => k / 2,
        "same" => {
            let lo = k / 2;
            let hi = (lo - 1).max(0);
            let zero = Array::scalar_of(crate::Scalar::Float(0.0), x.dtype());
            x = pad(&x, &[(0, 0), (lo, hi), (0, 0)], PadMode::Constant, &zero)?;
            0
        }
        _ => return Err(Error::invalid(op, "Invalid mode.")),
    };
    reshape(&conv1d(&x, &w, 1, padding, 1, 1)?, &[-1])
}
