//! Printing arrays in MLX's style: `array([1, 2], dtype=int32)`.

use crate::array::Array;
use crate::element::Scalar;
use std::fmt;

/// Formats a float like C's `%g` with 6 significant digits (what MLX prints).
pub fn fmt_g(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
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
        Scalar::Complex(re, im) => {
            let sign = if im < 0.0 || (im == 0.0 && im.is_sign_negative()) { "-" } else { "+" };
            format!("{}{}{}j", fmt_g(re as f64), sign, fmt_g((im as f64).abs()))
        }
    }
}

const SUMMARY_THRESHOLD: usize = 1000;
const EDGE: usize = 3;

fn fmt_block(vals: &[String], shape: &[usize], start: usize, depth: usize, summarize: bool, out: &mut String) {
    let n = shape[0];
    let inner: usize = shape[1..].iter().product();
    let shown: Vec<Option<usize>> = if summarize && n > 2 * EDGE {
        (0..EDGE).map(Some).chain(std::iter::once(None)).chain((n - EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    };
    out.push('[');
    for (k, item) in shown.iter().enumerate() {
        if k > 0 {
            if shape.len() == 1 {
                out.push_str(", ");
            } else {
                out.push(',');
                out.push_str(&"\n".repeat(shape.len() - 1));
                out.push_str(&" ".repeat(7 + depth));
            }
        }
        match item {
            None => out.push_str("..."),
            Some(i) if shape.len() == 1 => out.push_str(&vals[start + i]),
            Some(i) => fmt_block(vals, &shape[1..], start + i * inner, depth + 1, summarize, out),
        }
    }
    out.push(']');
}

/// The repr of an array (evaluates it).
pub fn repr(a: &Array) -> crate::Result<String> {
    let vals: Vec<String> = a.to_scalars()?.into_iter().map(fmt_scalar).collect();
    if a.size() == 0 && a.ndim() > 1 {
        // As NumPy and MLX: the shape cannot be read off an empty bracket.
        let dims: Vec<String> = a.shape().iter().map(|d| d.to_string()).collect();
        return Ok(format!("array([], shape=({}), dtype={})", dims.join(", "), a.dtype().name()));
    }
    let body = if a.ndim() == 0 {
        vals[0].clone()
    } else {
        let mut s = String::new();
        fmt_block(&vals, a.shape(), 0, 0, a.size() > SUMMARY_THRESHOLD, &mut s);
        s
    };
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
    fn empty_arrays_show_their_shape() {
        let a = crate::ops::zeros(&[0, 3], crate::Dtype::F32).unwrap();
        assert_eq!(super::repr(&a).unwrap(), "array([], shape=(0, 3), dtype=float32)");
        let b = crate::ops::zeros(&[0], crate::Dtype::I32).unwrap();
        assert_eq!(super::repr(&b).unwrap(), "array([], dtype=int32)");
    }
}
