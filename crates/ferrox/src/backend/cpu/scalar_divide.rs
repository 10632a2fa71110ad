//! Division of float32/float64 elements by one broadcast power of two whose
//! reciprocal is normal: a product with the reciprocal rounds the same real
//! number once, so the result is the division's bit for bit, without a
//! vector division (several cycles per element) for each element.
//!
//! (A float32 quotient through a float64 product with `1 / f64(d)` is also
//! exact in the normal range, but measured no faster than division on a
//! Zen 4 core: the conversions cost what the division saved.)

use super::elementwise::{map_unary_into, run_unary, RunKernel};
use super::out::{filled_buffer, Out};
use super::CpuBuffer;
use crate::error::{Error, Result};
use crate::shape::Layout;

/// Whether `a / b` takes this path: `a` is not empty and `b` reads one
/// float32 or float64 element of `a`'s dtype that is such a power of two.
pub fn divides_by_power_of_two(a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout) -> bool {
    if !lb.reads_one_element() || la.size() == 0 {
        return false;
    }
    match (a, b) {
        (CpuBuffer::F32(_), CpuBuffer::F32(d)) => reciprocal_f32(d[lb.offset]).is_some(),
        (CpuBuffer::F64(_), CpuBuffer::F64(d)) => reciprocal_f64(d[lb.offset]).is_some(),
        _ => false,
    }
}

/// `a / b` when [`divides_by_power_of_two`]; `None` when the ordinary
/// kernel should run.
pub fn divide_by_scalar(a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout) -> Option<Result<CpuBuffer>> {
    divides_by_power_of_two(a, la, b, lb)
        .then(|| filled_buffer(super::buffer_dtype(a), la.size(), |out| divide_by_scalar_into(a, la, b, lb, out)))
}

/// [`divide_by_scalar`] into `out`; an error unless [`divides_by_power_of_two`].
pub fn divide_by_scalar_into(a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout, out: Out) -> Result<()> {
    let not_a_power = || Error::invalid("divide", "the divisor is not one power of two");
    match (a, b) {
        (CpuBuffer::F32(x), CpuBuffer::F32(d)) => {
            let r = lb.reads_one_element().then(|| reciprocal_f32(d[lb.offset])).flatten().ok_or_else(not_a_power)?;
            map_unary_into(x, la, out.typed()?, move |v: f32| v * r);
        }
        (CpuBuffer::F64(x), CpuBuffer::F64(d)) => {
            let r = lb.reads_one_element().then(|| reciprocal_f64(d[lb.offset])).flatten().ok_or_else(not_a_power)?;
            map_unary_into(x, la, out.typed()?, move |v: f64| v * r);
        }
        _ => return Err(not_a_power()),
    }
    Ok(())
}

/// The run kernel of `a / b` (for the fused evaluator) when `b`, element
/// `offset` of a buffer of `a`'s dtype read for every element, is a power
/// of two as above: the product with its reciprocal. `None` otherwise.
pub fn reciprocal_run_kernel(b: &CpuBuffer, offset: usize) -> Option<RunKernel> {
    match b {
        CpuBuffer::F32(d) => reciprocal_f32(*d.get(offset)?).map(|r| run_unary(&[] as &[f32], move |v: f32| v * r)),
        CpuBuffer::F64(d) => reciprocal_f64(*d.get(offset)?).map(|r| run_unary(&[] as &[f64], move |v: f64| v * r)),
        _ => None,
    }
}

/// `1 / d` when `d` is a power of two whose reciprocal is a normal float32.
fn reciprocal_f32(d: f32) -> Option<f32> {
    let bits = d.to_bits();
    let e = (bits >> 23) & 0xff;
    (bits & 0x7f_ffff == 0 && (1..=253).contains(&e)).then(|| f32::from_bits((bits & 0x8000_0000) | ((254 - e) << 23)))
}

/// `1 / d` when `d` is a power of two whose reciprocal is a normal float64.
fn reciprocal_f64(d: f64) -> Option<f64> {
    let bits = d.to_bits();
    let e = (bits >> 52) & 0x7ff;
    (bits & 0xf_ffff_ffff_ffff == 0 && (1..=2045).contains(&e))
        .then(|| f64::from_bits((bits & 0x8000_0000_0000_0000) | ((2046 - e) << 52)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(n: usize) -> Layout {
        Layout { shape: vec![n], strides: vec![0], offset: 0 }
    }

    /// Every float32 of a stride through all bit patterns (and the special
    /// values) divided by powers of two across the range, against `a / d`.
    #[test]
    fn float32_matches_ieee_division_bit_for_bit() {
        let mut xs: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
        xs.extend([0.0, -0.0, 1.0, f32::MIN_POSITIVE, 1.4e-45, 3.0e-45, f32::MAX, f32::INFINITY, f32::NAN]);
        let n = xs.len();
        let x = CpuBuffer::F32(xs.clone().into());
        for d in [2.0f32, -0.5, 1.0, 2f32.powi(126), 2f32.powi(-126), 2f32.powi(100), -2f32.powi(-60)] {
            let got = divide_by_scalar(&x, &Layout::contiguous(&[n]), &CpuBuffer::F32(vec![d].into()), &scalar(n))
                .expect("a power of two has a path")
                .expect("divides");
            let CpuBuffer::F32(got) = got else { panic!("float32 out") };
            for (&a, &q) in xs.iter().zip(got.iter()) {
                let want = a / d;
                assert!(
                    q.to_bits() == want.to_bits() || (q.is_nan() && want.is_nan()),
                    "{a:e} / {d:e}: {q:e} != {want:e}"
                );
            }
        }
    }

    #[test]
    fn float64_powers_of_two_match_and_other_divisors_are_left_alone() {
        let xs = [3.0f64, -1e-310, 5e-324, 1e308, f64::INFINITY, 0.1, -0.0];
        let x = CpuBuffer::F64(xs.to_vec().into());
        for d in [4.0f64, 0.25, -2f64.powi(1022)] {
            let CpuBuffer::F64(got) =
                divide_by_scalar(&x, &Layout::contiguous(&[7]), &CpuBuffer::F64(vec![d].into()), &scalar(7))
                    .expect("path")
                    .expect("divides")
            else {
                panic!("float64 out")
            };
            for (&a, &q) in xs.iter().zip(got.iter()) {
                assert_eq!(q.to_bits(), (a / d).to_bits(), "{a:e} / {d:e}");
            }
        }
        // 2^1023's reciprocal is subnormal, 3 and 0 are no powers of two:
        // the ordinary kernel divides.
        for d in [2f64.powi(1023), 3.0, 0.0, f64::INFINITY, f64::NAN] {
            let b = CpuBuffer::F64(vec![d].into());
            assert!(divide_by_scalar(&x, &Layout::contiguous(&[7]), &b, &scalar(7)).is_none(), "{d}");
        }
        assert!(reciprocal_f32(2f32.powi(127)).is_none() && reciprocal_f32(1.4e-45).is_none());
    }
}
