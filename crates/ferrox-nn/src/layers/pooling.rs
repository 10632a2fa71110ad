//! Pooling layers over the spatial axes of channels-last inputs:
//! [`MaxPool1d`], [`MaxPool2d`], [`MaxPool3d`], [`AvgPool1d`],
//! [`AvgPool2d`] and [`AvgPool3d`]. As MLX's, they pad the input, view its
//! sliding windows with one strided view (a reshape when the windows tile
//! the input) and reduce them with `max` or `mean`.
//!
//! `kernel_size`, `stride` and `padding` are slices holding one value for
//! every spatial axis (MLX's int) or one value per axis (MLX's tuple).

use crate::module::{Forward, Module};
use ferrox::{ops, Array, Error, Result};

/// How a pooling layer reduces a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reduce {
    /// The maximum; padding is `-inf`.
    Max,
    /// The mean; padding is zero and counts in the mean.
    Mean,
}

/// The windows of `x` (`[N, *spatial, C]`) as `[N, *out_spatial,
/// *window, C]`: a reshape and transpose when the windows tile the input
/// exactly, a strided view otherwise.
fn sliding_windows(x: &Array, window: &[usize], strides: &[usize]) -> Result<Array> {
    let shape = x.shape();
    let spatial = &shape[1..shape.len() - 1];
    let dims = window.len();
    let tiles = spatial.iter().zip(window).zip(strides).all(|((&n, &w), &s)| w == s && n % w == 0);
    if tiles {
        // [N, n0, w0, n1, w1, ..., C] -> [N, n0, n1, ..., w0, w1, ..., C].
        let mut split = vec![shape[0] as isize];
        for (&n, &w) in spatial.iter().zip(window) {
            split.extend([(n / w) as isize, w as isize]);
        }
        split.push(shape[dims + 1] as isize);
        let last = split.len() as isize - 1;
        let mut axes = vec![0];
        axes.extend((1..last).step_by(2));
        axes.extend((2..last).step_by(2));
        axes.push(last);
        return ops::transpose(&x.reshape(&split)?, Some(&axes));
    }
    // Row-major strides of x, in elements.
    let mut row = vec![1isize; shape.len()];
    for i in (0..shape.len() - 1).rev() {
        row[i] = row[i + 1] * shape[i + 1] as isize;
    }
    let mut view_shape = vec![shape[0]];
    view_shape.extend(spatial.iter().zip(window).zip(strides).map(|((&n, &w), &s)| (n - w) / s + 1));
    view_shape.extend(window);
    view_shape.push(shape[dims + 1]);
    let mut view_strides = vec![row[0]];
    view_strides.extend(row[1..=dims].iter().zip(strides).map(|(&r, &s)| r * s as isize));
    view_strides.extend(&row[1..=dims]);
    view_strides.push(row[dims + 1]);
    ops::as_strided(x, Some(&view_shape), Some(&view_strides), 0)
}

/// The shared state and arithmetic of the pooling layers.
#[derive(Clone, Debug)]
struct Pool {
    layer: &'static str,
    reduce: Reduce,
    kernel_size: Vec<usize>,
    stride: Vec<usize>,
    padding: Vec<usize>,
}

/// `values` as `dims` sizes: one value is repeated, `dims` values are kept,
/// anything else is an error naming `layer` and the argument `what`.
fn per_axis(layer: &'static str, what: &str, values: &[usize], dims: usize) -> Result<Vec<usize>> {
    match values.len() {
        1 => Ok(vec![values[0]; dims]),
        n if n == dims => Ok(values.to_vec()),
        _ => {
            let count = if dims == 1 { "1 integer".to_string() } else { format!("{dims} integers") };
            Err(Error::invalid(layer, format!("'{what}' must be an integer or a tuple containing {count}")))
        }
    }
}

/// A tuple as Python prints it, for the error messages.
fn tuple(values: &[usize]) -> String {
    crate::py_shape(values)
}

impl Pool {
    /// A pooling over `dims` spatial axes; `stride` defaults to
    /// `kernel_size`.
    fn new(
        layer: &'static str,
        reduce: Reduce,
        dims: usize,
        kernel_size: &[usize],
        stride: Option<&[usize]>,
        padding: &[usize],
    ) -> Result<Pool> {
        let kernel_size = per_axis(layer, "kernel_size", kernel_size, dims)?;
        let stride = match stride {
            Some(s) => per_axis(layer, "stride", s, dims)?,
            None => kernel_size.clone(),
        };
        let padding = per_axis(layer, "padding", padding, dims)?;
        for (what, values) in [("kernel_size", &kernel_size), ("stride", &stride)] {
            if values.contains(&0) {
                return Err(Error::invalid(layer, format!("'{what}' must be positive but got {}.", tuple(values))));
            }
        }
        Ok(Pool { layer, reduce, kernel_size, stride, padding })
    }

    /// The pooled `x`.
    fn forward(&self, x: &Array) -> Result<Array> {
        let dims = self.kernel_size.len();
        if x.ndim() != dims + 2 {
            return Err(Error::invalid(
                self.layer,
                format!(
                    "Expected an input with {} dimensions [N, ..., C] ({dims} spatial) but got {} dimensions.",
                    dims + 2,
                    x.ndim()
                ),
            ));
        }
        let mut x = x.clone();
        if self.padding.iter().any(|&p| p > 0) {
            let mut widths = vec![(0, 0)];
            widths.extend(self.padding.iter().map(|&p| (p as i64, p as i64)));
            widths.push((0, 0));
            let fill = match self.reduce {
                Reduce::Max => f64::NEG_INFINITY,
                Reduce::Mean => 0.0,
            };
            x = ops::pad(&x, &widths, ops::PadMode::Constant, &crate::float(fill, &x)?)?;
        }
        let spatial = &x.shape()[1..dims + 1];
        let fits = spatial
            .iter()
            .zip(&self.kernel_size)
            .zip(&self.stride)
            .all(|((&n, &w), &s)| (n as i64 - w as i64).div_euclid(s as i64) + 1 >= 0);
        if !fits {
            return Err(Error::invalid(
                self.layer,
                format!(
                    "The pooling window {} with stride {} does not fit the (padded) input's spatial shape {}.",
                    tuple(&self.kernel_size),
                    tuple(&self.stride),
                    tuple(spatial)
                ),
            ));
        }
        // A window one longer than its axis gives no windows (as in MLX).
        let windows = if spatial.iter().zip(&self.kernel_size).any(|(&n, &w)| w > n) {
            let mut shape = vec![x.shape()[0]];
            shape.extend(vec![0; dims]);
            shape.extend(&self.kernel_size);
            shape.push(x.shape()[dims + 1]);
            ops::zeros(&shape, x.dtype())?
        } else {
            sliding_windows(&x, &self.kernel_size, &self.stride)?
        };
        let axes: Vec<isize> = (-(dims as isize) - 1..-1).collect();
        match self.reduce {
            Reduce::Max => ops::max(&windows, Some(&axes), false),
            Reduce::Mean => ops::mean(&windows, Some(&axes), false),
        }
    }
}

/// Defines a pooling layer.
macro_rules! pool_layer {
    ($name:ident, $dims:literal, $reduce:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Debug)]
        pub struct $name {
            pool: Pool,
            training: bool,
        }

        impl $name {
            /// A layer with windows of `kernel_size`, `stride` apart
            /// (`None`: `kernel_size`), after adding `padding` positions on
            /// both sides of each spatial axis. Each takes one value for
            /// every axis or one per axis.
            pub fn new(kernel_size: &[usize], stride: Option<&[usize]>, padding: &[usize]) -> Result<$name> {
                let pool = Pool::new(stringify!($name), Reduce::$reduce, $dims, kernel_size, stride, padding)?;
                Ok($name { pool, training: true })
            }

            /// The window size along each spatial axis.
            pub fn kernel_size(&self) -> &[usize] {
                &self.pool.kernel_size
            }

            /// The distance between windows along each spatial axis.
            pub fn stride(&self) -> &[usize] {
                &self.pool.stride
            }

            /// The padding added on both sides of each spatial axis.
            pub fn padding(&self) -> &[usize] {
                &self.pool.padding
            }
        }

        impl Module for $name {
            entries!();
            training_flag!();
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                self.pool.forward(x)
            }
        }
    };
}

pool_layer!(
    MaxPool1d,
    1,
    Max,
    "1-dimensional max pooling of `[N, L, C]` inputs: the maximum of each window, padded with `-inf`."
);
pool_layer!(
    MaxPool2d,
    2,
    Max,
    "2-dimensional max pooling of `[N, H, W, C]` inputs: the maximum of each window, padded with `-inf`."
);
pool_layer!(
    MaxPool3d,
    3,
    Max,
    "3-dimensional max pooling of `[N, D, H, W, C]` inputs: the maximum of each window, padded with `-inf`."
);
pool_layer!(
    AvgPool1d,
    1,
    Mean,
    "1-dimensional average pooling of `[N, L, C]` inputs: the mean of each window, zero padding counted."
);
pool_layer!(
    AvgPool2d,
    2,
    Mean,
    "2-dimensional average pooling of `[N, H, W, C]` inputs: the mean of each window, zero padding counted."
);
pool_layer!(
    AvgPool3d,
    3,
    Mean,
    "3-dimensional average pooling of `[N, D, H, W, C]` inputs: the mean of each window, zero padding counted."
);
