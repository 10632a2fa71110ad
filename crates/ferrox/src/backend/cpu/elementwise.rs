//! Elementwise kernels: unary maps, binary maps with broadcasting, select
//! (`where`) and casting copies. Each has a contiguous fast path and the
//! general strided path.

use super::out::{filled_buffer, Out};
use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{
    fill_strided, map1_at, map2_at, map_contiguous, map_in_place, simd_level, zip_contiguous, zip_in_place,
};
use crate::backend::{BinaryOp, UnaryOp};
use crate::dtype::Dtype;
use crate::element::{BitsElement, Element, FloatElement, RealFloatElement};
use crate::error::{Error, Result};
use crate::shape::Layout;

/// `f` applied to every element `l` selects in `x`; row-major output.
pub fn map_unary<T: CpuElement, U: CpuElement>(
    x: &[T],
    l: &Layout,
    f: impl Fn(T) -> U + Sync + Copy,
) -> Result<Vec<U>> {
    let mut out = output_vec::<U>(l.size())?;
    map_unary_into(x, l, &mut out, f);
    Ok(out)
}

/// [`map_unary`] into `out`, which holds `l.size()` elements.
pub fn map_unary_into<T: CpuElement, U: CpuElement>(
    x: &[T],
    l: &Layout,
    out: &mut [U],
    f: impl Fn(T) -> U + Sync + Copy,
) {
    let n = out.len();
    if n == 0 {
        return;
    }
    if l.is_row_contiguous() {
        map_contiguous(&x[l.offset..l.offset + n], out, f);
    } else {
        fill_strided(&l.shape, [&l.strides], [l.offset], out, |o, [b], [s]| {
            if s == 1 {
                let (b, m) = (b as usize, o.len());
                for (o, &v) in o.iter_mut().zip(&x[b..b + m]) {
                    *o = f(v);
                }
            } else {
                for (j, o) in o.iter_mut().enumerate() {
                    *o = f(x[(b + j as isize * s) as usize]);
                }
            }
        });
    }
}

/// The identity from `U` to `T` when the two are one type (an in-place
/// kernel writes its results where its arguments were); `None` otherwise.
fn same_type_as<T: CpuElement, U: CpuElement>() -> Option<fn(U) -> T> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<U>()).then_some(|u: U| {
        // SAFETY: returned only when T and U are the same type.
        unsafe { std::mem::transmute_copy::<U, T>(&u) }
    })
}

/// The error for an in-place kernel asked to change the element type or to
/// write memory ferrox does not own (the scheduler checks both first).
fn not_in_place(op: &'static str) -> Error {
    Error::invalid(op, "internal error: this buffer cannot be overwritten in place")
}

/// [`map_unary`] written over `v`, whose elements `l` (row-contiguous)
/// selects; the element type is kept.
pub fn map_unary_in_place<T: CpuElement, U: CpuElement>(
    op: &'static str,
    v: &mut super::HostVec<T>,
    l: &Layout,
    f: impl Fn(T) -> U + Sync + Copy,
) -> Result<()> {
    let (Some(cast), Some(data)) = (same_type_as::<T, U>(), v.owned_mut()) else { return Err(not_in_place(op)) };
    map_in_place(&mut data[l.offset..l.offset + l.size()], move |x| cast(f(x)));
    Ok(())
}

/// [`map_binary`] written over the donor operand `v` (row-contiguous `ld`,
/// the output's shape), the other operand `b` read through `lb`; `f`'s
/// arguments in the op's order (`donor_is_lhs`).
#[allow(clippy::too_many_arguments)]
pub fn map_binary_in_place<T: CpuElement, U: CpuElement>(
    op: &'static str,
    v: &mut super::HostVec<T>,
    ld: &Layout,
    b: &[T],
    lb: &Layout,
    donor_is_lhs: bool,
    f: impl Fn(T, T) -> U + Sync + Copy,
) -> Result<()> {
    let (Some(cast), Some(data)) = (same_type_as::<T, U>(), v.owned_mut()) else { return Err(not_in_place(op)) };
    let g = move |x: T, y: T| cast(if donor_is_lhs { f(x, y) } else { f(y, x) });
    let n = ld.size();
    let d = &mut data[ld.offset..ld.offset + n];
    if n == 0 {
        return Ok(());
    }
    if lb.is_row_contiguous() {
        zip_in_place(d, &b[lb.offset..lb.offset + n], g);
    } else if lb.reads_one_element() {
        let s = b[lb.offset];
        map_in_place(d, |x| g(x, s));
    } else {
        fill_strided(&lb.shape, [&lb.strides], [lb.offset], d, |o, [bb], [sb]| {
            for (j, o) in o.iter_mut().enumerate() {
                *o = g(*o, b[(bb + j as isize * sb) as usize]);
            }
        });
    }
    Ok(())
}

/// `f(a, b)` for every pair of elements; both layouts have the output shape.
pub fn map_binary<T: CpuElement, U: CpuElement>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    f: impl Fn(T, T) -> U + Sync + Copy,
) -> Result<Vec<U>> {
    let mut out = output_vec::<U>(la.size())?;
    map_binary_into(a, la, b, lb, &mut out, f);
    Ok(out)
}

/// [`map_binary`] into `out`, which holds `la.size()` elements.
pub fn map_binary_into<T: CpuElement, U: CpuElement>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    out: &mut [U],
    f: impl Fn(T, T) -> U + Sync + Copy,
) {
    let n = out.len();
    if n == 0 {
        return;
    }
    let (ca, cb) = (la.is_row_contiguous(), lb.is_row_contiguous());
    if ca && cb {
        zip_contiguous(&a[la.offset..la.offset + n], &b[lb.offset..lb.offset + n], out, f);
    } else if ca && lb.reads_one_element() {
        let s = b[lb.offset];
        map_contiguous(&a[la.offset..la.offset + n], out, |x| f(x, s));
    } else if cb && la.reads_one_element() {
        let s = a[la.offset];
        map_contiguous(&b[lb.offset..lb.offset + n], out, |y| f(s, y));
    } else {
        fill_strided(
            &la.shape,
            [&la.strides, &lb.strides],
            [la.offset, lb.offset],
            out,
            |o, [ba, bb], [sa, sb]| match (sa, sb) {
                (1, 1) => {
                    let (ba, bb) = (ba as usize, bb as usize);
                    let m = o.len();
                    for ((o, &x), &y) in o.iter_mut().zip(&a[ba..ba + m]).zip(&b[bb..bb + m]) {
                        *o = f(x, y);
                    }
                }
                (1, 0) => {
                    let (ba, y, m) = (ba as usize, b[bb as usize], o.len());
                    for (o, &x) in o.iter_mut().zip(&a[ba..ba + m]) {
                        *o = f(x, y);
                    }
                }
                (0, 1) => {
                    let (x, bb, m) = (a[ba as usize], bb as usize, o.len());
                    for (o, &y) in o.iter_mut().zip(&b[bb..bb + m]) {
                        *o = f(x, y);
                    }
                }
                _ => {
                    for (j, o) in o.iter_mut().enumerate() {
                        let j = j as isize;
                        *o = f(a[(ba + j * sa) as usize], b[(bb + j * sb) as usize]);
                    }
                }
            },
        );
    }
}

/// The elements `l` selects, row-contiguous and cast to `U`.
pub fn cast<T: CpuElement, U: CpuElement>(x: &[T], l: &Layout) -> Result<Vec<U>> {
    map_unary(x, l, cast_element::<T, U>)
}

/// One element cast from `T` to `U` (the element function of every cast).
fn cast_element<T: CpuElement, U: CpuElement>(v: T) -> U {
    U::from_scalar(v.to_scalar())
}

/// Copies and casts a buffer to `dtype`.
pub fn cast_buffer(x: &CpuBuffer, l: &Layout, dtype: crate::dtype::Dtype) -> Result<CpuBuffer> {
    filled_buffer(dtype, l.size(), |out| cast_into(x, l, out))
}

/// Casts the elements `l` selects into `out` (of any dtype).
pub fn cast_into(x: &CpuBuffer, l: &Layout, out: Out) -> Result<()> {
    crate::with_element_type!(out.dtype(), U => crate::with_buffer!(x, v => {
        map_unary_into(v, l, out.typed::<U>()?, cast_element);
        Ok(())
    }))
}

/// The elements `l` selects, row-contiguous, with their bytes read as
/// `dtype` (little endian, as every supported host is); bytes that become
/// bools are normalised to 0 or 1.
pub fn bitcast_buffer(x: &CpuBuffer, l: &Layout, dtype: crate::dtype::Dtype) -> Result<CpuBuffer> {
    fn bytes_of<T: CpuElement>(v: &[T]) -> &[u8] {
        // SAFETY: every element type is plain old data (no padding, no
        // pointers); the slice covers exactly the vector's elements.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }
    fn read<U: CpuElement>(bytes: &[u8]) -> Result<CpuBuffer> {
        let n = bytes.len() / std::mem::size_of::<U>();
        let mut out = output_vec::<U>(n)?;
        // SAFETY: `out` has room for `n` elements of U = `bytes.len()` bytes,
        // U is plain old data other than bool (handled by the caller), and
        // the regions do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr() as *mut u8, n * std::mem::size_of::<U>())
        };
        Ok(U::into_buffer(out))
    }
    let dense = copy_buffer(x, l)?;
    crate::with_buffer!(&dense, v => {
        let bytes = bytes_of(v);
        use crate::dtype::Dtype as D;
        match dtype {
            D::Bool => Ok(CpuBuffer::Bool(bytes.iter().map(|&b| b != 0).collect::<Vec<_>>().into())),
            D::U8 => read::<u8>(bytes),
            D::U16 => read::<u16>(bytes),
            D::U32 => read::<u32>(bytes),
            D::U64 => read::<u64>(bytes),
            D::I8 => read::<i8>(bytes),
            D::I16 => read::<i16>(bytes),
            D::I32 => read::<i32>(bytes),
            D::I64 => read::<i64>(bytes),
            D::F16 => read::<half::f16>(bytes),
            D::BF16 => read::<half::bf16>(bytes),
            D::F32 => read::<f32>(bytes),
            D::F64 => read::<f64>(bytes),
            D::C64 => read::<num_complex::Complex32>(bytes),
        }
    })
}

/// A same-dtype contiguous copy of the elements `l` selects.
pub fn copy_buffer(x: &CpuBuffer, l: &Layout) -> Result<CpuBuffer> {
    Ok(crate::with_buffer!(x, v => CpuElement::into_buffer(map_unary(v, l, |e| e)?)))
}

/// A kernel resolved once for a fused program's step: it reads `len`
/// contiguous elements at each operand pointer and writes `len` at the
/// output pointer, through the element function the eager kernel of the
/// same op and dtypes applies (so results agree bit for bit).
pub struct RunKernel {
    out_dtype: Dtype,
    apply: Box<RunFn>,
}

/// A run kernel's body: operand pointers, output pointer, element count.
type RunFn = dyn Fn(&[*const u8], *mut u8, usize) + Send + Sync;

impl RunKernel {
    fn new<U: CpuElement>(apply: impl Fn(&[*const u8], *mut u8, usize) + Send + Sync + 'static) -> RunKernel {
        RunKernel { out_dtype: U::DTYPE, apply: Box::new(apply) }
    }

    /// The dtype the kernel writes.
    pub fn out_dtype(&self) -> Dtype {
        self.out_dtype
    }

    /// Runs the kernel over `len` elements.
    ///
    /// # Safety
    /// `operands` holds one pointer per operand of the op, each to `len`
    /// valid, aligned elements of the dtype the kernel was resolved for;
    /// `out` points to `len` valid, aligned elements of [`Self::out_dtype`]
    /// that overlap no operand and that nothing else accesses meanwhile.
    pub unsafe fn run(&self, operands: &[*const u8], out: *mut u8, len: usize) {
        (self.apply)(operands, out, len)
    }
}

/// The typed elements behind a run kernel's pointers ([`RunKernel::run`]'s
/// contract makes these valid).
unsafe fn run_slices<'a, T, U>(operand: *const u8, out: *mut u8, len: usize) -> (&'a [T], &'a mut [U]) {
    (std::slice::from_raw_parts(operand.cast::<T>(), len), std::slice::from_raw_parts_mut(out.cast::<U>(), len))
}

/// A run kernel applying `f` to one operand (`_probe` names its type).
pub(super) fn run_unary<T: CpuElement, U: CpuElement>(
    _probe: &[T],
    f: impl Fn(T) -> U + Copy + Send + Sync + 'static,
) -> RunKernel {
    let level = simd_level();
    RunKernel::new::<U>(move |operands, out, len| {
        // SAFETY: `RunKernel::run`'s contract.
        let (x, o) = unsafe { run_slices::<T, U>(operands[0], out, len) };
        map1_at(level, x, o, &f)
    })
}

/// A run kernel applying `f` to two operands of one type.
fn run_binary<T: CpuElement, U: CpuElement>(
    _probe: &[T],
    f: impl Fn(T, T) -> U + Copy + Send + Sync + 'static,
) -> RunKernel {
    let level = simd_level();
    RunKernel::new::<U>(move |operands, out, len| {
        // SAFETY: `RunKernel::run`'s contract.
        let (a, o) = unsafe { run_slices::<T, U>(operands[0], out, len) };
        // SAFETY: as above, for the second operand.
        let b = unsafe { std::slice::from_raw_parts(operands[1].cast::<T>(), len) };
        map2_at(level, a, b, o, &f)
    })
}

/// An empty buffer of `dtype`: it selects a table row's typed arm when a
/// kernel is resolved for a dtype rather than run on a buffer.
fn probe(dtype: Dtype) -> CpuBuffer {
    crate::with_element_type!(dtype, T => CpuElement::into_buffer(Vec::<T>::new()))
}

/// The run kernel of unary `op` over `dtype` (its compute dtype).
pub fn unary_run_kernel(op: UnaryOp, dtype: Dtype) -> Result<RunKernel> {
    unary_kernel_for(op, &probe(dtype))
}

/// The run kernel of binary `op` over operands of `dtype`.
pub fn binary_run_kernel(op: BinaryOp, dtype: Dtype) -> Result<RunKernel> {
    let probe = probe(dtype);
    binary_kernel_for(op, &probe, &probe)
}

/// The run kernel of `where(cond, x, y)` with `x` and `y` of `dtype` (as
/// [`select_into`]).
pub fn select_run_kernel(dtype: Dtype) -> RunKernel {
    fn typed<T: CpuElement>() -> RunKernel {
        RunKernel::new::<T>(|operands, out, len| {
            // SAFETY: `RunKernel::run`'s contract (the condition is bool).
            let (cond, o) = unsafe { run_slices::<bool, T>(operands[0], out, len) };
            // SAFETY: as above, for the two values.
            let (x, y) = unsafe {
                (
                    std::slice::from_raw_parts(operands[1].cast::<T>(), len),
                    std::slice::from_raw_parts(operands[2].cast::<T>(), len),
                )
            };
            for (((o, &c), &x), &y) in o.iter_mut().zip(cond).zip(x).zip(y) {
                *o = if c { x } else { y };
            }
        })
    }
    crate::with_element_type!(dtype, T => typed::<T>())
}

/// The run kernel casting `from` to `to` (as [`cast_into`]).
pub fn cast_run_kernel(from: Dtype, to: Dtype) -> RunKernel {
    crate::with_element_type!(to, U => crate::with_element_type!(from, T => run_unary(&[] as &[T], cast_element::<T, U>)))
}

/// One `if` per op of the unary table: if `$op` is this row, returns
/// `$apply!(v, f, $extra..)` for the typed elements `v` of `$x` and the
/// row's element function `f`, over the buffer types of the row's kind.
macro_rules! unary_arm {
    (float, $name:ident, $Var:ident, $op:ident, $x:ident, $apply:ident($($extra:ident),*)) => {
        if $op == UnaryOp::$Var {
            return crate::with_float_buffer!($x, v => $apply!(v, FloatElement::$name $(, $extra)*),
                _ => Err(refused($op, $x)));
        }
    };
    (real_float, $name:ident, $Var:ident, $op:ident, $x:ident, $apply:ident($($extra:ident),*)) => {
        if $op == UnaryOp::$Var {
            return crate::with_real_float_buffer!($x, v => $apply!(v, RealFloatElement::$name $(, $extra)*),
                _ => Err(refused($op, $x)));
        }
    };
    (bits, $name:ident, $Var:ident, $op:ident, $x:ident, $apply:ident($($extra:ident),*)) => {
        if $op == UnaryOp::$Var {
            return crate::with_bits_buffer!($x, v => $apply!(v, BitsElement::$name $(, $extra)*),
                _ => Err(refused($op, $x)));
        }
    };
    ($any:ident, $name:ident, $Var:ident, $op:ident, $x:ident, $apply:ident($($extra:ident),*)) => {
        if $op == UnaryOp::$Var {
            return crate::with_buffer!($x, v => $apply!(v, Element::$name $(, $extra)*));
        }
    };
}

/// A unary arm's kernel into a new buffer.
macro_rules! unary_to_buffer {
    ($v:ident, $f:path, $l:ident) => {
        Ok(CpuElement::into_buffer(map_unary($v, $l, $f)?))
    };
}

/// A unary arm's kernel into an [`Out`].
macro_rules! unary_to_out {
    ($v:ident, $f:path, $l:ident, $out:ident) => {{
        map_unary_into($v, $l, $out.typed()?, $f);
        Ok(())
    }};
}

/// A unary arm's kernel over its own (donated) buffer.
macro_rules! unary_over_input {
    ($v:ident, $f:path, $op:ident, $l:ident) => {
        map_unary_in_place($op.name(), $v, $l, $f)
    };
}

/// A unary arm's [`RunKernel`].
macro_rules! unary_to_run {
    ($v:ident, $f:path) => {
        Ok(run_unary($v, $f))
    };
}

fn refused(op: UnaryOp, x: &CpuBuffer) -> Error {
    Error::UnsupportedDtype { op: op.name(), dtype: super::buffer_dtype(x), detail: op.kind().refusal() }
}

macro_rules! cpu_unary {
    ($($name:ident: $Var:ident, $kind:ident, $py:ident, $doc:literal, |$x:ident, $y:ident| $d:expr;)*) => {
        /// Applies a unary op to a buffer of its compute dtype (the op
        /// builder promoted it): one scalar function per op, named as the
        /// op, on [`Element`], [`FloatElement`], [`RealFloatElement`] or
        /// [`BitsElement`] by the op's kind.
        pub fn unary(op: UnaryOp, x: &CpuBuffer, l: &Layout) -> Result<CpuBuffer> {
            $(unary_arm!($kind, $name, $Var, op, x, unary_to_buffer(l));)*
            unreachable!("every unary op has a row")
        }

        /// [`unary`] into `out` (of the op's output dtype, `l.size()` elements).
        pub fn unary_into(op: UnaryOp, x: &CpuBuffer, l: &Layout, out: Out) -> Result<()> {
            $(unary_arm!($kind, $name, $Var, op, x, unary_to_out(l, out));)*
            unreachable!("every unary op has a row")
        }

        /// [`unary`] written over `x` (a donated buffer ferrox owns; `l`
        /// row-contiguous, the op keeping the dtype).
        pub fn unary_in_place(op: UnaryOp, x: &mut CpuBuffer, l: &Layout) -> Result<()> {
            $(unary_arm!($kind, $name, $Var, op, x, unary_over_input(op, l));)*
            unreachable!("every unary op has a row")
        }

        /// The [`RunKernel`] of `op` for `x`'s dtype.
        fn unary_kernel_for(op: UnaryOp, x: &CpuBuffer) -> Result<RunKernel> {
            $(unary_arm!($kind, $name, $Var, op, x, unary_to_run());)*
            unreachable!("every unary op has a row")
        }
    };
}

crate::unary_ops!(cpu_unary);

/// One `if` per op of the binary table, as [`unary_arm`]: `$apply!(va, vb,
/// f, $extra..)` with the typed elements of both operands.
macro_rules! binary_arm {
    (compare, $name:ident, $Var:ident, $op:ident, $a:ident, $b:ident, $apply:ident($($extra:ident),*)) => {
        if $op == BinaryOp::$Var {
            return crate::with_buffer!($a, va => {
                let vb = same_type(va, $b, $op)?;
                $apply!(va, vb, compare::$name $(, $extra)*)
            });
        }
    };
    (float, $name:ident, $Var:ident, $op:ident, $a:ident, $b:ident, $apply:ident($($extra:ident),*)) => {
        if $op == BinaryOp::$Var {
            return crate::with_float_buffer!($a, va => {
                let vb = same_type(va, $b, $op)?;
                $apply!(va, vb, float_fn!($name) $(, $extra)*)
            }, _ => Err(refused_binary($op, $a)));
        }
    };
    (real_float, $name:ident, $Var:ident, $op:ident, $a:ident, $b:ident, $apply:ident($($extra:ident),*)) => {
        if $op == BinaryOp::$Var {
            return crate::with_real_float_buffer!($a, va => {
                let vb = same_type(va, $b, $op)?;
                $apply!(va, vb, RealFloatElement::$name $(, $extra)*)
            }, _ => Err(refused_binary($op, $a)));
        }
    };
    (bits, $name:ident, $Var:ident, $op:ident, $a:ident, $b:ident, $apply:ident($($extra:ident),*)) => {
        if $op == BinaryOp::$Var {
            return crate::with_bits_buffer!($a, va => {
                let vb = same_type(va, $b, $op)?;
                $apply!(va, vb, BitsElement::$name $(, $extra)*)
            }, _ => Err(refused_binary($op, $a)));
        }
    };
    (shift, $name:ident, $Var:ident, $op:ident, $a:ident, $b:ident, $apply:ident($($extra:ident),*)) => {
        binary_arm!(bits, $name, $Var, $op, $a, $b, $apply($($extra),*));
    };
    ($any:ident, $name:ident, $Var:ident, $op:ident, $a:ident, $b:ident, $apply:ident($($extra:ident),*)) => {
        if $op == BinaryOp::$Var {
            return crate::with_buffer!($a, va => {
                let vb = same_type(va, $b, $op)?;
                $apply!(va, vb, arith_fn!($name) $(, $extra)*)
            });
        }
    };
}

/// A binary arm's kernel into a new buffer.
macro_rules! binary_to_buffer {
    ($va:ident, $vb:ident, $f:expr, $la:ident, $lb:ident) => {
        Ok(CpuElement::into_buffer(map_binary($va, $la, $vb, $lb, $f)?))
    };
}

/// A binary arm's kernel into an [`Out`].
macro_rules! binary_to_out {
    ($va:ident, $vb:ident, $f:expr, $la:ident, $lb:ident, $out:ident) => {{
        map_binary_into($va, $la, $vb, $lb, $out.typed()?, $f);
        Ok(())
    }};
}

/// A binary arm's kernel over the donor operand's own buffer.
macro_rules! binary_over_input {
    ($va:ident, $vb:ident, $f:expr, $op:ident, $ld:ident, $lb:ident, $lhs:ident) => {
        map_binary_in_place($op.name(), $va, $ld, $vb, $lb, $lhs, $f)
    };
}

/// A binary arm's [`RunKernel`].
macro_rules! binary_to_run {
    ($va:ident, $vb:ident, $f:expr) => {{
        let _ = $vb;
        Ok(run_binary($va, $f))
    }};
}

/// The element function of an arithmetic row (table names to `Element` methods).
macro_rules! arith_fn {
    (add) => {
        Element::add
    };
    (subtract) => {
        Element::sub
    };
    (multiply) => {
        Element::mul
    };
    (power) => {
        Element::pow
    };
    (maximum) => {
        Element::max
    };
    (minimum) => {
        Element::min
    };
    ($name:ident) => {
        Element::$name
    };
}

/// The element function of a `float` row.
macro_rules! float_fn {
    (divide) => {
        Element::div
    };
    ($name:ident) => {
        FloatElement::$name
    };
}

/// The comparisons, by table name.
mod compare {
    use crate::element::Element;
    pub fn equal<T: Element>(a: T, b: T) -> bool {
        a == b
    }
    pub fn not_equal<T: Element>(a: T, b: T) -> bool {
        a != b
    }
    pub fn less<T: Element>(a: T, b: T) -> bool {
        a.lt(b)
    }
    pub fn less_equal<T: Element>(a: T, b: T) -> bool {
        a.le(b)
    }
    pub fn greater<T: Element>(a: T, b: T) -> bool {
        b.lt(a)
    }
    pub fn greater_equal<T: Element>(a: T, b: T) -> bool {
        b.le(a)
    }
}

fn same_type<'a, T: CpuElement>(_: &[T], b: &'a CpuBuffer, op: BinaryOp) -> Result<&'a [T]> {
    CpuElement::slice_of(b).ok_or_else(|| Error::invalid(op.name(), "operands differ in dtype"))
}

fn refused_binary(op: BinaryOp, a: &CpuBuffer) -> Error {
    Error::UnsupportedDtype { op: op.name(), dtype: super::buffer_dtype(a), detail: op.kind().refusal() }
}

macro_rules! cpu_binary {
    ($($name:ident: $Var:ident, $kind:ident, $doc:literal, |$a:ident, $b:ident, $out:ident| $d:expr;)*) => {
        /// Applies a binary op to two buffers of its compute dtype (the op
        /// builder promoted them); one scalar function per op, as [`unary`].
        pub fn binary(op: BinaryOp, a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout) -> Result<CpuBuffer> {
            if op == BinaryOp::Divide {
                if let Some(out) = super::scalar_divide::divide_by_scalar(a, la, b, lb) {
                    return out;
                }
            }
            $(binary_arm!($kind, $name, $Var, op, a, b, binary_to_buffer(la, lb));)*
            unreachable!("every binary op has a row")
        }

        /// [`binary`] into `out` (of the op's output dtype, `la.size()` elements).
        pub fn binary_into(op: BinaryOp, a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout, out: Out) -> Result<()> {
            if op == BinaryOp::Divide && super::scalar_divide::divides_by_power_of_two(a, la, b, lb) {
                return super::scalar_divide::divide_by_scalar_into(a, la, b, lb, out);
            }
            $(binary_arm!($kind, $name, $Var, op, a, b, binary_to_out(la, lb, out));)*
            unreachable!("every binary op has a row")
        }

        /// [`binary`] written over the donor operand `d` (a donated buffer
        /// ferrox owns; `ld` row-contiguous with the output's shape, the op
        /// keeping the dtype); `other` is the operand read through `lo`.
        pub fn binary_in_place(
            op: BinaryOp,
            d: &mut CpuBuffer,
            ld: &Layout,
            other: &CpuBuffer,
            lo: &Layout,
            donor_is_lhs: bool,
        ) -> Result<()> {
            $(binary_arm!($kind, $name, $Var, op, d, other, binary_over_input(op, ld, lo, donor_is_lhs));)*
            unreachable!("every binary op has a row")
        }

        /// The [`RunKernel`] of `op` for operands of `a`'s (and `b`'s) dtype.
        fn binary_kernel_for(op: BinaryOp, a: &CpuBuffer, b: &CpuBuffer) -> Result<RunKernel> {
            $(binary_arm!($kind, $name, $Var, op, a, b, binary_to_run());)*
            unreachable!("every binary op has a row")
        }
    };
}

crate::binary_ops!(cpu_binary);

/// `cond ? x : y` with all layouts sharing the output shape.
pub fn select(cond: &[bool], lc: &Layout, x: &CpuBuffer, lx: &Layout, y: &CpuBuffer, ly: &Layout) -> Result<CpuBuffer> {
    filled_buffer(super::buffer_dtype(x), lc.size(), |out| select_into(cond, lc, x, lx, y, ly, out))
}

/// [`select`] into `out` (of the operands' dtype, `lc.size()` elements).
pub fn select_into(
    cond: &[bool],
    lc: &Layout,
    x: &CpuBuffer,
    lx: &Layout,
    y: &CpuBuffer,
    ly: &Layout,
    out: Out,
) -> Result<()> {
    fn typed<T: CpuElement>(cond: &[bool], lc: &Layout, x: &[T], lx: &Layout, y: &[T], ly: &Layout, out: &mut [T]) {
        fill_strided(
            &lc.shape,
            [&lc.strides, &lx.strides, &ly.strides],
            [lc.offset, lx.offset, ly.offset],
            out,
            |o, [bc, bx, by], [sc, sx, sy]| {
                for (j, o) in o.iter_mut().enumerate() {
                    let j = j as isize;
                    *o = if cond[(bc + j * sc) as usize] {
                        x[(bx + j * sx) as usize]
                    } else {
                        y[(by + j * sy) as usize]
                    };
                }
            },
        );
    }
    crate::with_buffer!(x, vx => {
        let vy = CpuElement::slice_of(y).ok_or_else(|| Error::invalid("where", "operands differ in dtype"))?;
        typed(cond, lc, vx, lx, vy, ly, out.typed()?);
        Ok(())
    })
}
