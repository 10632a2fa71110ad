//! The ops as methods on [`Array`], for chaining: `a.exp()?.sum(None, false)?`.

use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::Result;

macro_rules! unary_methods {
    ($($name:ident),*) => {$(
        #[doc = concat!("Method form of [`ops::", stringify!($name), "`](crate::ops::", stringify!($name), ").")]
        pub fn $name(&self) -> Result<Array> {
            crate::ops::$name(self)
        }
    )*};
}

macro_rules! reduce_methods {
    ($($name:ident),*) => {$(
        #[doc = concat!("Method form of [`ops::", stringify!($name), "`](crate::ops::", stringify!($name), ").")]
        pub fn $name(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
            crate::ops::$name(self, axes, keepdims)
        }
    )*};
}

macro_rules! scan_methods {
    ($($name:ident),*) => {$(
        #[doc = concat!("Method form of [`ops::", stringify!($name), "`](crate::ops::", stringify!($name), ").")]
        pub fn $name(&self, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
            crate::ops::$name(self, axis, reverse, inclusive)
        }
    )*};
}

impl Array {
    unary_methods!(negative, abs, exp, log, sqrt, sin, cos, tanh, sigmoid);
    reduce_methods!(sum, prod, max, min, mean);
    scan_methods!(cumsum, cumprod, cummax, cummin, logcumsumexp);

    /// Method form of [`ops::astype`](crate::ops::astype).
    pub fn astype(&self, dtype: Dtype) -> Result<Array> {
        crate::ops::astype(self, dtype)
    }

    /// Method form of [`ops::reshape`](crate::ops::reshape).
    pub fn reshape(&self, shape: &[isize]) -> Result<Array> {
        crate::ops::reshape(self, shape)
    }

    /// Method form of [`ops::transpose`](crate::ops::transpose).
    pub fn transpose(&self, axes: Option<&[isize]>) -> Result<Array> {
        crate::ops::transpose(self, axes)
    }

    /// The transpose with all axes reversed (`a.T`).
    pub fn t(&self) -> Result<Array> {
        crate::ops::transpose(self, None)
    }

    /// Method form of [`ops::matmul`](crate::ops::matmul).
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        crate::ops::matmul(self, other)
    }

    /// Method form of [`ops::argmax`](crate::ops::argmax).
    pub fn argmax(&self, axis: Option<isize>, keepdims: bool) -> Result<Array> {
        crate::ops::argmax(self, axis, keepdims)
    }

    /// Method form of [`ops::argmin`](crate::ops::argmin).
    pub fn argmin(&self, axis: Option<isize>, keepdims: bool) -> Result<Array> {
        crate::ops::argmin(self, axis, keepdims)
    }

    /// Method form of [`ops::flatten`](crate::ops::flatten).
    pub fn flatten(&self, start_axis: isize, end_axis: isize) -> Result<Array> {
        crate::ops::flatten(self, start_axis, end_axis)
    }

    /// Method form of [`ops::squeeze`](crate::ops::squeeze).
    pub fn squeeze(&self, axes: Option<&[isize]>) -> Result<Array> {
        crate::ops::squeeze(self, axes)
    }

    /// Method form of [`ops::expand_dims`](crate::ops::expand_dims).
    pub fn expand_dims(&self, axes: &[isize]) -> Result<Array> {
        crate::ops::expand_dims(self, axes)
    }

    /// Method form of [`ops::broadcast_to`](crate::ops::broadcast_to).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        crate::ops::broadcast_to(self, shape)
    }

    /// Method form of [`ops::index`](crate::ops::index).
    pub fn index(&self, indices: &[crate::ops::Index]) -> Result<Array> {
        crate::ops::index(self, indices)
    }
}
