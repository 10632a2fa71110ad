//! [`Out`]: where a kernel writes its elements in place, so that a caller
//! that owns the memory (the fused evaluator's per-block buffers, a block of
//! a larger output) can run the same kernels the eager ops run.

use super::storage::{output_vec, CpuBuffer, CpuElement};
use crate::dtype::Dtype;
use crate::error::{Error, Result};

/// A run of elements of one dtype for a kernel to write, row-major.
pub struct Out<'a> {
    dtype: Dtype,
    ptr: *mut u8,
    len: usize,
    _borrow: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> Out<'a> {
    /// The elements of a typed slice.
    pub fn new<T: CpuElement>(elements: &'a mut [T]) -> Out<'a> {
        Out {
            dtype: T::DTYPE,
            ptr: elements.as_mut_ptr().cast(),
            len: elements.len(),
            _borrow: std::marker::PhantomData,
        }
    }

    /// `len` elements of an owned buffer from element `start` (`None` if
    /// the buffer is foreign or shorter).
    pub fn part_of(buffer: &'a mut CpuBuffer, start: usize, len: usize) -> Option<Out<'a>> {
        crate::with_buffer!(buffer, v => v.owned_mut().and_then(|v| v.get_mut(start..start.checked_add(len)?)).map(Out::new))
    }

    /// `len` elements of `dtype` at `ptr`.
    ///
    /// # Safety
    /// `ptr` must be aligned for `dtype`, point to `len` elements of it that
    /// hold valid values (for bool, bytes of 0 or 1), and be written through
    /// nothing else while the `Out` lives.
    pub unsafe fn from_raw(dtype: Dtype, ptr: *mut u8, len: usize) -> Out<'a> {
        Out { dtype, ptr, len, _borrow: std::marker::PhantomData }
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The elements as `T`, which must be the output's dtype (an error
    /// naming both otherwise).
    pub fn typed<T: CpuElement>(self) -> Result<&'a mut [T]> {
        if T::DTYPE != self.dtype {
            return Err(Error::invalid(
                "compile",
                format!("a kernel producing {} cannot write a {} output", T::DTYPE, self.dtype),
            ));
        }
        // SAFETY: the constructors' contracts: `len` aligned, valid and
        // exclusively borrowed elements of this dtype, which is `T`'s.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<T>(), self.len) })
    }
}

/// A new buffer of `n` elements of `dtype` that `fill` writes in full.
pub fn filled_buffer(dtype: Dtype, n: usize, fill: impl FnOnce(Out) -> Result<()>) -> Result<CpuBuffer> {
    crate::with_element_type!(dtype, T => {
        let mut v = output_vec::<T>(n)?;
        fill(Out::new(&mut v))?;
        Ok(T::into_buffer(v))
    })
}
