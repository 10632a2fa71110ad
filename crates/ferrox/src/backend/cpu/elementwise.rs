//! Elementwise kernels: unary maps, binary maps with broadcasting, select
//! (`where`) and casting copies. Each has a contiguous fast path and the
//! general strided path.

use super::storage::{output_vec, CpuBuffer, CpuElement};
use super::strided::{fill_strided, map_contiguous, zip_contiguous};
use crate::backend::{BinaryOp, UnaryOp};
use crate::element::{Element, FloatElement};
use crate::error::{Error, Result};
use crate::shape::Layout;

/// `f` applied to every element `l` selects in `x`; row-major output.
pub fn map_unary<T: CpuElement, U: CpuElement>(
    x: &[T],
    l: &Layout,
    f: impl Fn(T) -> U + Sync + Copy,
) -> Result<Vec<U>> {
    let n = l.size();
    let mut out = output_vec::<U>(n)?;
    if n == 0 {
        return Ok(out);
    }
    if l.is_row_contiguous() {
        map_contiguous(&x[l.offset..l.offset + n], &mut out, f);
    } else {
        fill_strided(&l.shape, [&l.strides], [l.offset], &mut out, |o, [b], [s]| {
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
    Ok(out)
}

/// `f(a, b)` for every pair of elements; both layouts have the output shape.
pub fn map_binary<T: CpuElement, U: CpuElement>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    f: impl Fn(T, T) -> U + Sync + Copy,
) -> Result<Vec<U>> {
    let n = la.size();
    let mut out = output_vec::<U>(n)?;
    if n == 0 {
        return Ok(out);
    }
    let (ca, cb) = (la.is_row_contiguous(), lb.is_row_contiguous());
    if ca && cb {
        zip_contiguous(&a[la.offset..la.offset + n], &b[lb.offset..lb.offset + n], &mut out, f);
    } else if ca && lb.reads_one_element() {
        let s = b[lb.offset];
        map_contiguous(&a[la.offset..la.offset + n], &mut out, |x| f(x, s));
    } else if cb && la.reads_one_element() {
        let s = a[la.offset];
        map_contiguous(&b[lb.offset..lb.offset + n], &mut out, |y| f(s, y));
    } else {
        fill_strided(
            &la.shape,
            [&la.strides, &lb.strides],
            [la.offset, lb.offset],
            &mut out,
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
    Ok(out)
}

/// The elements `l` selects, row-contiguous and cast to `U`.
pub fn cast<T: CpuElement, U: CpuElement>(x: &[T], l: &Layout) -> Result<Vec<U>> {
    map_unary(x, l, |v: T| U::from_scalar(v.to_scalar()))
}

/// Copies and casts a buffer to `dtype`.
pub fn cast_buffer(x: &CpuBuffer, l: &Layout, dtype: crate::dtype::Dtype) -> Result<CpuBuffer> {
    fn to<U: CpuElement>(x: &CpuBuffer, l: &Layout) -> Result<CpuBuffer> {
        Ok(U::into_buffer(crate::with_buffer!(x, v => cast::<_, U>(v, l))?))
    }
    use crate::dtype::Dtype as D;
    match dtype {
        D::Bool => to::<bool>(x, l),
        D::U8 => to::<u8>(x, l),
        D::U16 => to::<u16>(x, l),
        D::U32 => to::<u32>(x, l),
        D::U64 => to::<u64>(x, l),
        D::I8 => to::<i8>(x, l),
        D::I16 => to::<i16>(x, l),
        D::I32 => to::<i32>(x, l),
        D::I64 => to::<i64>(x, l),
        D::F16 => to::<half::f16>(x, l),
        D::BF16 => to::<half::bf16>(x, l),
        D::F32 => to::<f32>(x, l),
        D::F64 => to::<f64>(x, l),
        D::C64 => to::<num_complex::Complex32>(x, l),
    }
}

/// A same-dtype contiguous copy of the elements `l` selects.
pub fn copy_buffer(x: &CpuBuffer, l: &Layout) -> Result<CpuBuffer> {
    Ok(crate::with_buffer!(x, v => CpuElement::into_buffer(map_unary(v, l, |e| e)?)))
}

fn unary_float<T: CpuElement + FloatElement>(op: UnaryOp, x: &[T], l: &Layout) -> Result<Vec<T>> {
    match op {
        UnaryOp::Negative => map_unary(x, l, T::neg),
        UnaryOp::Abs => map_unary(x, l, T::abs),
        UnaryOp::Exp => map_unary(x, l, T::exp),
        UnaryOp::Log => map_unary(x, l, T::ln),
        UnaryOp::Sqrt => map_unary(x, l, T::sqrt),
        UnaryOp::Sin => map_unary(x, l, T::sin),
        UnaryOp::Cos => map_unary(x, l, T::cos),
        UnaryOp::Tanh => map_unary(x, l, T::tanh),
        UnaryOp::Sigmoid => map_unary(x, l, T::sigmoid),
    }
}

/// Applies a unary op; transcendental ops need an inexact dtype.
pub fn unary(op: UnaryOp, x: &CpuBuffer, l: &Layout) -> Result<CpuBuffer> {
    if op.is_transcendental() {
        return crate::with_float_buffer!(x, v => Ok(CpuElement::into_buffer(unary_float(op, v, l)?)),
            _ => Err(Error::invalid(op.name(), "expects a floating point input")));
    }
    Ok(crate::with_buffer!(x, v => CpuElement::into_buffer(match op {
        UnaryOp::Negative => map_unary(v, l, Element::neg),
        _ => map_unary(v, l, Element::abs),
    }?)))
}

fn binary_typed<T: CpuElement>(op: BinaryOp, a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Result<CpuBuffer> {
    // Function items (not pointers) so each loop inlines its operation.
    fn same<T: CpuElement>(
        a: &[T],
        la: &Layout,
        b: &[T],
        lb: &Layout,
        f: impl Fn(T, T) -> T + Sync + Copy,
    ) -> Result<CpuBuffer> {
        Ok(T::into_buffer(map_binary(a, la, b, lb, f)?))
    }
    fn cmp<T: CpuElement>(
        a: &[T],
        la: &Layout,
        b: &[T],
        lb: &Layout,
        f: impl Fn(T, T) -> bool + Sync + Copy,
    ) -> Result<CpuBuffer> {
        Ok(CpuBuffer::Bool(map_binary(a, la, b, lb, f)?))
    }
    match op {
        BinaryOp::Add => same(a, la, b, lb, T::add),
        BinaryOp::Subtract => same(a, la, b, lb, T::sub),
        BinaryOp::Multiply => same(a, la, b, lb, T::mul),
        BinaryOp::Divide => same(a, la, b, lb, T::div),
        BinaryOp::Power => same(a, la, b, lb, T::pow),
        BinaryOp::Maximum => same(a, la, b, lb, T::max),
        BinaryOp::Minimum => same(a, la, b, lb, T::min),
        BinaryOp::Equal => cmp(a, la, b, lb, |x: T, y: T| x == y),
        BinaryOp::NotEqual => cmp(a, la, b, lb, |x: T, y: T| x != y),
        BinaryOp::Less => cmp(a, la, b, lb, |x: T, y: T| x.lt(y)),
        BinaryOp::LessEqual => cmp(a, la, b, lb, |x: T, y: T| x.le(y)),
        BinaryOp::Greater => cmp(a, la, b, lb, |x: T, y: T| y.lt(x)),
        BinaryOp::GreaterEqual => cmp(a, la, b, lb, |x: T, y: T| y.le(x)),
    }
}

/// Applies a binary op to two buffers of one dtype.
pub fn binary(op: BinaryOp, a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout) -> Result<CpuBuffer> {
    crate::with_buffer!(a, va => {
        let vb = CpuElement::slice_of(b).ok_or_else(|| Error::invalid(op.name(), "operands differ in dtype"))?;
        binary_typed(op, va, la, vb, lb)
    })
}

/// `cond ? x : y` with all layouts sharing the output shape.
pub fn select(cond: &[bool], lc: &Layout, x: &CpuBuffer, lx: &Layout, y: &CpuBuffer, ly: &Layout) -> Result<CpuBuffer> {
    fn typed<T: CpuElement>(cond: &[bool], lc: &Layout, x: &[T], lx: &Layout, y: &[T], ly: &Layout) -> Result<Vec<T>> {
        let mut out = output_vec::<T>(lc.size())?;
        fill_strided(
            &lc.shape,
            [&lc.strides, &lx.strides, &ly.strides],
            [lc.offset, lx.offset, ly.offset],
            &mut out,
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
        Ok(out)
    }
    crate::with_buffer!(x, vx => {
        let vy = CpuElement::slice_of(y).ok_or_else(|| Error::invalid("where", "operands differ in dtype"))?;
        Ok(CpuElement::into_buffer(typed(cond, lc, vx, lx, vy, ly)?))
    })
}
