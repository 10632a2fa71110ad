//! Convolution layers over channels-last inputs: [`Conv1d`], [`Conv2d`],
//! [`Conv3d`] and the transposed [`ConvTranspose1d`], [`ConvTranspose2d`],
//! [`ConvTranspose3d`], with MLX's weight layout
//! `[out_channels, *kernel_size, in_channels / groups]`.
//!
//! Sizes given per spatial axis (`kernel_size`, `stride`, ...) are slices
//! holding one value for every axis (MLX's int) or one value per axis
//! (MLX's tuple).

use crate::init;
use crate::module::{Forward, Module, Param};
use ferrox::{ops, Array, Dtype, Error, Result};

/// The settings of [`Conv1d`], [`Conv2d`] and [`Conv3d`] besides the
/// channels and the kernel size (MLX's keyword arguments).
#[derive(Clone, Debug, PartialEq)]
pub struct ConvLayerOptions {
    /// The step between windows, one value or one per axis (default `[1]`).
    pub stride: Vec<usize>,
    /// Zeros added on both sides of each spatial axis (default `[0]`).
    pub padding: Vec<usize>,
    /// The spacing between filter taps (default `[1]`).
    pub dilation: Vec<usize>,
    /// The number of channel groups (default 1; `Conv3d` takes only 1).
    pub groups: usize,
    /// Whether to add a learned bias (default `true`).
    pub bias: bool,
}

impl Default for ConvLayerOptions {
    fn default() -> ConvLayerOptions {
        ConvLayerOptions { stride: vec![1], padding: vec![0], dilation: vec![1], groups: 1, bias: true }
    }
}

/// The settings of [`ConvTranspose1d`], [`ConvTranspose2d`] and
/// [`ConvTranspose3d`] besides the channels and the kernel size.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvTransposeOptions {
    /// The stride of the matching convolution (default `[1]`).
    pub stride: Vec<usize>,
    /// The padding of the matching convolution (default `[0]`).
    pub padding: Vec<usize>,
    /// The spacing between filter taps (default `[1]`).
    pub dilation: Vec<usize>,
    /// Extra size added to one side of each output axis (default `[0]`).
    pub output_padding: Vec<usize>,
    /// Whether to add a learned bias (default `true`).
    pub bias: bool,
}

impl Default for ConvTransposeOptions {
    fn default() -> ConvTransposeOptions {
        ConvTransposeOptions {
            stride: vec![1],
            padding: vec![0],
            dilation: vec![1],
            output_padding: vec![0],
            bias: true,
        }
    }
}

/// `values` as `dims` integers: one value is repeated, `dims` values are
/// kept, anything else is an error naming `layer` and the argument `what`.
fn per_axis(layer: &'static str, what: &str, values: &[usize], dims: usize) -> Result<Vec<i64>> {
    let out: Vec<i64> = match values.len() {
        1 => vec![values[0] as i64; dims],
        n if n == dims => values.iter().map(|&v| v as i64).collect(),
        _ => {
            let count = if dims == 1 { "1 integer".to_string() } else { format!("{dims} integers") };
            return Err(Error::invalid(layer, format!("'{what}' must be an integer or a tuple containing {count}")));
        }
    };
    Ok(out)
}

/// [`per_axis`], refusing zeros (for strides, dilations and kernel sizes).
fn positive_per_axis(layer: &'static str, what: &str, values: &[usize], dims: usize) -> Result<Vec<i64>> {
    let out = per_axis(layer, what, values, dims)?;
    if out.contains(&0) {
        return Err(Error::invalid(layer, format!("'{what}' must be positive but got {values:?}.")));
    }
    Ok(out)
}

/// A weight of `shape` drawn from `U(-k, k)`, `k = 1 / sqrt(fan_in)`, and a
/// zero bias of `out_channels` when `bias`.
fn init_params(shape: &[usize], fan_in: usize, bias: bool, key: Option<&Array>) -> Result<(Param, Option<Param>)> {
    let scale = (1.0 / fan_in as f64).sqrt();
    let weight = init::uniform(shape, Dtype::F32, -scale, scale, key)?;
    let bias = match bias {
        true => Some(Param::new(ops::zeros(&shape[..1], Dtype::F32)?)),
        false => None,
    };
    Ok((Param::new(weight), bias))
}

/// An error naming `layer` unless `x` is `[N, *spatial, C_in]` with `dims`
/// spatial axes and `in_channels` channels.
fn check_input(layer: &'static str, x: &Array, dims: usize, in_channels: usize) -> Result<()> {
    if x.ndim() != dims + 2 {
        return Err(Error::invalid(
            layer,
            format!(
                "Invalid input array with {} dimensions for {dims}D convolution. Expected an array with {} \
                 dimensions following the format [N, ..., C_in].",
                x.ndim(),
                dims + 2
            ),
        ));
    }
    let c = x.shape()[dims + 1];
    if c != in_channels {
        return Err(Error::invalid(
            layer,
            format!("Expected an input with {in_channels} channels but got {c} channels."),
        ));
    }
    Ok(())
}

/// `y + bias`, or `y` without a bias.
fn add_bias(y: Array, bias: &Option<Param>) -> Result<Array> {
    match bias {
        Some(b) => ops::add(&y, b),
        None => Ok(y),
    }
}

/// Defines a convolution layer over `$dims` spatial axes.
macro_rules! conv_layer {
    ($name:ident, $dims:literal, $layout:literal, $grouped:literal) => {
        #[doc = concat!(
            "A ", stringify!($dims), "-dimensional convolution over a channels-last input `", $layout, "`.\n\n",
            "`weight` has shape `[out_channels, *kernel_size, in_channels / groups]` and is drawn from ",
            "`U(-k, k)`, `k = 1 / sqrt(in_channels / groups * prod(kernel_size))`; `bias` ",
            "(`[out_channels]`) starts at zero."
        )]
        #[derive(Clone, Debug)]
        pub struct $name {
            /// The filters, `[out_channels, *kernel_size, in_channels / groups]`.
            pub weight: Param,
            /// The bias, `[out_channels]`, when the layer has one.
            pub bias: Option<Param>,
            stride: Vec<i64>,
            padding: Vec<i64>,
            dilation: Vec<i64>,
            groups: usize,
            training: bool,
        }

        impl $name {
            /// MLX's defaults: stride 1, no padding, no dilation, one group,
            /// a bias; the weight is drawn from `key` (the global sequence
            /// when `None`).
            pub fn new(
                in_channels: usize,
                out_channels: usize,
                kernel_size: &[usize],
                key: Option<&Array>,
            ) -> Result<$name> {
                $name::with_options(in_channels, out_channels, kernel_size, &ConvLayerOptions::default(), key)
            }

            /// A layer from `in_channels` to `out_channels` with filters of
            /// `kernel_size` and the settings in `options`.
            pub fn with_options(
                in_channels: usize,
                out_channels: usize,
                kernel_size: &[usize],
                options: &ConvLayerOptions,
                key: Option<&Array>,
            ) -> Result<$name> {
                let layer = stringify!($name);
                let groups = options.groups;
                if groups == 0 || (!$grouped && groups != 1) {
                    let allowed = if $grouped { "a positive integer" } else { "1" };
                    return Err(Error::invalid(layer, format!("'groups' must be {allowed} but got {groups}.")));
                }
                if !in_channels.is_multiple_of(groups) {
                    return Err(Error::invalid(
                        layer,
                        format!(
                            "The number of input channels ({in_channels}) must be divisible by the number of \
                             groups ({groups})"
                        ),
                    ));
                }
                let kernel = positive_per_axis(layer, "kernel_size", kernel_size, $dims)?;
                let stride = positive_per_axis(layer, "stride", &options.stride, $dims)?;
                let padding = per_axis(layer, "padding", &options.padding, $dims)?;
                let dilation = positive_per_axis(layer, "dilation", &options.dilation, $dims)?;
                let kernel: Vec<usize> = kernel.iter().map(|&k| k as usize).collect();
                let fan_in = in_channels / groups * kernel.iter().product::<usize>();
                if fan_in == 0 {
                    return Err(Error::invalid(layer, "'in_channels' must be positive but got 0."));
                }
                let mut shape = vec![out_channels];
                shape.extend(&kernel);
                shape.push(in_channels / groups);
                let (weight, bias) = init_params(&shape, fan_in, options.bias, key)?;
                Ok($name { weight, bias, stride, padding, dilation, groups, training: true })
            }

            /// The number of input channels.
            pub fn in_channels(&self) -> usize {
                self.weight.shape()[$dims + 1] * self.groups
            }

            /// The number of output channels.
            pub fn out_channels(&self) -> usize {
                self.weight.shape()[0]
            }

            /// The stride along each spatial axis.
            pub fn stride(&self) -> &[i64] {
                &self.stride
            }

            /// The padding of each spatial axis (both sides).
            pub fn padding(&self) -> &[i64] {
                &self.padding
            }

            /// The dilation along each spatial axis.
            pub fn dilation(&self) -> &[i64] {
                &self.dilation
            }

            /// The number of channel groups.
            pub fn groups(&self) -> usize {
                self.groups
            }
        }

        impl Module for $name {
            entries!("weight": param weight, "bias": opt bias);
            training_flag!();
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                check_input(stringify!($name), x, $dims, self.in_channels())?;
                let options = ops::ConvOptions {
                    stride: self.stride.clone(),
                    padding_lo: self.padding.clone(),
                    padding_hi: self.padding.clone(),
                    kernel_dilation: self.dilation.clone(),
                    input_dilation: vec![1; $dims],
                    groups: self.groups as i64,
                    flip: false,
                };
                add_bias(ops::conv_nd(x, &self.weight, $dims, &options)?, &self.bias)
            }
        }
    };
}

/// Defines a transposed convolution layer over `$dims` spatial axes.
macro_rules! conv_transpose_layer {
    ($name:ident, $dims:literal, $layout:literal) => {
        #[doc = concat!(
            "A ", stringify!($dims), "-dimensional transposed convolution over a channels-last input `",
            $layout, "`.\n\n",
            "`weight` has shape `[out_channels, *kernel_size, in_channels]` and is drawn from `U(-k, k)`, ",
            "`k = 1 / sqrt(in_channels * prod(kernel_size))`; `bias` (`[out_channels]`) starts at zero."
        )]
        #[derive(Clone, Debug)]
        pub struct $name {
            /// The filters, `[out_channels, *kernel_size, in_channels]`.
            pub weight: Param,
            /// The bias, `[out_channels]`, when the layer has one.
            pub bias: Option<Param>,
            stride: Vec<i64>,
            padding: Vec<i64>,
            dilation: Vec<i64>,
            output_padding: Vec<i64>,
            training: bool,
        }

        impl $name {
            /// MLX's defaults: stride 1, no padding, no dilation, no output
            /// padding, a bias; the weight is drawn from `key` (the global
            /// sequence when `None`).
            pub fn new(
                in_channels: usize,
                out_channels: usize,
                kernel_size: &[usize],
                key: Option<&Array>,
            ) -> Result<$name> {
                $name::with_options(in_channels, out_channels, kernel_size, &ConvTransposeOptions::default(), key)
            }

            /// A layer from `in_channels` to `out_channels` with filters of
            /// `kernel_size` and the settings in `options`.
            pub fn with_options(
                in_channels: usize,
                out_channels: usize,
                kernel_size: &[usize],
                options: &ConvTransposeOptions,
                key: Option<&Array>,
            ) -> Result<$name> {
                let layer = stringify!($name);
                let kernel = positive_per_axis(layer, "kernel_size", kernel_size, $dims)?;
                let stride = positive_per_axis(layer, "stride", &options.stride, $dims)?;
                let padding = per_axis(layer, "padding", &options.padding, $dims)?;
                let dilation = positive_per_axis(layer, "dilation", &options.dilation, $dims)?;
                let output_padding = per_axis(layer, "output_padding", &options.output_padding, $dims)?;
                let kernel: Vec<usize> = kernel.iter().map(|&k| k as usize).collect();
                let fan_in = in_channels * kernel.iter().product::<usize>();
                if fan_in == 0 {
                    return Err(Error::invalid(layer, "'in_channels' must be positive but got 0."));
                }
                let mut shape = vec![out_channels];
                shape.extend(&kernel);
                shape.push(in_channels);
                let (weight, bias) = init_params(&shape, fan_in, options.bias, key)?;
                Ok($name { weight, bias, stride, padding, dilation, output_padding, training: true })
            }

            /// The number of input channels.
            pub fn in_channels(&self) -> usize {
                self.weight.shape()[$dims + 1]
            }

            /// The number of output channels.
            pub fn out_channels(&self) -> usize {
                self.weight.shape()[0]
            }

            /// The stride of the matching convolution along each axis.
            pub fn stride(&self) -> &[i64] {
                &self.stride
            }

            /// The padding of the matching convolution along each axis.
            pub fn padding(&self) -> &[i64] {
                &self.padding
            }

            /// The dilation along each spatial axis.
            pub fn dilation(&self) -> &[i64] {
                &self.dilation
            }

            /// The extra size added to one side of each output axis.
            pub fn output_padding(&self) -> &[i64] {
                &self.output_padding
            }
        }

        impl Module for $name {
            entries!("weight": param weight, "bias": opt bias);
            training_flag!();
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                check_input(stringify!($name), x, $dims, self.in_channels())?;
                let y = ops::conv_transpose(
                    x,
                    &self.weight,
                    &self.stride,
                    &self.padding,
                    &self.dilation,
                    &self.output_padding,
                    1,
                )?;
                add_bias(y, &self.bias)
            }
        }
    };
}

conv_layer!(Conv1d, 1, "[N, L, C]", true);
conv_layer!(Conv2d, 2, "[N, H, W, C]", true);
conv_layer!(Conv3d, 3, "[N, D, H, W, C]", false);
conv_transpose_layer!(ConvTranspose1d, 1, "[N, L, C]");
conv_transpose_layer!(ConvTranspose2d, 2, "[N, H, W, C]");
conv_transpose_layer!(ConvTranspose3d, 3, "[N, D, H, W, C]");
