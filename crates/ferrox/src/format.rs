//! Printing arrays in MLX's style: `array([1, 2], dtype=int32)`.

use crate::array::Array;
use crate::element::Scalar;
use crate::error::Result;
use crate::ops::{self, Index};
use crate::shape::numel;
use std::fmt;

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

fn fmt_scalar(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
        Scalar::Int(v) => v.to_string(),
        Scalar::UInt(v) => v.to_string(),
        Scalar::Float(v) => fmt_g(v),
        // As MLX: a strictly negative imaginary part as "-|im|", anything else
        // (-0 and NaNs included) as "+" and its own text.
        Scalar::Complex(re, im) if im < 0.0 => format!("{}-{}j", fmt_g(re as f64), fmt_g(-im as f64)),
        Scalar::Complex(re, im) => format!("{}+{}j", fmt_g(re as f64), fmt_g(im as f64)),
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

/// The repr of an array (evaluates what it shows).
pub fn repr(a: &Array) -> Result<String> {
    let (shown, cut) = edges(a)?;
    let vals: Vec<String> = shown.to_scalars()?.into_iter().map(fmt_scalar).collect();
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
