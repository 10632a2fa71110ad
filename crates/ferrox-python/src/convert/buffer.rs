//! Objects exporting the buffer protocol (NumPy arrays, `bytes`,
//! `memoryview`, ...) to arrays. Any strides (negative, zero) and either
//! byte order are read; the copy is allocated fallibly, so a view too large
//! for memory is a `MemoryError`, not an abort.

use crate::errors::IntoPyResult;
use ferrox::backend::cpu::CpuStorage;
use ferrox::backend::Storage;
use ferrox::shape::Layout;
use ferrox::{ops, Array, ArrayData, Dtype, Error};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::CStr;
use std::sync::Arc;

/// How the exporter stores one element.
struct Format {
    /// The ferrox dtype it becomes.
    dtype: Dtype,
    /// NumPy's complex128 (two f64), narrowed to complex64 on the way in.
    complex128: bool,
    /// Most significant byte first.
    big_endian: bool,
}

/// Parses a struct-module format string with the given item size.
fn parse_format(format: &str, itemsize: usize) -> Option<Format> {
    let big_endian = format.starts_with(['>', '!']);
    let f = format.trim_start_matches(['@', '=', '<', '>', '!']);
    let mut complex128 = false;
    let dtype = match (f, itemsize) {
        ("?", 1) => Dtype::Bool,
        ("B", 1) => Dtype::U8,
        ("b", 1) => Dtype::I8,
        ("H", 2) => Dtype::U16,
        ("h", 2) => Dtype::I16,
        ("I" | "L", 4) => Dtype::U32,
        ("i" | "l", 4) => Dtype::I32,
        ("Q" | "L" | "N", 8) => Dtype::U64,
        ("q" | "l" | "n", 8) => Dtype::I64,
        ("e", 2) => Dtype::F16,
        ("f", 4) => Dtype::F32,
        ("d", 8) => Dtype::F64,
        ("Zf", 8) => Dtype::C64,
        ("Zd", 16) => {
            complex128 = true;
            Dtype::C64
        }
        _ => return None,
    };
    Some(Format { dtype, complex128, big_endian })
}

/// Releases a buffer view when dropped.
struct View(ffi::Py_buffer);

impl Drop for View {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer.
        unsafe { ffi::PyBuffer_Release(&mut self.0) }
    }
}

/// Reads an object exposing the buffer protocol; `None` if it has none.
pub(super) fn from_buffer(obj: &Bound<'_, PyAny>, dtype: Option<Dtype>) -> PyResult<Option<Array>> {
    // SAFETY: Py_buffer is plain data that PyObject_GetBuffer fills; `View`
    // releases it on every path.
    let mut raw: ffi::Py_buffer = unsafe { std::mem::zeroed() };
    if unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut raw, ffi::PyBUF_RECORDS_RO) } != 0 {
        // Not a buffer: clear the TypeError it raised.
        let _ = PyErr::take(obj.py());
        return Ok(None);
    }
    let view = View(raw);
    let v = &view.0;
    let format = if v.format.is_null() {
        "B".to_string()
    } else {
        // SAFETY: a non-null format is a NUL-terminated string owned by the view.
        unsafe { CStr::from_ptr(v.format) }.to_string_lossy().into_owned()
    };
    let itemsize = v.itemsize as usize;
    let fmt = parse_format(&format, itemsize)
        .ok_or_else(|| PyTypeError::new_err(format!("[array] Unsupported buffer format '{format}'.")))?;
    let ndim = usize::try_from(v.ndim).map_err(|_| PyValueError::new_err("[array] Buffer has a negative ndim."))?;
    // SAFETY: the exporter provides `ndim` shape entries (and strides, when
    // non-null) for the life of the view.
    let shape: Vec<usize> = (0..ndim).map(|i| unsafe { *v.shape.add(i) }.max(0) as usize).collect();
    let strides: Vec<isize> = if v.strides.is_null() {
        ferrox::shape::contiguous_strides(&shape).iter().map(|s| s * itemsize as isize).collect()
    } else {
        (0..ndim).map(|i| unsafe { *v.strides.add(i) }).collect()
    };
    let n = ferrox::shape::numel(&shape);
    if ferrox::shape::checked_nbytes(&shape, fmt.dtype.size()).is_none() {
        return Err(crate::errors::to_py(Error::too_big("array", &shape, fmt.dtype)));
    }
    // The address crosses into the GIL-free section as an integer; the
    // view (held until after the copy) keeps the exporter's memory alive.
    let address = v.buf as usize;
    let out_size = fmt.dtype.size();
    let storage = obj.py().allow_threads(|| {
        CpuStorage::filled_with(fmt.dtype, n, |out| {
            // SAFETY: the exporter guarantees that every (index, stride)
            // combination within `shape` lands inside its buffer.
            unsafe { gather(address as *const u8, &shape, &strides, itemsize, out, out_size, &fmt) };
            Ok(())
        })
    });
    drop(view);
    let storage = storage.map_err(|e| e.in_op("array")).py()?;
    let data = ArrayData { storage: Arc::new(Storage::Cpu(storage)), layout: Layout::contiguous(&shape) };
    let arr = Array::from_data(data, fmt.dtype);
    // MLX turns float64 NumPy data into float32 unless a dtype is asked for.
    if fmt.dtype == Dtype::F64 && dtype.is_none() {
        return Ok(Some(ops::astype(&arr, Dtype::F32).py()?));
    }
    Ok(Some(arr))
}

/// Copies the elements at `base + Σ index·stride` in row-major order into
/// `out` (`out_size` bytes each), converting each from the exporter's
/// format: byte order, and complex128 narrowed to complex64.
///
/// # Safety
/// Every element position must be readable for `itemsize` bytes, and `out`
/// must hold `numel(shape) * out_size` bytes.
unsafe fn gather(
    base: *const u8,
    shape: &[usize],
    strides: &[isize],
    itemsize: usize,
    out: &mut [u8],
    out_size: usize,
    fmt: &Format,
) {
    if out.is_empty() {
        return;
    }
    let contiguous = ferrox::shape::contiguous_strides(shape)
        .iter()
        .zip(strides)
        .zip(shape)
        .all(|((c, s), &d)| d == 1 || c * itemsize as isize == *s);
    let plain = !fmt.complex128 && !fmt.big_endian;
    if contiguous && plain {
        std::ptr::copy_nonoverlapping(base, out.as_mut_ptr(), out.len());
        return;
    }
    let convert = |src: *const u8, dst: &mut [u8]| {
        let src = std::slice::from_raw_parts(src, itemsize);
        if fmt.complex128 {
            for (part, half) in src.chunks_exact(8).zip(dst.chunks_exact_mut(4)) {
                let mut b: [u8; 8] = part.try_into().expect("8 bytes");
                if fmt.big_endian {
                    b.reverse();
                }
                half.copy_from_slice(&(f64::from_le_bytes(b) as f32).to_le_bytes());
            }
        } else if fmt.big_endian && fmt.dtype == Dtype::C64 {
            for (part, half) in src.chunks_exact(4).zip(dst.chunks_exact_mut(4)) {
                half.copy_from_slice(part);
                half.reverse();
            }
        } else {
            dst.copy_from_slice(src);
            if fmt.big_endian {
                dst.reverse();
            }
        }
    };
    // Odometer over all but the last axis; the last axis is a tight loop.
    let nd = shape.len();
    let (inner, inner_stride) = if nd == 0 { (1, 0) } else { (shape[nd - 1], strides[nd - 1]) };
    let outer_shape = if nd == 0 { &[][..] } else { &shape[..nd - 1] };
    let mut idx = vec![0usize; outer_shape.len()];
    let mut row_base = base;
    for row in out.chunks_exact_mut(inner * out_size) {
        for (j, dst) in row.chunks_exact_mut(out_size).enumerate() {
            convert(row_base.offset(j as isize * inner_stride), dst);
        }
        for d in (0..outer_shape.len()).rev() {
            idx[d] += 1;
            row_base = row_base.offset(strides[d]);
            if idx[d] < outer_shape[d] {
                break;
            }
            row_base = row_base.offset(-strides[d] * outer_shape[d] as isize);
            idx[d] = 0;
        }
    }
}
