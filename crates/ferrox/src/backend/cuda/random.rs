//! Random numbers: MLX's threefry generator and the samplers fused with it
//! (`kernels/random.cu`, the twin of `cpu/random.rs`).

use super::elementwise;
use super::kernels::Family;
use super::launch::{grid_full, launch, Args, BLOCK};
use super::storage::CudaStorage;
use super::stream::GpuStream;
use crate::backend::RandomOp;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::Layout;
use std::sync::Arc;

/// The kernel `random.cu` defines for `op`.
fn kernel(op: RandomOp) -> &'static str {
    match op {
        RandomOp::Bits => "random_bits",
        RandomOp::Uniform => "random_uniform",
        RandomOp::Erfinv => "random_erfinv",
        RandomOp::Normal => "random_normal",
    }
}

/// Whether `random.cu` has `op`'s kernel for `dtype`.
fn has_kernel(op: RandomOp, dtype: Dtype) -> bool {
    use Dtype::*;
    match op {
        RandomOp::Bits => matches!(dtype, U8 | U16 | U32),
        RandomOp::Uniform => matches!(dtype, F16 | BF16 | F32),
        RandomOp::Erfinv => matches!(dtype, F16 | BF16 | F32 | F64 | C64),
        RandomOp::Normal => matches!(dtype, F16 | BF16 | F32 | F64),
    }
}

/// The kernels `random.cu` defines for `dtype` (for the compile check).
pub(crate) fn kernel_names(dtype: Dtype) -> Vec<String> {
    [RandomOp::Bits, RandomOp::Uniform, RandomOp::Erfinv, RandomOp::Normal]
        .into_iter()
        .filter(|&op| has_kernel(op, dtype))
        .map(|op| kernel(op).to_string())
        .collect()
}

/// Counter pairs one thread hashes (`FX_RANDOM_PACK`, 16 bytes of output
/// per half).
fn pack(op: RandomOp, dtype: Dtype) -> usize {
    match (op, dtype) {
        (RandomOp::Bits, _) => 4,
        (_, Dtype::F16 | Dtype::BF16) => 8,
        (_, Dtype::F64) => 2,
        _ => 4,
    }
}

/// `n` elements of `dtype` made by `op` from the uint32 key pairs `layout`
/// selects in `keys`, `n / K` per key for `K` keys.
pub(crate) fn random(
    s: &Arc<GpuStream>,
    op: RandomOp,
    keys: &CudaStorage,
    layout: &Layout,
    n: usize,
    dtype: Dtype,
) -> Result<CudaStorage> {
    if !has_kernel(op, dtype) || keys.dtype() != Dtype::U32 {
        return Err(Error::UnsupportedDtype {
            op: op.name(),
            dtype,
            detail: "internal error: no random kernel for this dtype",
        });
    }
    let out = CudaStorage::alloc(dtype, n, s)?;
    let num_keys = layout.size() / 2;
    if n == 0 || num_keys == 0 {
        return Ok(out);
    }
    let dense;
    let keys_ptr = if layout.is_row_contiguous() {
        keys.ptr_at(layout.offset)
    } else {
        dense = elementwise::copy(s, keys, layout, Dtype::U32)?;
        dense.ptr_at(0)
    };
    let per_elem = n / num_keys;
    // Units per key: bytes for raw bits, floats for complex64, else elements.
    let per_key = match (op, dtype) {
        (RandomOp::Bits, _) => per_elem * dtype.size(),
        (_, Dtype::C64) => 2 * per_elem,
        _ => per_elem,
    };
    let words = if op == RandomOp::Bits { per_key.div_ceil(4) } else { per_key };
    let slots = (words - words / 2).div_ceil(pack(op, dtype));
    let threads = num_keys * slots;
    let args = Args::new().arg(keys_ptr).arg(out.ptr_at(0)).arg(num_keys as i64).arg(per_key as i64).arg(slots as i64);
    launch(Family::Random, dtype, kernel(op), (grid_full(threads, 1), 1, 1), (BLOCK, 1, 1), s, args)?;
    Ok(out)
}
