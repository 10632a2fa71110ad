//! # ferrox
//!
//! An array framework for machine learning with MLX's programming model:
//! NumPy-like ops that build a lazy graph, evaluated on demand by a
//! per-device [`backend`].
//!
//! ```
//! use ferrox::{Array, Dtype};
//! let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
//! let b = (&a * 2.0)?;                 // lazy: nothing computed yet
//! let total = b.sum(None, false)?;     // still lazy
//! assert_eq!(total.item::<f32>()?, 12.0); // evaluates what is needed
//! assert_eq!(b.dtype(), Dtype::F32);
//! # Ok::<(), ferrox::Error>(())
//! ```

pub mod array;
pub mod backend;
pub mod device;
pub mod dtype;
pub mod element;
pub mod error;
pub mod export;
pub mod format;
pub mod io;
pub mod memory;
pub mod ops;
pub mod primitives;
pub mod shape;
pub mod transforms;

pub use array::{Array, ArrayData};
pub use device::{default_device, set_default_device, synchronize, Device, DeviceType, Stream};
pub use dtype::{Dtype, DtypeCategory};
pub use element::{Element, Scalar};
pub use error::{Error, Result};
pub use memory::{
    clear_cache, get_active_memory, get_cache_memory, get_peak_memory, reset_peak_memory, set_cache_limit,
    set_memory_limit,
};
pub use ops::random;
pub use transforms::async_eval::async_eval;
pub use transforms::autodiff::{jvp, value_and_grad, vjp};
pub use transforms::compile::{compile, disable_compile, enable_compile, CompiledFunction};
pub use transforms::custom::{checkpoint, CustomFunction};
pub use transforms::eval::eval;
pub use transforms::vmap::vmap;
