//! Host buffers: one typed [`HostVec`] per dtype. Buffers ferrox owns are
//! counted by the memory accounting and recycled through the cache; foreign
//! ones (zero-copy imports) are neither: ferrox did not allocate them, GPU
//! imports are not counted either, and MLX's active memory likewise counts
//! only what its own allocator hands out.

use super::host_vec::HostVec;
use crate::dtype::Dtype;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::memory;
use crate::shape::{numel, Layout};
use half::{bf16, f16};
use num_complex::Complex32;
use std::ptr::NonNull;

/// A typed host buffer.
#[derive(Debug, Clone)]
pub enum CpuBuffer {
    /// bool elements.
    Bool(HostVec<bool>),
    /// uint8 elements.
    U8(HostVec<u8>),
    /// uint16 elements.
    U16(HostVec<u16>),
    /// uint32 elements.
    U32(HostVec<u32>),
    /// uint64 elements.
    U64(HostVec<u64>),
    /// int8 elements.
    I8(HostVec<i8>),
    /// int16 elements.
    I16(HostVec<i16>),
    /// int32 elements.
    I32(HostVec<i32>),
    /// int64 elements.
    I64(HostVec<i64>),
    /// float16 elements.
    F16(HostVec<f16>),
    /// bfloat16 elements.
    BF16(HostVec<bf16>),
    /// float32 elements.
    F32(HostVec<f32>),
    /// float64 elements.
    F64(HostVec<f64>),
    /// complex64 elements.
    C64(HostVec<Complex32>),
}

/// Runs `$body` with `$v` bound to the typed [`HostVec`] inside a [`CpuBuffer`]
/// (or a reference to one), whatever its dtype.
#[macro_export]
#[doc(hidden)]
macro_rules! with_buffer {
    ($buf:expr, $v:ident => $body:expr) => {{
        use $crate::backend::cpu::CpuBuffer as B;
        match $buf {
            B::Bool($v) => $body,
            B::U8($v) => $body,
            B::U16($v) => $body,
            B::U32($v) => $body,
            B::U64($v) => $body,
            B::I8($v) => $body,
            B::I16($v) => $body,
            B::I32($v) => $body,
            B::I64($v) => $body,
            B::F16($v) => $body,
            B::BF16($v) => $body,
            B::F32($v) => $body,
            B::F64($v) => $body,
            B::C64($v) => $body,
        }
    }};
}

/// Like [`with_buffer!`] for the inexact dtypes; `$other` is evaluated for the rest.
#[macro_export]
#[doc(hidden)]
macro_rules! with_float_buffer {
    ($buf:expr, $v:ident => $body:expr, _ => $other:expr) => {{
        use $crate::backend::cpu::CpuBuffer as B;
        match $buf {
            B::F16($v) => $body,
            B::BF16($v) => $body,
            B::F32($v) => $body,
            B::F64($v) => $body,
            B::C64($v) => $body,
            _ => $other,
        }
    }};
}

/// Like [`with_buffer!`] for the real floats; `$other` is evaluated for the rest.
#[macro_export]
#[doc(hidden)]
macro_rules! with_real_float_buffer {
    ($buf:expr, $v:ident => $body:expr, _ => $other:expr) => {{
        use $crate::backend::cpu::CpuBuffer as B;
        match $buf {
            B::F16($v) => $body,
            B::BF16($v) => $body,
            B::F32($v) => $body,
            B::F64($v) => $body,
            _ => $other,
        }
    }};
}

/// Like [`with_buffer!`] for bool and the integers; `$other` is evaluated for the rest.
#[macro_export]
#[doc(hidden)]
macro_rules! with_bits_buffer {
    ($buf:expr, $v:ident => $body:expr, _ => $other:expr) => {{
        use $crate::backend::cpu::CpuBuffer as B;
        match $buf {
            B::Bool($v) => $body,
            B::U8($v) => $body,
            B::U16($v) => $body,
            B::U32($v) => $body,
            B::U64($v) => $body,
            B::I8($v) => $body,
            B::I16($v) => $body,
            B::I32($v) => $body,
            B::I64($v) => $body,
            _ => $other,
        }
    }};
}

/// Runs `$body` with the type alias `$T` naming the element type of `$dtype`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_element_type {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::dtype::Dtype as D;
        match $dtype {
            D::Bool => {
                type $T = bool;
                $body
            }
            D::U8 => {
                type $T = u8;
                $body
            }
            D::U16 => {
                type $T = u16;
                $body
            }
            D::U32 => {
                type $T = u32;
                $body
            }
            D::U64 => {
                type $T = u64;
                $body
            }
            D::I8 => {
                type $T = i8;
                $body
            }
            D::I16 => {
                type $T = i16;
                $body
            }
            D::I32 => {
                type $T = i32;
                $body
            }
            D::I64 => {
                type $T = i64;
                $body
            }
            D::F16 => {
                type $T = half::f16;
                $body
            }
            D::BF16 => {
                type $T = half::bf16;
                $body
            }
            D::F32 => {
                type $T = f32;
                $body
            }
            D::F64 => {
                type $T = f64;
                $body
            }
            D::C64 => {
                type $T = num_complex::Complex32;
                $body
            }
        }
    }};
}

impl CpuBuffer {
    /// The dtype of the elements.
    pub fn dtype(&self) -> Dtype {
        with_buffer!(self, v => element_dtype(v.as_slice()))
    }

    /// Whether the elements live in memory another library owns.
    pub fn is_foreign(&self) -> bool {
        with_buffer!(self, v => v.is_foreign())
    }

    /// A pointer to the bytes for writing, when ferrox owns them (see
    /// [`HostVec::owned_mut_ptr`]).
    pub fn owned_mut_ptr(&mut self) -> Option<*mut u8> {
        with_buffer!(self, v => v.owned_mut_ptr().map(|p| p.cast::<u8>()))
    }
}

/// Element types that live in a [`CpuBuffer`].
pub trait CpuElement: Element + bytemuck::Zeroable {
    /// Wraps elements in the matching buffer variant.
    fn host_buffer(v: HostVec<Self>) -> CpuBuffer;
    /// Wraps a vector in the matching buffer variant.
    fn into_buffer(v: Vec<Self>) -> CpuBuffer {
        Self::host_buffer(v.into())
    }
    /// The typed slice, if the buffer holds this type.
    fn slice_of(b: &CpuBuffer) -> Option<&[Self]>;
    /// The typed vector (copied if the buffer is foreign), if the buffer
    /// holds this type.
    fn from_buffer(b: CpuBuffer) -> Option<Vec<Self>>;
}

macro_rules! cpu_element {
    ($t:ty, $variant:ident) => {
        impl CpuElement for $t {
            fn host_buffer(v: HostVec<Self>) -> CpuBuffer {
                CpuBuffer::$variant(v)
            }
            fn slice_of(b: &CpuBuffer) -> Option<&[Self]> {
                match b {
                    CpuBuffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn from_buffer(b: CpuBuffer) -> Option<Vec<Self>> {
                match b {
                    CpuBuffer::$variant(v) => Some(v.into_vec()),
                    _ => None,
                }
            }
        }
    };
}

cpu_element!(bool, Bool);
cpu_element!(u8, U8);
cpu_element!(u16, U16);
cpu_element!(u32, U32);
cpu_element!(u64, U64);
cpu_element!(i8, I8);
cpu_element!(i16, I16);
cpu_element!(i32, I32);
cpu_element!(i64, I64);
cpu_element!(f16, F16);
cpu_element!(bf16, BF16);
cpu_element!(f32, F32);
cpu_element!(f64, F64);
cpu_element!(Complex32, C64);

/// Buffers at least this large ask the kernel for transparent huge pages.
const HUGE_PAGE_THRESHOLD: usize = 4 << 20;

/// A zero-filled vector, obtained from the allocator already zeroed (large
/// allocations then cost no extra pass over memory). Large buffers are
/// backed by huge pages where the kernel allows, which makes first touch of
/// fresh memory (page faults) several times cheaper, as NumPy does. A
/// refused allocation is an [`Error::OutOfMemory`], never an abort.
pub fn zeroed_vec<T: CpuElement>(n: usize) -> Result<Vec<T>> {
    let bytes = n.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize);
    let Some(bytes) = bytes else {
        return Err(Error::allocation_failed("allocate", usize::MAX, "CPU"));
    };
    if bytes == 0 {
        return Ok(Vec::new());
    }
    if bytes > host_memory_bytes() {
        return Err(Error::allocation_failed("allocate", bytes, "CPU"));
    }
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| Error::allocation_failed("allocate", bytes, "CPU"))?;
    // SAFETY: the layout has a non-zero size. A null result is reported, not
    // used; otherwise the block holds `n` zeroed `T`s (all-zero bytes are a
    // valid `T`: `CpuElement: Zeroable`) allocated by the global allocator
    // with `T`'s layout, which is what `Vec::from_raw_parts` requires.
    let v = unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut T;
        if ptr.is_null() {
            return Err(Error::allocation_failed("allocate", bytes, "CPU"));
        }
        Vec::from_raw_parts(ptr, n, n)
    };
    if bytes >= HUGE_PAGE_THRESHOLD {
        advise_huge_pages(v.as_ptr() as usize, bytes);
    }
    Ok(v)
}

/// A vector of `n` elements for a kernel that writes every one of them:
/// a recycled buffer (stale contents) when one of the right size is cached,
/// otherwise fresh zeroed memory.
pub fn output_vec<T: CpuElement>(n: usize) -> Result<Vec<T>> {
    match super::cache::take(n) {
        Some(v) => Ok(v),
        None => zeroed_vec(n),
    }
}

/// The machine's memory, RAM plus swap, in bytes. A block larger than this
/// can never be backed, so asking for one fails at once: where the OS
/// overcommits, the allocation itself would succeed and filling it would
/// end in the OOM killer instead of a MemoryError.
fn host_memory_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sysinfo only writes the struct it is given.
            let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
            if unsafe { libc::sysinfo(&mut info) } == 0 {
                let unit = (info.mem_unit as usize).max(1);
                let total = (info.totalram as usize).saturating_add(info.totalswap as usize);
                return total.saturating_mul(unit);
            }
        }
        usize::MAX
    })
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(addr: usize, len: usize) {
    const HUGE: usize = 2 << 20;
    let start = addr.next_multiple_of(HUGE);
    let end = (addr + len) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside an allocation we own; madvise only
        // changes how the kernel backs it (failure is harmless and ignored).
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_addr: usize, _len: usize) {}

/// Host storage of one array buffer. Creating and dropping it updates the
/// memory accounting (for buffers ferrox owns).
#[derive(Debug)]
pub struct CpuStorage {
    buffer: CpuBuffer,
}

impl CpuStorage {
    /// Takes ownership of a buffer.
    pub fn new(buffer: CpuBuffer) -> CpuStorage {
        let s = CpuStorage { buffer };
        memory::on_alloc(s.owned_nbytes());
        s
    }

    /// Storage for the elements another library's memory holds (a
    /// zero-copy import; see [`crate::Array::from_foreign_host`] for the
    /// arguments), and the layout that reads them from it. The memory is
    /// shared when `ptr` is aligned to the element size (and, for bool,
    /// every byte is 0 or 1); otherwise the elements are copied and `owner`
    /// is dropped before this returns.
    ///
    /// # Safety
    /// As for [`crate::Array::from_foreign_host`].
    pub(crate) unsafe fn from_foreign(
        ptr: *const u8,
        dtype: Dtype,
        shape: &[usize],
        strides: &[isize],
        owner: impl Send + 'static,
    ) -> Result<(CpuStorage, Layout)> {
        const OP: &str = "from_foreign_host";
        if strides.len() != shape.len() {
            return Err(Error::invalid(
                OP,
                format!("{} strides given for a shape of {} dimensions.", strides.len(), shape.len()),
            ));
        }
        let size = dtype.size();
        let too_large = || Error::invalid(OP, format!("The strides {strides:?} of shape {shape:?} reach too far."));
        if numel(shape) == 0 {
            // Nothing to read: an empty foreign region, owner kept alongside.
            let layout = Layout { shape: shape.to_vec(), strides: strides.to_vec(), offset: 0 };
            // SAFETY: no element is addressed (`foreign` picks an aligned pointer).
            return Ok((unsafe { CpuStorage::foreign(NonNull::dangling(), dtype, 0, owner) }, layout));
        }
        if ptr.is_null() {
            return Err(Error::invalid(OP, "A null pointer cannot hold elements."));
        }
        // The addressed elements span [lo, hi] around element [0, ..., 0].
        let (mut lo, mut hi) = (0isize, 0isize);
        for (&d, &s) in shape.iter().zip(strides) {
            let reach = isize::try_from(d - 1).ok().and_then(|d| d.checked_mul(s)).ok_or_else(too_large)?;
            if reach < 0 {
                lo = lo.checked_add(reach).ok_or_else(too_large)?;
            } else {
                hi = hi.checked_add(reach).ok_or_else(too_large)?;
            }
        }
        let len = hi.checked_sub(lo).and_then(|n| n.checked_add(1)).ok_or_else(too_large)? as usize;
        let bytes = len.checked_mul(size).filter(|&b| b <= isize::MAX as usize).ok_or_else(too_large)?;
        // SAFETY: the caller guarantees every addressed element, and so the
        // span from the lowest to the highest, lies in one allocation.
        let start = unsafe { ptr.offset(lo * size as isize) };
        // SAFETY: as above; the span holds initialized bytes.
        let valid = dtype != Dtype::Bool || unsafe { std::slice::from_raw_parts(start, bytes) }.iter().all(|&b| b <= 1);
        let layout = Layout { shape: shape.to_vec(), strides: strides.to_vec(), offset: (-lo) as usize };
        if (start as usize).is_multiple_of(size) && valid {
            // SAFETY: aligned (checked), valid (bool checked; other dtypes
            // accept any bits), and kept alive by `owner` (caller's contract).
            let storage = unsafe { CpuStorage::foreign(NonNull::new_unchecked(start as *mut u8), dtype, len, owner) };
            return Ok((storage, layout));
        }
        let storage = CpuStorage::filled_with(dtype, numel(shape), |out| {
            if layout.is_row_contiguous() {
                // SAFETY: the elements are dense from `ptr` (so `start == ptr`).
                unsafe { std::ptr::copy_nonoverlapping(ptr, out.as_mut_ptr(), out.len()) };
                return Ok(());
            }
            let mut index = vec![0usize; shape.len()];
            for dst in out.chunks_exact_mut(size) {
                let at: isize = index.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum();
                // SAFETY: an addressed element, inside the span checked above.
                unsafe { std::ptr::copy_nonoverlapping(ptr.offset(at * size as isize), dst.as_mut_ptr(), size) };
                for ax in (0..shape.len()).rev() {
                    index[ax] += 1;
                    if index[ax] < shape[ax] {
                        break;
                    }
                    index[ax] = 0;
                }
            }
            Ok(())
        })?;
        drop(owner);
        Ok((storage, Layout::contiguous(shape)))
    }

    /// Storage over `len` elements of `dtype` at `ptr`, memory another
    /// library owns, without a copy; dropping the storage drops `owner`.
    ///
    /// # Safety
    /// Unless `len` is 0 (then `ptr` is ignored), `ptr` must be aligned for
    /// `dtype`'s element type and address `len` initialized, valid elements
    /// (bool bytes 0 or 1) that stay readable, and unwritten, until `owner`
    /// is dropped.
    unsafe fn foreign(ptr: NonNull<u8>, dtype: Dtype, len: usize, owner: impl Send + 'static) -> CpuStorage {
        unsafe fn typed<T: CpuElement>(ptr: NonNull<u8>, len: usize, owner: impl Send + 'static) -> CpuBuffer {
            let ptr = if len == 0 { NonNull::dangling() } else { ptr.cast::<T>() };
            // SAFETY: the caller's contract; a dangling pointer is aligned.
            T::host_buffer(unsafe { HostVec::foreign(ptr, len, owner) })
        }
        // SAFETY (every arm): the caller's contract, for the element type of `dtype`.
        let buffer = unsafe {
            match dtype {
                Dtype::Bool => typed::<bool>(ptr, len, owner),
                Dtype::U8 => typed::<u8>(ptr, len, owner),
                Dtype::U16 => typed::<u16>(ptr, len, owner),
                Dtype::U32 => typed::<u32>(ptr, len, owner),
                Dtype::U64 => typed::<u64>(ptr, len, owner),
                Dtype::I8 => typed::<i8>(ptr, len, owner),
                Dtype::I16 => typed::<i16>(ptr, len, owner),
                Dtype::I32 => typed::<i32>(ptr, len, owner),
                Dtype::I64 => typed::<i64>(ptr, len, owner),
                Dtype::F16 => typed::<f16>(ptr, len, owner),
                Dtype::BF16 => typed::<bf16>(ptr, len, owner),
                Dtype::F32 => typed::<f32>(ptr, len, owner),
                Dtype::F64 => typed::<f64>(ptr, len, owner),
                Dtype::C64 => typed::<Complex32>(ptr, len, owner),
            }
        };
        CpuStorage::new(buffer)
    }

    /// Whether the buffer is memory another library owns (a zero-copy
    /// import), which ferrox must never write to.
    pub fn is_foreign(&self) -> bool {
        self.buffer.is_foreign()
    }

    /// The buffer, writable (in-place kernels over a donated buffer; its
    /// size and so the memory accounting do not change).
    pub fn buffer_mut(&mut self) -> &mut CpuBuffer {
        &mut self.buffer
    }

    /// Bytes the memory accounting counts: none for foreign memory.
    fn owned_nbytes(&self) -> usize {
        if self.is_foreign() {
            0
        } else {
            self.nbytes()
        }
    }

    /// Wraps a typed vector.
    pub fn from_vec<T: CpuElement>(v: Vec<T>) -> CpuStorage {
        CpuStorage::new(T::into_buffer(v))
    }

    /// The typed buffer.
    pub fn buffer(&self) -> &CpuBuffer {
        &self.buffer
    }

    /// The typed slice; `None` if `T` is not the stored type.
    pub fn as_slice<T: CpuElement>(&self) -> Option<&[T]> {
        T::slice_of(&self.buffer)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_buffer!(&self.buffer, v => v.len())
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored dtype.
    pub fn dtype(&self) -> Dtype {
        with_buffer!(&self.buffer, v => element_dtype(v.as_slice()))
    }

    /// Size of the buffer in bytes.
    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype().size()
    }

    /// The raw bytes of the buffer.
    pub fn bytes(&self) -> &[u8] {
        match &self.buffer {
            CpuBuffer::Bool(v) => {
                // SAFETY: bool is one byte holding 0 or 1.
                unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len()) }
            }
            CpuBuffer::U8(v) => bytemuck::cast_slice(v),
            CpuBuffer::U16(v) => bytemuck::cast_slice(v),
            CpuBuffer::U32(v) => bytemuck::cast_slice(v),
            CpuBuffer::U64(v) => bytemuck::cast_slice(v),
            CpuBuffer::I8(v) => bytemuck::cast_slice(v),
            CpuBuffer::I16(v) => bytemuck::cast_slice(v),
            CpuBuffer::I32(v) => bytemuck::cast_slice(v),
            CpuBuffer::I64(v) => bytemuck::cast_slice(v),
            CpuBuffer::F16(v) => bytemuck::cast_slice(v),
            CpuBuffer::BF16(v) => bytemuck::cast_slice(v),
            CpuBuffer::F32(v) => bytemuck::cast_slice(v),
            CpuBuffer::F64(v) => bytemuck::cast_slice(v),
            CpuBuffer::C64(v) => bytemuck::cast_slice(v),
        }
    }

    /// Builds storage of `dtype` from raw little-endian bytes (length must be
    /// a multiple of the element size; bool bytes are normalised to 0/1).
    pub fn from_bytes(dtype: Dtype, bytes: &[u8]) -> Result<CpuStorage> {
        CpuStorage::filled_with(dtype, bytes.len() / dtype.size(), |out| {
            out.copy_from_slice(bytes);
            Ok(())
        })
    }

    /// Storage of `n` elements of `dtype` whose raw little-endian bytes
    /// `fill` writes (a device download, a file read); bool bytes are
    /// normalised to 0/1 afterwards.
    pub fn filled_with(dtype: Dtype, n: usize, fill: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<CpuStorage> {
        fn typed<T: CpuElement + bytemuck::Pod>(
            n: usize,
            fill: impl FnOnce(&mut [u8]) -> Result<()>,
        ) -> Result<CpuBuffer> {
            let mut v: Vec<T> = output_vec(n)?;
            fill(bytemuck::cast_slice_mut::<T, u8>(&mut v))?;
            Ok(T::into_buffer(v))
        }
        let buffer = match dtype {
            Dtype::Bool => {
                let mut v: Vec<u8> = output_vec(n)?;
                fill(&mut v)?;
                let mut v = std::mem::ManuallyDrop::new(v);
                for b in v.iter_mut() {
                    *b = (*b != 0) as u8;
                }
                // SAFETY: every byte is 0 or 1 (a valid bool), and bool has
                // u8's size and alignment, so the allocation is reused as is.
                CpuBuffer::Bool(
                    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut bool, v.len(), v.capacity()) }.into(),
                )
            }
            Dtype::U8 => typed::<u8>(n, fill)?,
            Dtype::U16 => typed::<u16>(n, fill)?,
            Dtype::U32 => typed::<u32>(n, fill)?,
            Dtype::U64 => typed::<u64>(n, fill)?,
            Dtype::I8 => typed::<i8>(n, fill)?,
            Dtype::I16 => typed::<i16>(n, fill)?,
            Dtype::I32 => typed::<i32>(n, fill)?,
            Dtype::I64 => typed::<i64>(n, fill)?,
            Dtype::F16 => typed::<f16>(n, fill)?,
            Dtype::BF16 => typed::<bf16>(n, fill)?,
            Dtype::F32 => typed::<f32>(n, fill)?,
            Dtype::F64 => typed::<f64>(n, fill)?,
            Dtype::C64 => typed::<Complex32>(n, fill)?,
        };
        Ok(CpuStorage::new(buffer))
    }
}

fn element_dtype<T: Element>(_: &[T]) -> Dtype {
    T::DTYPE
}

impl Drop for CpuStorage {
    fn drop(&mut self) {
        memory::on_free(self.owned_nbytes());
        super::cache::recycle(std::mem::replace(&mut self.buffer, CpuBuffer::U8(Vec::new().into())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_larger_than_the_machine_fails_at_once() {
        // Refused before asking the OS, which may overcommit and say yes.
        let bytes = host_memory_bytes().saturating_add(1);
        assert!(matches!(zeroed_vec::<u8>(bytes), Err(Error::OutOfMemory { .. })));
        assert_eq!(zeroed_vec::<f32>(3).unwrap(), vec![0.0; 3]);
    }
}
