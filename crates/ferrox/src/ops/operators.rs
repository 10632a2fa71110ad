//! Rust operators on `&Array`. Each returns `Result<Array>`, so write
//! `(&a + &b)?`. A plain `f64` operand is weakly typed, like a Python float
//! in MLX: `&f16_array * 2.0` stays float16.

use super::elementwise::{add, divide, multiply, negative, subtract, weak_scalar};
use crate::array::Array;
use crate::element::Scalar;
use crate::error::Result;
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! operator {
    ($trait:ident, $method:ident, $func:ident) => {
        impl $trait<&Array> for &Array {
            type Output = Result<Array>;
            fn $method(self, rhs: &Array) -> Result<Array> {
                $func(self, rhs)
            }
        }
        impl $trait<f64> for &Array {
            type Output = Result<Array>;
            fn $method(self, rhs: f64) -> Result<Array> {
                $func(self, &weak_scalar(Scalar::Float(rhs), self.dtype())?)
            }
        }
        impl $trait<&Array> for f64 {
            type Output = Result<Array>;
            fn $method(self, rhs: &Array) -> Result<Array> {
                $func(&weak_scalar(Scalar::Float(self), rhs.dtype())?, rhs)
            }
        }
    };
}

operator!(Add, add, add);
operator!(Sub, sub, subtract);
operator!(Mul, mul, multiply);
operator!(Div, div, divide);

impl Neg for &Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        negative(self)
    }
}
