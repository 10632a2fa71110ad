//! The float type a real float dtype computes in on the host: float32 for
//! float16, bfloat16 and float32; float64 for float64 (the fused kernels
//! widen once on load and narrow once on store).

use super::storage::CpuElement;
use half::{bf16, f16};
use num_traits::{Float, FloatConst, NumCast};

/// A real float element and its compute type.
pub(crate) trait Widen: CpuElement + Send + Sync {
    /// float32, or float64 for float64.
    type C: Float + FloatConst + NumCast + CpuElement + std::iter::Sum + std::fmt::Debug;
    /// The value in the compute type.
    fn widen(self) -> Self::C;
    /// The compute value rounded to this type.
    fn narrow(c: Self::C) -> Self;
    /// The most negative finite value of this type, in the compute type
    /// (MLX's `finfo(dtype).min`, which boolean masks substitute).
    fn mask_fill() -> Self::C;
}

macro_rules! widen {
    ($T:ty, $C:ty, |$x:ident| $to:expr, |$c:ident| $from:expr, $lowest:expr) => {
        impl Widen for $T {
            type C = $C;
            fn widen(self) -> $C {
                let $x = self;
                $to
            }
            fn narrow($c: $C) -> $T {
                $from
            }
            fn mask_fill() -> $C {
                $lowest
            }
        }
    };
}
widen!(f16, f32, |x| x.to_f32(), |c| f16::from_f32(c), f16::MIN.to_f32());
widen!(bf16, f32, |x| x.to_f32(), |c| bf16::from_f32(c), bf16::MIN.to_f32());
widen!(f32, f32, |x| x, |c| c, f32::MIN);
widen!(f64, f64, |x| x, |c| c, f64::MIN);
