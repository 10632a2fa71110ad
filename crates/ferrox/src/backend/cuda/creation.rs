//! Kernels that make data from nothing: ranges and identity matrices
//! (fills live with the elementwise kernels).

use super::elementwise::per_thread;
use super::kernels::Family;
use super::launch::{grid_for, launch, Args, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::integer_range_terms;
use crate::dtype::Dtype;
use crate::error::Result;
use std::sync::Arc;

/// `start + i * step` for i in 0..n: computed in f64 and cast for inexact
/// dtypes; for integer dtypes with MLX's wrapping terms
/// ([`integer_range_terms`]).
pub(crate) fn arange(s: &Arc<GpuStream>, start: f64, step: f64, n: usize, dtype: Dtype) -> Result<CudaStorage> {
    let out = CudaStorage::alloc(dtype, n, s)?;
    if n == 0 {
        return Ok(out);
    }
    let grid = (grid_for(n, 1)?, 1, 1);
    if dtype.is_integer() {
        let (first, step) = integer_range_terms(start, step, dtype);
        let args = Args::new().arg(out.ptr_at(0)).arg(n as i64).arg(first).arg(step);
        launch(Family::Creation, dtype, "arange_int", grid, (BLOCK, 1, 1), s, args)?;
    } else {
        let args = Args::new().arg(out.ptr_at(0)).arg(n as i64).arg(start).arg(step);
        launch(Family::Creation, dtype, "arange", grid, (BLOCK, 1, 1), s, args)?;
    }
    Ok(out)
}

/// An `n × m` matrix with ones on diagonal `k`.
pub(crate) fn eye(s: &Arc<GpuStream>, n: usize, m: usize, k: isize, dtype: Dtype) -> Result<CudaStorage> {
    let out = CudaStorage::alloc(dtype, n * m, s)?;
    if n * m > 0 {
        let args = Args::new().arg(out.ptr_at(0)).arg(n as i64).arg(m as i64).arg(k as i64);
        launch(Family::Creation, dtype, "eye", (grid_for(n * m, per_thread(dtype))?, 1, 1), (BLOCK, 1, 1), s, args)?;
    }
    Ok(out)
}
