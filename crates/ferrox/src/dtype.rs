//! Data types: the [`Dtype`] enum, MLX's promotion table and dtype categories.

use std::fmt;

/// The element type of an array. The set and the promotion rules are MLX's.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Dtype {
    /// Boolean (one byte per element).
    Bool,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// IEEE half precision float.
    F16,
    /// Brain float (8-bit exponent, 7-bit mantissa).
    BF16,
    /// IEEE single precision float.
    F32,
    /// IEEE double precision float.
    F64,
    /// Complex number of two f32.
    C64,
}

/// Broad classes of dtypes, as in MLX's `DtypeCategory`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DtypeCategory {
    /// Complex floating point.
    ComplexFloating,
    /// Real floating point.
    Floating,
    /// Floating or complex.
    Inexact,
    /// Signed integers.
    SignedInteger,
    /// Unsigned integers.
    UnsignedInteger,
    /// Any integer.
    Integer,
    /// Any number (everything but bool).
    Number,
    /// Everything.
    Generic,
}

impl DtypeCategory {
    /// Every category.
    pub const ALL: [DtypeCategory; 8] = [
        DtypeCategory::ComplexFloating,
        DtypeCategory::Floating,
        DtypeCategory::Inexact,
        DtypeCategory::SignedInteger,
        DtypeCategory::UnsignedInteger,
        DtypeCategory::Integer,
        DtypeCategory::Number,
        DtypeCategory::Generic,
    ];

    /// MLX's name for the category (`"floating"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DtypeCategory::ComplexFloating => "complexfloating",
            DtypeCategory::Floating => "floating",
            DtypeCategory::Inexact => "inexact",
            DtypeCategory::SignedInteger => "signedinteger",
            DtypeCategory::UnsignedInteger => "unsignedinteger",
            DtypeCategory::Integer => "integer",
            DtypeCategory::Number => "number",
            DtypeCategory::Generic => "generic",
        }
    }

    /// Whether this category lies within `outer` (itself or an ancestor).
    pub fn is_subcategory(self, outer: DtypeCategory) -> bool {
        use DtypeCategory::*;
        outer == self
            || outer == Generic
            || (outer == Number && self != Generic)
            || (outer == Inexact && matches!(self, Floating | ComplexFloating))
            || (outer == Integer && matches!(self, SignedInteger | UnsignedInteger))
    }
}

use Dtype::*;

/// Limits of a floating-point dtype (MLX's `finfo`); complex64 reports
/// its float32 parts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatInfo {
    /// The real dtype described.
    pub dtype: Dtype,
    /// Bits of the real dtype.
    pub bits: usize,
    /// The lowest finite value.
    pub min: f64,
    /// The largest finite value.
    pub max: f64,
    /// The difference between 1 and the next larger value.
    pub eps: f64,
    /// The smallest positive normal value.
    pub smallest_normal: f64,
}

/// Limits of an integer dtype (MLX's `iinfo`); both fit an i128.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntInfo {
    /// The dtype described.
    pub dtype: Dtype,
    /// The lowest value.
    pub min: i128,
    /// The largest value.
    pub max: i128,
}

impl Dtype {
    /// Every dtype, in MLX's declaration order.
    pub const ALL: [Dtype; 14] = [Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, BF16, F32, F64, C64];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Bool | U8 | I8 => 1,
            U16 | I16 | F16 | BF16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | C64 => 8,
        }
    }

    /// MLX's name for the dtype (`"float32"`, `"bool"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Bool => "bool",
            U8 => "uint8",
            U16 => "uint16",
            U32 => "uint32",
            U64 => "uint64",
            I8 => "int8",
            I16 => "int16",
            I32 => "int32",
            I64 => "int64",
            F16 => "float16",
            BF16 => "bfloat16",
            F32 => "float32",
            F64 => "float64",
            C64 => "complex64",
        }
    }

    /// Parses MLX's dtype name.
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == name || (name == "bool_" && *d == Bool))
    }

    /// True for f16, bf16, f32, f64.
    pub fn is_floating(self) -> bool {
        matches!(self, F16 | BF16 | F32 | F64)
    }

    /// True for complex64.
    pub fn is_complex(self) -> bool {
        self == C64
    }

    /// True for floating and complex dtypes.
    pub fn is_inexact(self) -> bool {
        self.is_floating() || self.is_complex()
    }

    /// True for signed and unsigned integers (not bool).
    pub fn is_integer(self) -> bool {
        self.is_signed_integer() || self.is_unsigned_integer()
    }

    /// True for i8..i64.
    pub fn is_signed_integer(self) -> bool {
        matches!(self, I8 | I16 | I32 | I64)
    }

    /// True for u8..u64.
    pub fn is_unsigned_integer(self) -> bool {
        matches!(self, U8 | U16 | U32 | U64)
    }

    /// Whether this dtype belongs to `category` (MLX's `issubdtype`).
    pub fn is_subdtype(self, category: DtypeCategory) -> bool {
        match category {
            DtypeCategory::ComplexFloating => self.is_complex(),
            DtypeCategory::Floating => self.is_floating(),
            DtypeCategory::Inexact => self.is_inexact(),
            DtypeCategory::SignedInteger => self.is_signed_integer(),
            DtypeCategory::UnsignedInteger => self.is_unsigned_integer(),
            DtypeCategory::Integer => self.is_integer(),
            DtypeCategory::Number => self != Bool,
            DtypeCategory::Generic => true,
        }
    }

    /// The limits of an inexact dtype, `None` for bool and the integers.
    pub fn finfo(self) -> Option<FloatInfo> {
        let (dtype, bits, max, eps, smallest_normal) = match self {
            F16 => (F16, 16, 65504.0, 2f64.powi(-10), 2f64.powi(-14)),
            BF16 => (BF16, 16, half::bf16::MAX.to_f64(), 2f64.powi(-7), 2f64.powi(-126)),
            F32 | C64 => (F32, 32, f32::MAX as f64, f32::EPSILON as f64, f32::MIN_POSITIVE as f64),
            F64 => (F64, 64, f64::MAX, f64::EPSILON, f64::MIN_POSITIVE),
            _ => return None,
        };
        Some(FloatInfo { dtype, bits, min: -max, max, eps, smallest_normal })
    }

    /// The limits of an integer dtype, `None` for the others.
    pub fn iinfo(self) -> Option<IntInfo> {
        let (min, max) = match self {
            U8 => (0, u8::MAX as i128),
            U16 => (0, u16::MAX as i128),
            U32 => (0, u32::MAX as i128),
            U64 => (0, u64::MAX as i128),
            I8 => (i8::MIN as i128, i8::MAX as i128),
            I16 => (i16::MIN as i128, i16::MAX as i128),
            I32 => (i32::MIN as i128, i32::MAX as i128),
            I64 => (i64::MIN as i128, i64::MAX as i128),
            _ => return None,
        };
        Some(IntInfo { dtype: self, min, max })
    }

    /// Whether an integer scalar lies in this integer dtype's range (other
    /// scalars and dtypes always convert, possibly rounding or to infinity).
    pub fn holds(self, value: crate::element::Scalar) -> bool {
        use crate::element::Scalar;
        let Some(info) = self.iinfo() else { return true };
        match value {
            Scalar::Int(v) => (info.min..=info.max).contains(&(v as i128)),
            Scalar::UInt(v) => (info.min..=info.max).contains(&(v as i128)),
            _ => true,
        }
    }

    /// The dtype itself if inexact, otherwise float32 (MLX's `at_least_float`).
    pub fn at_least_float(self) -> Dtype {
        if self.is_inexact() {
            self
        } else {
            F32
        }
    }

    /// Whether `self` converts to `to` under MLX's promotion (the two
    /// promote to `to`): int32 to float32 yes, float32 to int32 no.
    pub fn can_cast(self, to: Dtype) -> bool {
        Dtype::promote(self, to) == to
    }

    /// Whether the dtype is of an array-API kind: `"bool"`, `"signed
    /// integer"`, `"unsigned integer"`, `"integral"`, `"real floating"`,
    /// `"complex floating"` or `"numeric"`; `None` for an unknown kind.
    pub fn is_kind(self, kind: &str) -> Option<bool> {
        Some(match kind {
            "bool" => self == Bool,
            "signed integer" => self.is_signed_integer(),
            "unsigned integer" => self.is_unsigned_integer(),
            "integral" => self.is_integer(),
            "real floating" => self.is_floating(),
            "complex floating" => self.is_complex(),
            "numeric" => self != Bool,
            _ => return None,
        })
    }

    /// MLX's type promotion: the dtype that both `a` and `b` convert to.
    pub fn promote(a: Dtype, b: Dtype) -> Dtype {
        PROMOTION[a.table_index()][b.table_index()]
    }

    fn table_index(self) -> usize {
        match self {
            Bool => 0,
            U8 => 1,
            U16 => 2,
            U32 => 3,
            U64 => 4,
            I8 => 5,
            I16 => 6,
            I32 => 7,
            I64 => 8,
            F16 => 9,
            F32 => 10,
            F64 => 11,
            BF16 => 12,
            C64 => 13,
        }
    }
}

/// Dtypes serialize as MLX's names (`"float32"`), as in exported files.
impl serde::Serialize for Dtype {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Dtype {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Dtype, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Dtype::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown dtype {name:?}")))
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// MLX's promotion table, rows and columns in the order
/// bool u8 u16 u32 u64 i8 i16 i32 i64 f16 f32 f64 bf16 c64.
const PROMOTION: [[Dtype; 14]; 14] = [
    [Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, BF16, C64],
    [U8, U8, U16, U32, U64, I16, I16, I32, I64, F16, F32, F64, BF16, C64],
    [U16, U16, U16, U32, U64, I32, I32, I32, I64, F16, F32, F64, BF16, C64],
    [U32, U32, U32, U32, U64, I64, I64, I64, I64, F16, F32, F64, BF16, C64],
    [U64, U64, U64, U64, U64, F32, F32, F32, F32, F16, F32, F64, BF16, C64],
    [I8, I16, I32, I64, F32, I8, I16, I32, I64, F16, F32, F64, BF16, C64],
    [I16, I16, I32, I64, F32, I16, I16, I32, I64, F16, F32, F64, BF16, C64],
    [I32, I32, I32, I64, F32, I32, I32, I32, I64, F16, F32, F64, BF16, C64],
    [I64, I64, I64, I64, F32, I64, I64, I64, I64, F16, F32, F64, BF16, C64],
    [F16, F16, F16, F16, F16, F16, F16, F16, F16, F16, F32, F64, F32, C64],
    [F32, F32, F32, F32, F32, F32, F32, F32, F32, F32, F32, F64, F32, C64],
    [F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, C64],
    [BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16, F32, F32, F64, BF16, C64],
    [C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64],
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_is_symmetric() {
        for a in Dtype::ALL {
            for b in Dtype::ALL {
                assert_eq!(Dtype::promote(a, b), Dtype::promote(b, a), "{a} {b}");
            }
            assert_eq!(Dtype::promote(a, a), a);
        }
    }

    #[test]
    fn promotion_matches_mlx_examples() {
        assert_eq!(Dtype::promote(I8, U8), I16);
        assert_eq!(Dtype::promote(U64, I64), F32);
        assert_eq!(Dtype::promote(F16, BF16), F32);
        assert_eq!(Dtype::promote(F64, C64), C64);
        assert_eq!(Dtype::promote(Bool, I32), I32);
    }
}
