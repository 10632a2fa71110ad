//! Kernels that make data from nothing: fill, ranges, identity matrices.

use super::storage::{output_vec, zeroed_vec, CpuBuffer, CpuElement};
use crate::backend::{integer_range_element, integer_range_terms};
use crate::dtype::Dtype;
use crate::element::Scalar;
use crate::error::Result;
use rayon::prelude::*;

/// Builds a buffer of `dtype` by calling `make::<T>()` with the matching type.
macro_rules! typed_buffer {
    ($dtype:expr, $make:ident ( $($arg:expr),* )) => {
        $crate::with_element_type!($dtype, T => T::into_buffer($make::<T>($($arg),*)?))
    };
}

/// `n` copies of `value` cast to `dtype`.
pub fn full(value: Scalar, dtype: Dtype, n: usize) -> Result<CpuBuffer> {
    fn make<T: CpuElement>(value: Scalar, n: usize) -> Result<Vec<T>> {
        let v = T::from_scalar(value);
        if v == T::zero() {
            zeroed_vec(n)
        } else {
            let mut out = output_vec::<T>(n)?;
            out.par_iter_mut().with_min_len(1 << 14).for_each(|o| *o = v);
            Ok(out)
        }
    }
    Ok(typed_buffer!(dtype, make(value, n)))
}

/// `start + i * step` for i in 0..n: computed in f64 and cast for inexact
/// dtypes; for integer dtypes with MLX's wrapping terms
/// ([`integer_range_terms`]).
pub fn arange(start: f64, step: f64, n: usize, dtype: Dtype) -> Result<CpuBuffer> {
    fn make<T: CpuElement>(start: f64, step: f64, n: usize, dtype: Dtype) -> Result<Vec<T>> {
        let mut out = output_vec::<T>(n)?;
        let it = out.par_iter_mut().with_min_len(1 << 14).enumerate();
        if dtype.is_integer() {
            let (first, step) = integer_range_terms(start, step, dtype);
            it.for_each(|(i, o)| *o = T::from_scalar(Scalar::Int(integer_range_element(first, step, i))));
        } else {
            it.for_each(|(i, o)| *o = T::from_scalar(Scalar::Float(start + i as f64 * step)));
        }
        Ok(out)
    }
    Ok(typed_buffer!(dtype, make(start, step, n, dtype)))
}

/// An `n × m` matrix with ones on diagonal `k` (above the main one for k > 0).
/// Work is proportional to the output, whatever `n` and `k` are.
pub fn eye(n: usize, m: usize, k: isize, dtype: Dtype) -> Result<CpuBuffer> {
    fn make<T: CpuElement>(n: usize, m: usize, k: isize) -> Result<Vec<T>> {
        let mut out = zeroed_vec::<T>(n * m)?;
        // Rows i with 0 <= i + k < m hold a one.
        let first = k.min(0).unsigned_abs().min(n);
        for i in first..n {
            let j = (i as isize).saturating_add(k);
            if j < 0 || j as usize >= m {
                break;
            }
            out[i * m + j as usize] = T::one();
        }
        Ok(out)
    }
    Ok(typed_buffer!(dtype, make(n, m, k)))
}

/// A buffer of `dtype` holding `values`, each cast with C semantics.
pub fn from_scalars(values: &[Scalar], dtype: Dtype) -> Result<CpuBuffer> {
    fn make<T: CpuElement>(values: &[Scalar]) -> Result<Vec<T>> {
        let mut out = output_vec::<T>(values.len())?;
        for (o, &s) in out.iter_mut().zip(values) {
            *o = T::from_scalar(s);
        }
        Ok(out)
    }
    Ok(typed_buffer!(dtype, make(values)))
}
