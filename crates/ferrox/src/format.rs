//! Printing arrays in MLX's style: `array([1, 2], dtype=int32)`.

use crate::array::Array;
use crate::element::Scalar;
use crate::error::Result;
use crate::ops::{self, Index};
use crate::shape::numel;
use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};

/// How arrays print (MLX's `PrintOptions`): `precision` is the number of
/// decimals shown for floating-point and complex elements, or -1 for the
/// default shortest form (C's `%g` with 6 significant digits). As in MLX
/// (C++'s `std::setprecision`), any other negative value shows 6 decimals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintOptions {
    /// Decimals of floating-point elements; -1 for the `%g` form.
    pub precision: i32,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions { precision: -1 }
    }
}

/// The process-wide precision used by [`repr`] and `Display`.
static PRECISION: AtomicI32 = AtomicI32::new(-1);

/// The largest precision [`set_printoptions`] accepts (the most decimals
/// Rust's formatter writes; every float's exact expansion is far shorter).
pub const MAX_PRECISION: i32 = u16::MAX as i32;

/// Sets the options every later print uses (process-wide, as MLX's global
/// formatter). Fails for a precision above [`MAX_PRECISION`].
pub fn set_printoptions(options: PrintOptions) -> Result<()> {
    if options.precision > MAX_PRECISION {
        return Err(crate::error::Error::invalid(
            "set_printoptions",
            format!("precision must be at most {MAX_PRECISION}, got {}", options.precision),
        ));
    }
    PRECISION.store(options.precision, Ordering::Relaxed);
    Ok(())
}

/// The options prints use now.
pub fn get_printoptions() -> PrintOptions {
    PrintOptions { precision: PRECISION.load(Ordering::Relaxed) }
}

/// Formats a float like C's `%g` with 6 significant digits (what MLX prints).
pub fn fmt_g(v: f64) -> String {
    if v.is_nan() {
        // printf's %g shows the sign bit of a NaN.
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Round to 6 significant digits first: rounding can bump the exponent.
    let sci = format!("{:.5e}", v);
    let (mant, e) = sci.split_once('e').expect("scientific format");
    let e: i32 = e.parse().expect("exponent digits");
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&e) {
        let sign = if e < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", trim(mant), sign, e.abs())
    } else {
        let decimals = (5 - e).max(0) as usize;
        trim(&format!("{:.*}", decimals, v))
    }
}

/// Formats a float like C's `%.<decimals>f` (C++'s `std::fixed`): NaN and
/// infinities as `%g` prints them, every finite value with `decimals`
/// digits after the point (ties to even on the exact binary value, as glibc).
pub fn fmt_fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return fmt_g(v);
    }
    format!("{v:.decimals$}")
}

/// One float as the options say: `%g` for precision -1, else fixed.
fn fmt_float(v: f64, precision: i32) -> String {
    match precision {
        -1 => fmt_g(v),
        p if p < 0 => fmt_fixed(v, 6),
        p => fmt_fixed(v, p.min(MAX_PRECISION) as usize),
    }
}

fn fmt_scalar(s: Scalar, precision: i32) -> String {
    let f = |v: f32| fmt_float(v as f64, precision);
    match s {
        Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
        Scalar::Int(v) => v.to_string(),
        Scalar::UInt(v) => v.to_string(),
        Scalar::Float(v) => fmt_float(v, precision),
        // As MLX: a strictly negative imaginary part as "-|im|", anything else
        // (-0 and NaNs included) as "+" and its own text.
        Scalar::Complex(re, im) if im < 0.0 => format!("{}-{}j", f(re), f(-im)),
        Scalar::Complex(re, im) => format!("{}+{}j", f(re), f(im)),
    }
}

const EDGE: usize = 3;

/// The part of `a` its repr shows: as MLX, the first and last `EDGE`
/// entries of every axis longer than `2 * EDGE` (computed lazily, so a huge
/// broadcast view costs only what is printed), and which axes were cut.
fn edges(a: &Array) -> Result<(Array, Vec<bool>)> {
    let mut x = a.clone();
    let mut cut = vec![false; a.ndim()];
    for (ax, &n) in a.shape().iter().enumerate() {
        if n <= 2 * EDGE {
            continue;
        }
        cut[ax] = true;
        let part = |start: usize| {
            let mut index = vec![Index::Slice { start: None, stop: None, step: None }; a.ndim()];
            index[ax] = Index::Slice { start: Some(start as i64), stop: Some((start + EDGE) as i64), step: None };
            ops::index(&x, &index)
        };
        x = ops::concatenate(&[part(0)?, part(n - EDGE)?], ax as isize)?;
    }
    Ok((x, cut))
}

/// Nested brackets of `vals` (row-major over `shape`), with "..." before
/// entry `EDGE` of each `cut` axis, laid out as MLX prints them (one line
/// per innermost row). Iterative, so any number of dimensions is fine.
fn fmt_nested(vals: &[String], shape: &[usize], cut: &[bool]) -> String {
    let nd = shape.len();
    let separator = |d: usize| if d + 1 == nd { ", ".to_string() } else { format!(",\n{}", " ".repeat(7 + d)) };
    let mut out = String::from("[");
    // (axis, offset of the block's first value, next entry)
    let mut stack: Vec<(usize, usize, usize)> = vec![(0, 0, 0)];
    while let Some(top) = stack.last_mut() {
        let (d, start, k) = *top;
        if k == shape[d] {
            out.push(']');
            stack.pop();
            continue;
        }
        top.2 += 1;
        if k > 0 {
            out.push_str(&separator(d));
        }
        if cut[d] && k == EDGE {
            out.push_str("...");
            out.push_str(&separator(d));
        }
        if d + 1 == nd {
            out.push_str(&vals[start + k]);
        } else {
            out.push('[');
            stack.push((d + 1, start + k * numel(&shape[d + 1..]), 0));
        }
    }
    out
}

/// The repr of an array (evaluates what it shows), with the current
/// [`PrintOptions`].
pub fn repr(a: &Array) -> Result<String> {
    let precision = get_printoptions().precision;
    let (shown, cut) = edges(a)?;
    let vals: Vec<String> = shown.to_scalars()?.into_iter().map(|s| fmt_scalar(s, precision)).collect();
    let body = if a.ndim() == 0 { vals[0].clone() } else { fmt_nested(&vals, shown.shape(), &cut) };
    Ok(format!("array({body}, dtype={})", a.dtype().name()))
}

/// Evaluates the array and prints it as MLX does.
impl fmt::Display for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match repr(self) {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "<array that failed to evaluate: {e}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_g;

    #[test]
    fn g_format_matches_c() {
        assert_eq!(fmt_g(1.0), "1");
        assert_eq!(fmt_g(1.5), "1.5");
        assert_eq!(fmt_g(0.1), "0.1");
        assert_eq!(fmt_g(123456.0), "123456");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(1e-5), "1e-05");
        assert_eq!(fmt_g(0.0001), "0.0001");
        assert_eq!(fmt_g(-2.5), "-2.5");
        assert_eq!(fmt_g(999999.5), "1e+06");
    }

    #[test]
    fn fixed_format_matches_c() {
        use super::fmt_fixed;
        assert_eq!(fmt_fixed(0.125, 2), "0.12");
        assert_eq!(fmt_fixed(0.375, 2), "0.38");
        assert_eq!(fmt_fixed(2.5, 0), "2");
        assert_eq!(fmt_fixed(-0.0, 2), "-0.00");
        assert_eq!(fmt_fixed(f64::NAN, 2), "nan");
        assert_eq!(fmt_fixed(f64::NEG_INFINITY, 3), "-inf");
        assert_eq!(fmt_fixed(1e20f32 as f64, 1), "100000002004087734272.0");
    }

    #[test]
    fn empty_arrays_print_brackets_down_to_the_empty_axis() {
        let repr = |shape: &[usize]| super::repr(&crate::ops::zeros(shape, crate::Dtype::F32).unwrap()).unwrap();
        assert_eq!(repr(&[0, 3]), "array([], dtype=float32)");
        assert_eq!(repr(&[2, 0, 2]), "array([[],\n       []], dtype=float32)");
        assert_eq!(repr(&[0]), "array([], dtype=float32)");
    }

    #[test]
    fn long_axes_are_summarized_and_blocks_are_one_line_apart() {
        let a = crate::ops::arange(0.0, 10.0, 1.0, crate::Dtype::I32).unwrap();
        assert_eq!(super::repr(&a).unwrap(), "array([0, 1, 2, ..., 7, 8, 9], dtype=int32)");
        let b =
            crate::ops::reshape(&crate::ops::arange(0.0, 8.0, 1.0, crate::Dtype::I32).unwrap(), &[2, 2, 2]).unwrap();
        assert_eq!(
            super::repr(&b).unwrap(),
            "array([[[0, 1],\n        [2, 3]],\n       [[4, 5],\n        [6, 7]]], dtype=int32)"
        );
    }
}
