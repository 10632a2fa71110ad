//! Convolutions with MLX's channels-last layout: `conv_general` (strides,
//! asymmetric padding, kernel and input dilation, groups, flip), `conv1d`,
//! `conv2d`, `conv3d`, their transposes and `convolve`.
//!
//! Every builder checks its arguments as MLX does, promotes the operands to
//! one dtype and adds one [`Convolution`] node (the backends' `conv`
//! kernels; its derivatives and batching rules are convolutions again).

use super::elementwise::astype;
use super::rearrange::slice_axis;
use super::shaping::reshape;
use crate::array::Array;
use crate::backend::{dilated, ConvParams};
use crate::dtype::Dtype;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::{Convolution, Primitive};

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
        let k = dilated(w.shape()[i + 1], kd[i]);
        let n = dilated(x.shape()[i + 1], id[i]);
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
    }
    let params = ConvParams {
        stride,
        padding_lo: lo,
        padding_hi: hi,
        kernel_dilation: kd,
        input_dilation: id,
        groups: options.groups as usize,
        flip: options.flip,
    };
    conv_with_params(&x, &w, &params)
}

/// One convolution node with explicit parameters (negative padding crops
/// the dilated input; groups work for every rank), without MLX's argument
/// rules: the operands must already share a real float dtype. The
/// derivatives and batching rules of convolutions are built with it.
pub fn conv_with_params(input: &Array, weight: &Array, params: &ConvParams) -> Result<Array> {
    let p = Convolution(params.clone());
    let spec = p.output_specs(&[input.clone(), weight.clone()])?.remove(0);
    Array::from_primitive(spec.shape, spec.dtype, p, vec![input.clone(), weight.clone()])
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
/// As MLX's, it is [`conv_general`] with one stride, padding and dilation:
/// inputs with more spatial axes take them on every axis.
pub fn conv1d(input: &Array, weight: &Array, stride: i64, padding: i64, dilation: i64, groups: i64) -> Result<Array> {
    conv_general(input, weight, &simple(&[stride], &[padding], &[dilation], groups))
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
    let (lo, hi) = match mode {
        "full" => (k - 1, k - 1),
        "valid" => (0, 0),
        "same" => (k / 2, (k - 1) / 2),
        _ => return Err(Error::invalid(op, "Invalid mode.")),
    };
    let options = ConvOptions { padding_lo: vec![lo], padding_hi: vec![hi], flip: true, ..ConvOptions::default() };
    let x = reshape(signal, &[1, -1, 1])?;
    let w = reshape(filter, &[1, -1, 1])?;
    reshape(&conv_nd(&x, &w, 1, &options)?, &[-1])
}
