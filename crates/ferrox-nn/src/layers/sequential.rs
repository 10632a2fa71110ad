//! [`Sequential`]: layers called in order.

use crate::module::{Entry, EntryMut, Forward, Module};
use ferrox::{Array, Result};

/// Calls its layers in order, each on the previous one's output; the
/// layers' parameters are named `layers.0...`, `layers.1...`, as in MLX.
pub struct Sequential {
    /// The layers.
    pub layers: Vec<Box<dyn Forward>>,
    training: bool,
}

impl Sequential {
    /// A container of no layers (the identity).
    pub fn new() -> Sequential {
        Sequential { layers: Vec::new(), training: true }
    }

    /// The container with `layer` appended.
    pub fn push(mut self, layer: impl Forward + 'static) -> Sequential {
        self.layers.push(Box::new(layer));
        self
    }
}

impl Default for Sequential {
    fn default() -> Sequential {
        Sequential::new()
    }
}

impl Module for Sequential {
    fn visit_entries(&self, f: &mut dyn FnMut(&str, Entry<'_>)) {
        for (i, layer) in self.layers.iter().enumerate() {
            f(&format!("layers.{i}"), Entry::Module(layer.as_ref()));
        }
    }

    fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, EntryMut<'_>)) {
        for (i, layer) in self.layers.iter_mut().enumerate() {
            f(&format!("layers.{i}"), EntryMut::Module(layer.as_mut()));
        }
    }

    training_flag!();
}

impl Forward for Sequential {
    fn forward(&self, x: &Array) -> Result<Array> {
        let mut x = x.clone();
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        Ok(x)
    }
}
