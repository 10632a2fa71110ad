//! Modules: layers and models as trees of named parameters (MLX's
//! `mlx.nn.Module`).
//!
//! A [`Module`] lists its entries — its own parameters ([`Param`]) and its
//! child modules — by name, through [`Module::visit_entries`] and
//! [`Module::visit_entries_mut`]. Everything else is derived from those two
//! methods: flat parameter maps keyed by dotted paths as MLX's
//! `tree_flatten` prints them ([`Params`], e.g. `"layers.0.weight"`),
//! strict updates, freezing, training mode, dtype casts and weight files.
//! Layers with a single input also implement [`Forward`]; layers with
//! several inputs (attention, recurrent layers with a state, `Bilinear`)
//! have inherent `forward` methods taking MLX's `__call__` arguments.
//!
//! A model is a plain struct of layers; implementing [`Module`] for it
//! takes two short methods, no derive:
//!
//! ```
//! use ferrox::{random, Array, Dtype};
//! use ferrox_nn::layers::{Linear, Dropout};
//! use ferrox_nn::module::{Entry, EntryMut, Forward, Module};
//!
//! struct Mlp { fc1: Linear, drop: Dropout, fc2: Linear }
//!
//! impl Module for Mlp {
//!     fn visit_entries(&self, f: &mut dyn FnMut(&str, Entry<'_>)) {
//!         f("fc1", Entry::Module(&self.fc1));
//!         f("drop", Entry::Module(&self.drop));
//!         f("fc2", Entry::Module(&self.fc2));
//!     }
//!     fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, EntryMut<'_>)) {
//!         f("fc1", EntryMut::Module(&mut self.fc1));
//!         f("drop", EntryMut::Module(&mut self.drop));
//!         f("fc2", EntryMut::Module(&mut self.fc2));
//!     }
//! }
//!
//! impl Forward for Mlp {
//!     fn forward(&self, x: &Array) -> ferrox::Result<Array> {
//!         let h = ferrox_nn::functions::relu(&self.fc1.forward(x)?)?;
//!         self.fc2.forward(&self.drop.forward(&h)?)
//!     }
//! }
//!
//! let key = random::key(0)?;
//! let (k1, k2) = random::split_pair(&key)?;
//! let mut model = Mlp {
//!     fc1: Linear::new(4, 8, true, Some(&k1))?,
//!     drop: Dropout::new(0.1)?,
//!     fc2: Linear::new(8, 2, true, Some(&k2))?,
//! };
//! let names: Vec<String> = model.parameters().into_keys().collect();
//! assert_eq!(names, ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]);
//! model.freeze("fc1")?;
//! assert_eq!(model.trainable_parameters().len(), 2);
//! model.train(false); // reaches the Dropout
//! assert!(!model.drop.training());
//! let y = model.forward(&random::normal(&[3, 4], Dtype::F32, None, None, Some(&key))?)?;
//! assert_eq!(y.shape(), &[3, 2]);
//! # Ok::<(), ferrox::Error>(())
//! ```

use crate::py_shape;
use ferrox::io::{self, Loaded};
use ferrox::{Array, Dtype, Error, Result};
use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::Path;

/// Parameters by dotted path (`"layers.0.weight"`), in path order.
pub type Params = BTreeMap<String, Array>;

/// A parameter: an array and whether it is frozen (left out of
/// [`Module::trainable_parameters`] and so of gradients). Derefs to its
/// array.
#[derive(Clone, Debug)]
pub struct Param {
    value: Array,
    frozen: bool,
}

impl Param {
    /// A trainable parameter holding `value`.
    pub fn new(value: Array) -> Param {
        Param { value, frozen: false }
    }

    /// The array.
    pub fn array(&self) -> &Array {
        &self.value
    }

    /// Replaces the array (the frozen flag stays).
    pub fn set(&mut self, value: Array) {
        self.value = value;
    }

    /// Whether the parameter is frozen.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Freezes (`true`) or unfreezes (`false`) the parameter.
    pub fn set_frozen(&mut self, frozen: bool) {
        self.frozen = frozen;
    }
}

impl Deref for Param {
    type Target = Array;
    fn deref(&self) -> &Array {
        &self.value
    }
}

impl From<Array> for Param {
    fn from(value: Array) -> Param {
        Param::new(value)
    }
}

/// One entry of a module, as [`Module::visit_entries`] shows it.
pub enum Entry<'a> {
    /// A parameter of the module itself.
    Param(&'a Param),
    /// A child module.
    Module(&'a dyn Module),
}

/// One entry of a module, mutably, as [`Module::visit_entries_mut`] shows it.
pub enum EntryMut<'a> {
    /// A parameter of the module itself.
    Param(&'a mut Param),
    /// A child module.
    Module(&'a mut dyn Module),
}

/// `prefix.name`, or `name` when the prefix is empty.
fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Whether the dotted `path` lies under `prefix`: equal to it or starting
/// with `prefix.` (every path lies under the empty prefix).
fn under(path: &str, prefix: &str) -> bool {
    prefix.is_empty() || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('.'))
}

/// Names, one per line, as MLX lists them in its errors.
fn listing<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names.map(String::as_str).collect::<Vec<_>>().join(",\n")
}

/// A layer or model: a tree of named parameters and child modules.
///
/// Implement [`visit_entries`](Module::visit_entries) and
/// [`visit_entries_mut`](Module::visit_entries_mut) (they must list the same
/// entries in the same order); a module whose behaviour depends on the
/// training mode also implements [`set_training_mode`](Module::set_training_mode)
/// and [`training`](Module::training). The other methods are provided.
pub trait Module {
    /// Calls `f` with the name and value of each parameter of this module
    /// and each child module (children are visited as a whole, not
    /// entered).
    fn visit_entries(&self, f: &mut dyn FnMut(&str, Entry<'_>));

    /// [`visit_entries`](Module::visit_entries), mutably.
    fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, EntryMut<'_>));

    /// Sets this module's own training flag (not its children's; see
    /// [`train`](Module::train)). Modules without one ignore it.
    fn set_training_mode(&mut self, _on: bool) {}

    /// Whether the module is in training mode: its own flag when it keeps
    /// one, else its first child's, else `true`.
    fn training(&self) -> bool {
        let mut first = None;
        self.visit_entries(&mut |_, entry| {
            if let (None, Entry::Module(m)) = (first, entry) {
                first = Some(m.training());
            }
        });
        first.unwrap_or(true)
    }

    /// Calls `f` with the dotted path (under `prefix`) and value of every
    /// parameter of this module and its descendants, depth first in entry
    /// order.
    fn visit_params(&self, prefix: &str, f: &mut dyn FnMut(&str, &Param)) {
        self.visit_entries(&mut |name, entry| {
            let path = join(prefix, name);
            match entry {
                Entry::Param(p) => f(&path, p),
                Entry::Module(m) => m.visit_params(&path, f),
            }
        });
    }

    /// [`visit_params`](Module::visit_params), mutably.
    fn visit_params_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Param)) {
        self.visit_entries_mut(&mut |name, entry| {
            let path = join(prefix, name);
            match entry {
                EntryMut::Param(p) => f(&path, p),
                EntryMut::Module(m) => m.visit_params_mut(&path, f),
            }
        });
    }

    /// Every parameter, frozen or not, by dotted path.
    fn parameters(&self) -> Params {
        let mut out = Params::new();
        self.visit_params("", &mut |path, p| {
            out.insert(path.to_string(), p.array().clone());
        });
        out
    }

    /// The parameters that are not frozen, by dotted path.
    fn trainable_parameters(&self) -> Params {
        let mut out = Params::new();
        self.visit_params("", &mut |path, p| {
            if !p.is_frozen() {
                out.insert(path.to_string(), p.array().clone());
            }
        });
        out
    }

    /// Replaces the parameters named in `params` (a subset of
    /// [`parameters`](Module::parameters)). A name the module lacks, or an
    /// array whose shape differs from the current one, is an error naming
    /// the parameter, and nothing is changed.
    fn update(&mut self, params: &Params) -> Result<()> {
        let current = self.parameters();
        for (name, value) in params {
            let Some(old) = current.get(name) else {
                return Err(Error::invalid("update", format!("Module does not have parameter named \"{name}\".")));
            };
            if old.shape() != value.shape() {
                return Err(Error::invalid(
                    "update",
                    format!(
                        "Expected shape {} but received shape {} for parameter {name}.",
                        py_shape(old.shape()),
                        py_shape(value.shape())
                    ),
                ));
            }
        }
        self.visit_params_mut("", &mut |path, p| {
            if let Some(v) = params.get(path) {
                p.set(v.clone());
            }
        });
        Ok(())
    }

    /// Puts this module and all its descendants in training mode (`true`)
    /// or evaluation mode (`false`).
    fn train(&mut self, on: bool) {
        self.set_training_mode(on);
        self.visit_entries_mut(&mut |_, entry| {
            if let EntryMut::Module(m) = entry {
                m.train(on);
            }
        });
    }

    /// Freezes the parameters under the dotted path `prefix` (all of them
    /// for `""`; `"layers.0"` freezes `layers.0.weight` but not
    /// `layers.01.weight`). A non-empty prefix that reaches no parameter is
    /// an error naming it.
    fn freeze(&mut self, prefix: &str) -> Result<()> {
        set_frozen(self, "freeze", prefix, true)
    }

    /// Unfreezes the parameters under `prefix`, as [`freeze`](Module::freeze)
    /// selects them.
    fn unfreeze(&mut self, prefix: &str) -> Result<()> {
        set_frozen(self, "unfreeze", prefix, false)
    }

    /// Casts every floating-point parameter to `dtype` (integer parameters
    /// keep theirs, as MLX's default predicate does).
    fn set_dtype(&mut self, dtype: Dtype) -> Result<()> {
        let mut result = Ok(());
        self.visit_params_mut("", &mut |_, p| {
            if result.is_ok() && p.dtype().is_floating() {
                match p.astype(dtype) {
                    Ok(cast) => p.set(cast),
                    Err(e) => result = Err(e),
                }
            }
        });
        result
    }

    /// Loads named arrays as MLX's `load_weights` does. With `strict`, the
    /// names must be exactly the module's parameter names (the error lists
    /// the unexpected or the missing ones) and every shape must match;
    /// without, the names the module lacks are skipped and shapes are not
    /// checked.
    fn load_params(&mut self, weights: &Params, strict: bool) -> Result<()> {
        let op = "load_weights";
        let current = self.parameters();
        if strict {
            let extra: Vec<&String> = weights.keys().filter(|k| !current.contains_key(*k)).collect();
            if !extra.is_empty() {
                return Err(Error::invalid(
                    op,
                    format!("Received {} parameters not in model: \n{}.", extra.len(), listing(extra.into_iter())),
                ));
            }
            let missing: Vec<&String> = current.keys().filter(|k| !weights.contains_key(*k)).collect();
            if !missing.is_empty() {
                return Err(Error::invalid(
                    op,
                    format!("Missing {} parameters: \n{}.", missing.len(), listing(missing.into_iter())),
                ));
            }
            for (name, old) in &current {
                let new = &weights[name];
                if old.shape() != new.shape() {
                    return Err(Error::invalid(
                        op,
                        format!(
                            "Expected shape {} but received shape {} for parameter {name}",
                            py_shape(old.shape()),
                            py_shape(new.shape())
                        ),
                    ));
                }
            }
        }
        self.visit_params_mut("", &mut |path, p| {
            if let Some(v) = weights.get(path) {
                p.set(v.clone());
            }
        });
        Ok(())
    }

    /// Saves every parameter to `path`: a `.npz` file (uncompressed) or a
    /// `.safetensors` file, chosen by the extension.
    fn save_weights(&self, path: impl AsRef<Path>) -> Result<()>
    where
        Self: Sized,
    {
        let path = path.as_ref();
        let arrays: Vec<(String, Array)> = self.parameters().into_iter().collect();
        match path.extension().and_then(|e| e.to_str()) {
            Some("npz") => io::savez(path, &arrays, false),
            Some("safetensors") => io::save_safetensors(path, &arrays, &[]),
            _ => Err(Error::invalid(
                "save_weights",
                format!("Unsupported file extension for {}. Use '.npz' or '.safetensors'.", path.display()),
            )),
        }
    }

    /// Loads the parameters saved in the `.npz` or `.safetensors` file at
    /// `path`, checked as [`load_params`](Module::load_params) checks them.
    fn load_weights(&mut self, path: impl AsRef<Path>, strict: bool) -> Result<()>
    where
        Self: Sized,
    {
        let path = path.as_ref();
        match io::load(path, None)? {
            Loaded::Arrays(arrays, _) => self.load_params(&arrays.into_iter().collect(), strict),
            Loaded::Array(_) => Err(Error::invalid(
                "load_weights",
                format!("{} holds one unnamed array; expected a .npz or .safetensors file.", path.display()),
            )),
        }
    }
}

/// A module called with one array (MLX's `__call__(x)`).
pub trait Forward: Module {
    /// The module applied to `x`.
    fn forward(&self, x: &Array) -> Result<Array>;
}

/// Sets the frozen flag of the parameters of `module` under `prefix`.
fn set_frozen<M: Module + ?Sized>(module: &mut M, op: &'static str, prefix: &str, frozen: bool) -> Result<()> {
    let mut reached = false;
    module.visit_params_mut("", &mut |path, p| {
        if under(path, prefix) {
            p.set_frozen(frozen);
            reached = true;
        }
    });
    if !reached && !prefix.is_empty() {
        return Err(Error::invalid(op, format!("Module has no parameter under \"{prefix}\".")));
    }
    Ok(())
}

/// The value of `loss(model)` and its gradient with respect to the
/// model's trainable parameters (MLX's `nn.value_and_grad`). The
/// parameters are swapped for traced copies while `loss` runs and put back
/// afterwards, whether it succeeds or not. `loss` must return a scalar.
///
/// ```
/// use ferrox::{ops, random, Array};
/// use ferrox_nn::layers::Linear;
/// use ferrox_nn::module::{value_and_grad, Forward};
/// let mut layer = Linear::new(3, 1, true, Some(&random::key(1)?))?;
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[1, 3])?;
/// let (loss, grads) = value_and_grad(&mut layer, |m| ops::sum(&m.forward(&x)?, None, false))?;
/// assert_eq!(grads["weight"].to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
/// assert_eq!(grads["bias"].to_vec::<f32>()?, vec![1.0]);
/// # let _ = loss;
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn value_and_grad<M: Module + ?Sized>(
    model: &mut M,
    loss: impl FnOnce(&M) -> Result<Array>,
) -> Result<(Array, Params)> {
    let trainable = model.trainable_parameters();
    if trainable.is_empty() {
        return Ok((loss(model)?, Params::new()));
    }
    let names: Vec<String> = trainable.keys().cloned().collect();
    let values: Vec<Array> = trainable.values().cloned().collect();
    let argnums: Vec<usize> = (0..values.len()).collect();
    let result = ferrox::value_and_grad(
        |traced| {
            let swapped: Params = names.iter().cloned().zip(traced.iter().cloned()).collect();
            model.update(&swapped)?;
            Ok(vec![loss(model)?])
        },
        &values,
        &argnums,
    );
    model.update(&trainable)?;
    let (mut outputs, grads) = result?;
    Ok((outputs.swap_remove(0), names.into_iter().zip(grads).collect()))
}
