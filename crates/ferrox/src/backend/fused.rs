//! Fused elementwise programs: what `compile` hands a backend in place of a
//! chain of elementwise nodes ([`crate::primitives::Fused`]). A program is a
//! list of steps over the group's inputs, each an elementwise op with its
//! result dtype; every input is read broadcast to the group's shape and
//! every output has that shape. Backends run a program in one pass over
//! the data (the CPU block by block in cache, CUDA as one generated
//! kernel); [`run_step_by_step`] runs it with the ordinary kernels, for
//! programs a backend has no fused code for.

use super::{Backend, BinaryOp, Storage, UnaryOp};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::shape::Layout;
use std::fmt::Write;

/// The op of one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FusedOp {
    /// A row of the unary table.
    Unary(UnaryOp),
    /// A row of the binary table (operands share a dtype).
    Binary(BinaryOp),
    /// `where(cond, x, y)`.
    Select,
    /// Conversion to the step's dtype.
    AsType,
}

/// Where a step reads an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Operand {
    /// Input `i` of the group.
    Input(usize),
    /// The result of step `i` (an earlier step).
    Step(usize),
}

/// One elementwise op of a program and the dtype of its result.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FusedStep {
    /// What the step computes.
    pub op: FusedOp,
    /// Its operands, in the op's order.
    pub args: Vec<Operand>,
    /// The dtype of its result.
    pub dtype: Dtype,
}

/// A fused group: input dtypes, steps in dependency order, and the steps
/// whose results are the group's outputs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FusedProgram {
    /// The dtype of each input.
    pub inputs: Vec<Dtype>,
    /// The steps; each reads inputs and earlier steps only.
    pub steps: Vec<FusedStep>,
    /// The steps the outputs are, in output order.
    pub outputs: Vec<usize>,
    /// Empty, or for each input the bits of its one element (little-endian,
    /// zero-extended) when the input is a one-element constant known when
    /// the program was built (a Python scalar in the function). A backend
    /// may use the value in place of reading the input (CUDA writes it into
    /// the generated kernel); the input must hold that value.
    #[serde(default)]
    pub known_scalars: Vec<Option<u64>>,
    /// Empty, or for each input whether the traced function broadcast it
    /// explicitly (`broadcast_to`) before the group read it: the group
    /// reads the source, broadcast as every input is. Only the node's
    /// label ([`FusedProgram::label`]) uses it.
    #[serde(default)]
    pub broadcast_inputs: Vec<bool>,
}

impl FusedProgram {
    /// MLX's name for a compiled node: `Compiled` and its parts in order
    /// (`"CompiledBroadcastMultiplyAdd"`).
    pub fn label(&self) -> String {
        let mut label = String::from("Compiled");
        if self.broadcast_inputs.iter().any(|&b| b) {
            label.push_str("Broadcast");
        }
        for step in &self.steps {
            match step.op {
                FusedOp::Unary(op) => write!(label, "{op:?}"),
                FusedOp::Binary(op) => write!(label, "{op:?}"),
                FusedOp::Select => write!(label, "Select"),
                FusedOp::AsType => write!(label, "AsType"),
            }
            .expect("writing to a String cannot fail");
        }
        label
    }

    /// The dtype of an operand.
    pub fn dtype_of(&self, a: Operand) -> Dtype {
        match a {
            Operand::Input(i) => self.inputs[i],
            Operand::Step(i) => self.steps[i].dtype,
        }
    }

    /// The bits of input `j`'s one element, when the program knows it (see
    /// [`FusedProgram::known_scalars`]).
    pub fn known_scalar(&self, j: usize) -> Option<u64> {
        self.known_scalars.get(j).copied().flatten()
    }

    /// For each step, the index of the last step that reads it (or
    /// `steps.len()` for the outputs): when its value may be dropped.
    pub fn last_uses(&self) -> Vec<usize> {
        let mut last: Vec<usize> = (0..self.steps.len()).collect();
        for (i, step) in self.steps.iter().enumerate() {
            for a in &step.args {
                if let Operand::Step(j) = *a {
                    last[j] = i;
                }
            }
        }
        for &o in &self.outputs {
            last[o] = self.steps.len();
        }
        last
    }

    /// A one-line description (`exp(in0) -> s0; multiply(s0, in1) -> s1`,
    /// then the bits of known scalar inputs: `in1 = 0x40000000`), used in
    /// error messages and graph dumps.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            let name = match step.op {
                FusedOp::Unary(op) => op.name(),
                FusedOp::Binary(op) => op.name(),
                FusedOp::Select => "where",
                FusedOp::AsType => "astype",
            };
            let args: Vec<String> = step
                .args
                .iter()
                .map(|a| match a {
                    Operand::Input(j) => format!("in{j}"),
                    Operand::Step(j) => format!("s{j}"),
                })
                .collect();
            let _ = write!(out, "{}{name}({}) -> s{i}:{}", if i > 0 { "; " } else { "" }, args.join(", "), step.dtype);
        }
        for (j, bits) in self.known_scalars.iter().enumerate() {
            if let Some(bits) = bits {
                let _ = write!(out, "; in{j} = {bits:#x}");
            }
        }
        out
    }

    /// Whether the step's op, operand dtypes and result dtype are those its
    /// eager kernel has (a program `compile` built always is; one read
    /// from a file is checked with this).
    pub fn is_well_typed(&self) -> bool {
        if self.outputs.iter().any(|&o| o >= self.steps.len()) {
            return false;
        }
        let known_fit = self.known_scalars.is_empty()
            || (self.known_scalars.len() == self.inputs.len()
                && self.known_scalars.iter().zip(&self.inputs).all(|(k, d)| k.is_none() || *d != Dtype::C64));
        if !known_fit {
            return false;
        }
        self.steps.iter().enumerate().all(|(i, step)| {
            let in_range = step.args.iter().all(|a| match *a {
                Operand::Input(j) => j < self.inputs.len(),
                Operand::Step(j) => j < i,
            });
            if !in_range {
                return false;
            }
            let dt: Vec<Dtype> = step.args.iter().map(|&a| self.dtype_of(a)).collect();
            match (step.op, dt.as_slice()) {
                (FusedOp::Unary(op), [x]) => {
                    op.kind().compute_dtype(*x) == Some(*x) && op.kind().kernel_output(*x) == step.dtype
                }
                (FusedOp::Binary(op), [a, b]) => {
                    a == b && op.kind().compute_dtype(*a) == Some(*a) && op.kind().kernel_output(*a) == step.dtype
                }
                (FusedOp::Select, [c, x, y]) => *c == Dtype::Bool && x == y && *x == step.dtype,
                (FusedOp::AsType, [_]) => true,
                _ => false,
            }
        })
    }
}

/// Runs `program` one step at a time with `backend`'s ordinary kernels:
/// the same results as the fused code, one pass over the data per step.
/// `inputs` are read through layouts already broadcast to `shape`.
pub fn run_step_by_step(
    backend: &dyn Backend,
    program: &FusedProgram,
    inputs: &[(&Storage, Layout)],
    shape: &[usize],
) -> Result<Vec<Storage>> {
    let dense = Layout::contiguous(shape);
    let last = program.last_uses();
    let mut values: Vec<Option<Storage>> = (0..program.steps.len()).map(|_| None).collect();
    for (i, step) in program.steps.iter().enumerate() {
        let out = {
            let args: Vec<(&Storage, &Layout)> = step
                .args
                .iter()
                .map(|&a| match a {
                    Operand::Input(j) => (inputs[j].0, &inputs[j].1),
                    Operand::Step(j) => (values[j].as_ref().expect("operands are computed first"), &dense),
                })
                .collect();
            match step.op {
                FusedOp::Unary(op) => backend.unary(op, args[0].0, args[0].1)?,
                FusedOp::Binary(op) => backend.binary(op, args[0].0, args[0].1, args[1].0, args[1].1)?,
                FusedOp::Select => backend.select(args[0].0, args[0].1, args[1].0, args[1].1, args[2].0, args[2].1)?,
                FusedOp::AsType => backend.copy(args[0].0, args[0].1, step.dtype)?,
            }
        };
        values[i] = Some(out);
        for a in &step.args {
            if let Operand::Step(j) = *a {
                if last[j] == i {
                    values[j] = None;
                }
            }
        }
    }
    // An output listed twice is computed once and copied for the repeat.
    let mut outputs = Vec::with_capacity(program.outputs.len());
    for (k, &o) in program.outputs.iter().enumerate() {
        let repeated = program.outputs[k + 1..].contains(&o);
        let value = if repeated {
            let v = values[o].as_ref().expect("outputs are kept");
            backend.copy(v, &dense, v.dtype())?
        } else {
            values[o].take().expect("outputs are kept")
        };
        outputs.push(value);
    }
    Ok(outputs)
}
