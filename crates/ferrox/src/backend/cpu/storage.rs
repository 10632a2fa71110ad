//! Host buffers: one typed `Vec` per dtype, counted by the memory accounting.

use crate::dtype::Dtype;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::memory;
use half::{bf16, f16};
use num_complex::Complex32;

/// A typed host buffer.
#[derive(Debug, Clone)]
pub enum CpuBuffer {
    /// bool elements.
    Bool(Vec<bool>),
    /// uint8 elements.
    U8(Vec<u8>),
    /// uint16 elements.
    U16(Vec<u16>),
    /// uint32 elements.
    U32(Vec<u32>),
    /// uint64 elements.
    U64(Vec<u64>),
    /// int8 elements.
    I8(Vec<i8>),
    /// int16 elements.
    I16(Vec<i16>),
    /// int32 elements.
    I32(Vec<i32>),
    /// int64 elements.
    I64(Vec<i64>),
    /// float16 elements.
    F16(Vec<f16>),
    /// bfloat16 elements.
    BF16(Vec<bf16>),
    /// float32 elements.
    F32(Vec<f32>),
    /// float64 elements.
    F64(Vec<f64>),
    /// complex64 elements.
    C64(Vec<Complex32>),
}

/// Runs `$body` with `$v` bound to the typed vector inside a [`CpuBuffer`]
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

/// Element types that live in a [`CpuBuffer`].
pub trait CpuElement: Element + bytemuck::Zeroable {
    /// Wraps a vector in the matching buffer variant.
    fn into_buffer(v: Vec<Self>) -> CpuBuffer;
    /// The typed slice, if the buffer holds this type.
    fn slice_of(b: &CpuBuffer) -> Option<&[Self]>;
    /// The typed vector, if the buffer holds this type.
    fn from_buffer(b: CpuBuffer) -> Option<Vec<Self>>;
}

macro_rules! cpu_element {
    ($t:ty, $variant:ident) => {
        impl CpuElement for $t {
            fn into_buffer(v: Vec<Self>) -> CpuBuffer {
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
                    CpuBuffer::$variant(v) => Some(v),
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
/// memory accounting.
#[derive(Debug)]
pub struct CpuStorage {
    buffer: CpuBuffer,
}

impl CpuStorage {
    /// Takes ownership of a buffer.
    pub fn new(buffer: CpuBuffer) -> CpuStorage {
        let s = CpuStorage { buffer };
        memory::on_alloc(s.nbytes());
        s
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
                CpuBuffer::Bool(unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut bool, v.len(), v.capacity()) })
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
        memory::on_free(self.nbytes());
        super::cache::recycle(std::mem::replace(&mut self.buffer, CpuBuffer::U8(Vec::new())));
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
