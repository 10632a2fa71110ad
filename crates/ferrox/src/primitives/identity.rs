//! What compile and export need to know about a primitive besides how to
//! evaluate it: a stable tag, parameters that serialize, and equivalence.
//!
//! Every primitive whose parameters are plain data is listed once in
//! [`serializable_primitives!`] below, which implements [`PrimitiveIdentity`]
//! for it from its `serde` and `PartialEq` derives and generates [`decode`],
//! the inverse used by `import_function`. A primitive that is not listed
//! does not compile (the trait is a supertrait of [`Primitive`]); primitives
//! holding live state (an open file, user callbacks) use
//! [`opaque_primitive!`] instead and cannot be exported.

use super::*;
use crate::error::Error;
use serde_json::Value;
use std::any::Any;

/// Identity of a primitive for graph transforms that compare or store nodes.
pub trait PrimitiveIdentity {
    /// The stable name written in exported files (the type's name), or
    /// `None` for primitives that cannot be serialized.
    fn tag(&self) -> Option<&'static str>;

    /// The parameters as JSON (`None` for primitives that cannot be serialized).
    fn params(&self) -> Option<Value>;

    /// Whether `other` computes the same outputs from the same inputs: the
    /// same kind of primitive with equal parameters (common-subexpression
    /// elimination merges such nodes).
    fn is_equivalent(&self, other: &dyn Primitive) -> bool;

    /// The primitive as [`Any`], for [`PrimitiveIdentity::is_equivalent`].
    fn as_any(&self) -> &dyn Any;
}

macro_rules! serializable_primitives {
    ($($Type:ident),* $(,)?) => {
        $(impl PrimitiveIdentity for $Type {
            fn tag(&self) -> Option<&'static str> {
                Some(stringify!($Type))
            }
            fn params(&self) -> Option<Value> {
                serde_json::to_value(self).ok()
            }
            fn is_equivalent(&self, other: &dyn Primitive) -> bool {
                other.as_any().downcast_ref::<$Type>() == Some(self)
            }
            fn as_any(&self) -> &dyn Any {
                self
            }
        })*

        /// Every serializable primitive's tag.
        pub const TAGS: &[&str] = &[$(stringify!($Type)),*];

        /// Rebuilds a primitive from the tag and parameters that
        /// [`PrimitiveIdentity`] wrote; unknown tags and malformed
        /// parameters are errors naming `op`.
        pub fn decode(op: &'static str, tag: &str, params: Value) -> Result<Box<dyn Primitive>> {
            let bad = |e: serde_json::Error| Error::invalid(op, format!("bad parameters for primitive {tag}: {e}"));
            match tag {
                $(stringify!($Type) => Ok(Box::new(serde_json::from_value::<$Type>(params).map_err(bad)?)),)*
                _ => Err(Error::invalid(op, format!("unknown primitive {tag:?}"))),
            }
        }
    };
}

serializable_primitives!(
    Unary,
    Binary,
    Select,
    AsType,
    Full,
    Arange,
    Eye,
    Concatenate,
    Gather,
    Scatter,
    Matmul,
    AddMatmul,
    RandomBits,
    OptimizerUpdate,
    RmsNorm,
    RmsNormVjp,
    LayerNorm,
    LayerNormVjp,
    Rope,
    Attention,
    AttentionVjp,
    CrossEntropy,
    CrossEntropyVjp,
    Softmax,
    LogSumExp,
    Reduce,
    ArgReduce,
    Scan,
    Fft,
    Linalg,
    PivotPermutation,
    Sort,
    ArgSort,
    Partition,
    ArgPartition,
    SearchSorted,
    Reshape,
    Transpose,
    Slice,
    SliceUpdate,
    BroadcastTo,
    BroadcastAgainst,
    Contiguous,
    View,
    Identity,
    StopGradient,
    RefuseGradient,
    AsStrided,
    Depends,
    Convolution,
    Fused,
    FusedReduce,
    MetalKernel,
);

/// Implements [`PrimitiveIdentity`] for a primitive that holds live state:
/// it has no tag or parameters and is equivalent only to itself.
macro_rules! opaque_primitive {
    ($Type:ty) => {
        impl $crate::primitives::PrimitiveIdentity for $Type {
            fn tag(&self) -> Option<&'static str> {
                None
            }
            fn params(&self) -> Option<::serde_json::Value> {
                None
            }
            fn is_equivalent(&self, other: &dyn $crate::primitives::Primitive) -> bool {
                std::ptr::addr_eq(self as *const Self, other.as_any() as *const dyn std::any::Any)
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}

pub(crate) use opaque_primitive;
