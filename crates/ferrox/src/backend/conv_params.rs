//! The parameters of a convolution ([`Backend::conv`](super::Backend::conv),
//! the `Convolution` primitive): MLX's channels-last convolution with
//! strides, padding, kernel and input dilation, groups and filter flip.
//!
//! Per spatial axis, with `n` input and `k` filter elements: the input is
//! dilated (`D - 1` zeros between neighbours, `n' = 1 + D (n - 1)`, 0 for an
//! empty axis), `padding_lo` zeros are put before it and `padding_hi` after
//! it (a negative padding crops the dilated sequence instead), and filter
//! tap `i` (`k - 1 - i` when flipped) meets element `o * stride + i * kd` of
//! that sequence for output position `o`. Channels split into `groups`
//! equal groups: output channel `co` reads input channels of group
//! `co / (C_out / groups)`.

use crate::error::{fmt_shape, Error, Result};

/// One convolution's parameters, one entry per spatial axis in each vector.
#[derive(Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub struct ConvParams {
    /// Step between output positions (positive).
    pub stride: Vec<i64>,
    /// Zeros put before the (dilated) input; negative values crop it.
    pub padding_lo: Vec<i64>,
    /// Zeros put after the (dilated) input; negative values crop it.
    pub padding_hi: Vec<i64>,
    /// Spacing between filter taps (positive).
    pub kernel_dilation: Vec<i64>,
    /// Spacing between input elements (positive; > 1 for transposed convolutions).
    pub input_dilation: Vec<i64>,
    /// Number of channel groups (positive).
    pub groups: usize,
    /// Whether filters are flipped along their spatial axes (a convolution
    /// rather than a cross-correlation).
    pub flip: bool,
}

/// The extent of `n` elements with `d - 1` gaps between neighbours (0 for none).
pub fn dilated(n: usize, d: i64) -> i64 {
    if n == 0 {
        0
    } else {
        1 + d * (n as i64 - 1)
    }
}

impl ConvParams {
    /// The number of spatial axes.
    pub fn dims(&self) -> usize {
        self.stride.len()
    }

    /// The output shape `(N, out..., C_out)` for an input of shape
    /// `(N, in..., C_in)` and filters `(C_out, k..., C_in / groups)`, after
    /// checking that the shapes fit the parameters; errors name `op`.
    pub fn output_shape(&self, op: &'static str, x: &[usize], w: &[usize]) -> Result<Vec<usize>> {
        let dims = self.dims();
        let lists = [&self.padding_lo, &self.padding_hi, &self.kernel_dilation, &self.input_dilation];
        if !(1..=3).contains(&dims) || lists.iter().any(|v| v.len() != dims) {
            return Err(Error::invalid(op, "needs one stride, padding and dilation per spatial axis (1 to 3 axes)."));
        }
        if x.len() != dims + 2 || w.len() != dims + 2 {
            return Err(Error::invalid(
                op,
                format!("expects an input and weight of rank {}, got {} and {}.", dims + 2, fmt_shape(x), fmt_shape(w)),
            ));
        }
        let positive = |v: &[i64]| v.iter().all(|&s| s > 0);
        if !positive(&self.stride) || !positive(&self.kernel_dilation) || !positive(&self.input_dilation) {
            return Err(Error::invalid(op, "strides and dilations must be positive."));
        }
        let (c_in, c_out, g) = (x[dims + 1], w[0], self.groups);
        if g == 0 || c_in % g != 0 || c_out % g != 0 || c_in != g * w[dims + 1] {
            return Err(Error::invalid(
                op,
                format!("input {} and weight {} do not fit {g} channel groups.", fmt_shape(x), fmt_shape(w)),
            ));
        }
        let mut out = vec![x[0]];
        for a in 0..dims {
            let span = dilated(x[a + 1], self.input_dilation[a]) + self.padding_lo[a] + self.padding_hi[a]
                - dilated(w[a + 1], self.kernel_dilation[a]);
            if span < 0 {
                return Err(Error::invalid(
                    op,
                    format!(
                        "the padded input {} is smaller than the filters {} along spatial axis {a}.",
                        fmt_shape(x),
                        fmt_shape(w)
                    ),
                ));
            }
            out.push((span / self.stride[a] + 1) as usize);
        }
        out.push(c_out);
        Ok(out)
    }
}
