//! [`Element`] for bool and the eight integer types, and [`BitsElement`],
//! their bitwise ops.

use super::{cvt32, cvt64, cvt_u64, Element, Scalar};
use crate::dtype::Dtype;

/// The bitwise ops of bool and the integers (rows of kind `bits` and
/// `shift` of the op tables). Shifts follow C on x86-64, as MLX and NumPy
/// compute them: types narrower than 32 bits shift as `int`, the count is
/// taken modulo the width of the shifted type (32 or 64 bits), and right
/// shifts of signed integers are arithmetic.
pub trait BitsElement: Element {
    /// Bitwise not (logical not for bool).
    fn bitwise_invert(self) -> Self;
    /// Bitwise and.
    fn bitwise_and(self, o: Self) -> Self;
    /// Bitwise or.
    fn bitwise_or(self, o: Self) -> Self;
    /// Bitwise xor.
    fn bitwise_xor(self, o: Self) -> Self;
    /// `self << o`.
    fn left_shift(self, o: Self) -> Self;
    /// `self >> o`.
    fn right_shift(self, o: Self) -> Self;
}

macro_rules! int_element {
    ($t:ty, $dt:ident, $variant:ident, $conv:ty, signed = $signed:expr, from_f64 = $from_f64:expr,
     shift_as = $wide:ty, shift_mask = $mask:expr) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$dt;
            #[inline(always)]
            fn to_scalar(self) -> Scalar {
                Scalar::$variant(self as $conv)
            }
            #[inline(always)]
            fn from_scalar(s: Scalar) -> Self {
                match s {
                    Scalar::Bool(b) => b as $t,
                    Scalar::Int(v) => v as $t,
                    Scalar::UInt(v) => v as $t,
                    Scalar::Float(v) => $from_f64(v) as $t,
                    Scalar::Complex(re, _) => $from_f64(re as f64) as $t,
                }
            }
            #[inline(always)]
            fn zero() -> Self {
                0
            }
            #[inline(always)]
            fn one() -> Self {
                1
            }
            fn lowest() -> Self {
                <$t>::MIN
            }
            fn highest() -> Self {
                <$t>::MAX
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                #[allow(unused_comparisons)]
                if o < 0 {
                    // MLX's integer power: 0 for any negative exponent.
                    return 0;
                }
                let (mut base, mut exp, mut acc) = (self, o as u64, 1 as $t);
                while exp > 0 {
                    if exp & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    exp >>= 1;
                }
                acc
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                if self > o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                if self < o {
                    self
                } else {
                    o
                }
            }
            #[inline(always)]
            fn remainder(self, o: Self) -> Self {
                if o == 0 {
                    return self;
                }
                let r = self.wrapping_rem(o);
                #[allow(unused_comparisons)]
                if r != 0 && ((r < 0) != (o < 0)) {
                    r.wrapping_add(o)
                } else {
                    r
                }
            }
            #[inline(always)]
            fn floor_divide(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                #[allow(unused_comparisons)]
                if self.wrapping_rem(o) != 0 && ((self < 0) != (o < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            #[inline(always)]
            fn lt(self, o: Self) -> bool {
                self < o
            }
            #[inline(always)]
            fn negative(self) -> Self {
                (0 as $t).wrapping_sub(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                #[allow(unused_comparisons)]
                if $signed && self < 0 {
                    self.negative()
                } else {
                    self
                }
            }
            #[inline(always)]
            fn sign(self) -> Self {
                #[allow(unused_comparisons)]
                if self > 0 {
                    1
                } else if self < 0 {
                    (0 as $t).wrapping_sub(1)
                } else {
                    0
                }
            }
            #[inline(always)]
            fn floor(self) -> Self {
                self
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                self
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                self
            }
            #[inline(always)]
            fn round(self) -> Self {
                self
            }
        }

        impl BitsElement for $t {
            #[inline(always)]
            fn bitwise_invert(self) -> Self {
                !self
            }
            #[inline(always)]
            fn bitwise_and(self, o: Self) -> Self {
                self & o
            }
            #[inline(always)]
            fn bitwise_or(self, o: Self) -> Self {
                self | o
            }
            #[inline(always)]
            fn bitwise_xor(self, o: Self) -> Self {
                self ^ o
            }
            #[inline(always)]
            fn left_shift(self, o: Self) -> Self {
                ((self as $wide).wrapping_shl((o as u32) & $mask)) as $t
            }
            #[inline(always)]
            fn right_shift(self, o: Self) -> Self {
                ((self as $wide).wrapping_shr((o as u32) & $mask)) as $t
            }
        }
    };
}

// Float sources convert as C does on x86-64 (see `cvt32`): targets up to 16
// bits and int32 through the 32-bit conversion, uint32 and int64 through the
// 64-bit one, then wrapping to the target. Narrow types shift as `int`.
int_element!(u8, U8, UInt, u64, signed = false, from_f64 = cvt32, shift_as = i32, shift_mask = 31);
int_element!(u16, U16, UInt, u64, signed = false, from_f64 = cvt32, shift_as = i32, shift_mask = 31);
int_element!(u32, U32, UInt, u64, signed = false, from_f64 = cvt64, shift_as = u32, shift_mask = 31);
int_element!(u64, U64, UInt, u64, signed = false, from_f64 = cvt_u64, shift_as = u64, shift_mask = 63);
int_element!(i8, I8, Int, i64, signed = true, from_f64 = cvt32, shift_as = i32, shift_mask = 31);
int_element!(i16, I16, Int, i64, signed = true, from_f64 = cvt32, shift_as = i32, shift_mask = 31);
int_element!(i32, I32, Int, i64, signed = true, from_f64 = cvt32, shift_as = i32, shift_mask = 31);
int_element!(i64, I64, Int, i64, signed = true, from_f64 = cvt64, shift_as = i64, shift_mask = 63);

impl Element for bool {
    const DTYPE: Dtype = Dtype::Bool;
    #[inline(always)]
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    #[inline(always)]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Bool(b) => b,
            Scalar::Int(v) => v != 0,
            Scalar::UInt(v) => v != 0,
            Scalar::Float(v) => v != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn lowest() -> Self {
        false
    }
    fn highest() -> Self {
        true
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn pow(self, o: Self) -> Self {
        self | !o
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn remainder(self, o: Self) -> Self {
        // As the integers: x % 1 == 0, and x % 0 leaves x.
        self & !o
    }
    #[inline(always)]
    fn floor_divide(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        !self & o
    }
    #[inline(always)]
    fn negative(self) -> Self {
        self
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self
    }
    #[inline(always)]
    fn sign(self) -> Self {
        self
    }
    #[inline(always)]
    fn floor(self) -> Self {
        self
    }
    #[inline(always)]
    fn ceil(self) -> Self {
        self
    }
    #[inline(always)]
    fn trunc(self) -> Self {
        self
    }
    #[inline(always)]
    fn round(self) -> Self {
        self
    }
}

impl BitsElement for bool {
    fn bitwise_invert(self) -> Self {
        !self
    }
    fn bitwise_and(self, o: Self) -> Self {
        self & o
    }
    fn bitwise_or(self, o: Self) -> Self {
        self | o
    }
    fn bitwise_xor(self, o: Self) -> Self {
        self ^ o
    }
    // The op builders shift bools as uint8; these keep the bool's bit.
    fn left_shift(self, o: Self) -> Self {
        self && !o
    }
    fn right_shift(self, o: Self) -> Self {
        self && !o
    }
}
