//! Optimizers with MLX's rules, defaults and state (`mlx.optimizers`):
//! [`Optimizer`] holds the step count, the learning rate (optionally on a
//! schedule, see [`schedulers`]) and each parameter's state arrays, and
//! applies one rule to flat parameter maps (`BTreeMap<String, Array>`, keys
//! as MLX's `tree_flatten` writes them). The elementwise rules (SGD,
//! RMSprop, Adagrad, AdaDelta, Adam, AdamW, Adamax, Lion) run ferrox's fused
//! `optimizer_update` kernel, one per parameter; [`Adafactor`] and [`Muon`]
//! compose ops ([`adafactor_update`], [`muon_update`]). The Python
//! `ferrox.optimizers` classes call the same kernels and functions.
//!
//! ```
//! use ferrox::{ops, Array, Dtype};
//! use ferrox_nn::optim::{AdamW, Optimizer};
//! use std::collections::BTreeMap;
//! let mut params = BTreeMap::from([("w".to_string(), ops::ones(&[3], Dtype::F32)?)]);
//! let grads = BTreeMap::from([("w".to_string(), ops::ones(&[3], Dtype::F32)?)]);
//! let mut opt = Optimizer::new(AdamW { learning_rate: 0.1, ..Default::default() });
//! opt.update(&mut params, &grads)?;
//! assert_eq!(opt.step(), 1);
//! assert!(params["w"].to_vec::<f32>()?[0] < 1.0);
//! # Ok::<(), ferrox::Error>(())
//! ```

mod adafactor;
mod clip;
mod muon;
mod optimizer;
pub mod schedulers;

pub use adafactor::{adafactor_update, Adafactor};
pub use clip::clip_grad_norm;
pub use muon::{muon_update, Muon};
pub use optimizer::{AdaDelta, Adagrad, Adam, AdamW, Adamax, Config, Lion, Optimizer, RmsProp, Rule, Sgd};
