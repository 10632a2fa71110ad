//! Kernel fusion of a simplified tape: connected elementwise nodes (unary,
//! binary, `where`, casts) of one output shape become one [`Fused`] node,
//! which a backend runs in one pass over the data. Inputs of a group may
//! have any shape that broadcasts to the group's; a member read outside
//! the group (by another node or as a function output) becomes an output
//! of the fused node. The values of one-element host constants (Python
//! scalars) among a group's inputs are recorded in its program
//! (`known_scalars`), so a backend can build them into the kernel. A group
//! (even of one node) whose only reader is a [`Reduce`] of its last member
//! becomes one [`FusedReduce`] node with that reduction. A group reads an
//! explicit broadcast to its shape through, from the broadcast's source.

use super::tape::{host_scalar_bytes, Ref, Tape, TapeNode};
use crate::array::Array;
use crate::backend::fused::{FusedOp, FusedProgram, FusedStep, Operand};
use crate::dtype::Dtype;
use crate::primitives::{
    AsType, Binary, BroadcastTo, Fused, FusedReduce, OutputSpec, Primitive, Reduce, Select, Unary,
};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// The fused op of an elementwise primitive, if it is one.
fn fused_op(p: &dyn Primitive) -> Option<FusedOp> {
    let any = p.as_any();
    if let Some(Unary(op)) = any.downcast_ref::<Unary>() {
        return Some(FusedOp::Unary(*op));
    }
    if let Some(Binary(op)) = any.downcast_ref::<Binary>() {
        return Some(FusedOp::Binary(*op));
    }
    if any.is::<Select>() {
        return Some(FusedOp::Select);
    }
    any.is::<AsType>().then_some(FusedOp::AsType)
}

/// The reduction that is the only reader of node `k`'s value, if any: a
/// [`Reduce`] node on the same stream, and `k` is not a function output.
fn final_reduction(tape: &Tape, consumers: &HashMap<Ref, Vec<usize>>, k: usize) -> Option<(usize, Reduce)> {
    let me = Ref::Node(k, 0);
    let readers = consumers.get(&me)?;
    let &[r] = readers.as_slice() else { return None };
    let node = &tape.nodes[r];
    let reduce = node.primitive.as_any().downcast_ref::<Reduce>()?;
    let only_input = node.inputs.as_slice() == [me];
    (only_input && node.stream == tape.nodes[k].stream && !tape.outputs.contains(&me)).then(|| (r, reduce.clone()))
}

/// `tape` with its elementwise chains fused.
pub(crate) fn fuse(tape: &Tape) -> Tape {
    let consumers = tape.consumers();
    let fusable: Vec<Option<FusedOp>> =
        tape.nodes.iter().map(|n| if n.outputs.len() == 1 { fused_op(&*n.primitive) } else { None }).collect();
    // Groups grow from their last member backwards through producers.
    let mut group_of: Vec<Option<usize>> = vec![None; tape.nodes.len()];
    let mut groups: Vec<BTreeSet<usize>> = Vec::new();
    for root in (0..tape.nodes.len()).rev() {
        if fusable[root].is_none() || group_of[root].is_some() {
            continue;
        }
        let node = &tape.nodes[root];
        let mut members: BTreeSet<usize> = BTreeSet::from([root]);
        loop {
            let candidate = members.iter().flat_map(|&m| &tape.nodes[m].inputs).find_map(|&r| match r {
                Ref::Node(k, 0)
                    if !members.contains(&k)
                        && group_of[k].is_none()
                        && fusable[k].is_some()
                        && tape.nodes[k].outputs[0].shape == node.outputs[0].shape
                        && tape.nodes[k].stream == node.stream
                        && consumers.get(&r).is_none_or(|c| c.iter().all(|c| members.contains(c))) =>
                {
                    Some(k)
                }
                _ => None,
            });
            match candidate {
                Some(k) => {
                    members.insert(k);
                }
                None => break,
            }
        }
        if members.len() > 1 || final_reduction(tape, &consumers, root).is_some() {
            for &m in &members {
                group_of[m] = Some(groups.len());
            }
            groups.push(members);
        }
    }
    rebuild(tape, &groups, &group_of, &fusable)
}

/// The tape with each group replaced by one fused node at its last member.
fn rebuild(tape: &Tape, groups: &[BTreeSet<usize>], group_of: &[Option<usize>], fusable: &[Option<FusedOp>]) -> Tape {
    let consumers = tape.consumers();
    let function_outputs: HashSet<Ref> = tape.outputs.iter().copied().collect();
    let mut map: HashMap<Ref, Ref> = HashMap::new();
    let mut out = Tape {
        input_specs: tape.input_specs.clone(),
        constants: tape.constants.clone(),
        nodes: Vec::new(),
        outputs: Vec::new(),
    };
    let remap = |r: Ref, map: &HashMap<Ref, Ref>| *map.get(&r).unwrap_or(&r);
    // Reductions folded into the group before them, skipped where they stood.
    let mut absorbed: HashSet<usize> = HashSet::new();
    for (k, node) in tape.nodes.iter().enumerate() {
        if absorbed.contains(&k) {
            continue;
        }
        let Some(g) = group_of[k] else {
            let mut node = node.clone();
            for r in node.inputs.iter_mut() {
                *r = remap(*r, &map);
            }
            map.insert(Ref::Node(k, 0), Ref::Node(out.nodes.len(), 0));
            for j in 1..node.outputs.len() {
                map.insert(Ref::Node(k, j), Ref::Node(out.nodes.len(), j));
            }
            out.nodes.push(node);
            continue;
        };
        let members = &groups[g];
        if members.last() != Some(&k) {
            continue; // emitted with the group's last member
        }
        let mut inputs: Vec<Ref> = Vec::new();
        let mut broadcast_inputs: Vec<bool> = Vec::new();
        let mut input_index: HashMap<Ref, usize> = HashMap::new();
        let mut steps = Vec::new();
        let mut step_of: HashMap<usize, usize> = HashMap::new();
        let mut outputs: Vec<usize> = Vec::new();
        let mut exported: Vec<usize> = Vec::new();
        for &m in members {
            let member = &tape.nodes[m];
            let args = member
                .inputs
                .iter()
                .map(|&r| match r {
                    Ref::Node(p, 0) if members.contains(&p) => Operand::Step(step_of[&p]),
                    _ => {
                        // An explicit broadcast to the group's shape is read
                        // through: inputs are read broadcast anyway.
                        let source = broadcast_source(tape, r, node);
                        let r = remap(source.unwrap_or(r), &map);
                        let i = *input_index.entry(r).or_insert_with(|| {
                            inputs.push(r);
                            broadcast_inputs.push(false);
                            inputs.len() - 1
                        });
                        broadcast_inputs[i] |= source.is_some();
                        Operand::Input(i)
                    }
                })
                .collect();
            step_of.insert(m, steps.len());
            steps.push(FusedStep {
                op: fusable[m].expect("members are elementwise"),
                args,
                dtype: member.outputs[0].dtype,
            });
            let me = Ref::Node(m, 0);
            let read_outside = consumers.get(&me).is_some_and(|c| c.iter().any(|c| !members.contains(c)));
            if m == k || read_outside || function_outputs.contains(&me) {
                outputs.push(steps.len() - 1);
                exported.push(m);
            }
        }
        let input_dtypes = inputs.iter().map(|&r| spec_of(&out, r, tape).dtype).collect();
        let known_scalars = inputs
            .iter()
            .map(|&r| match r {
                Ref::Constant(i) => known_scalar(&tape.constants[i]),
                _ => None,
            })
            .collect();
        let program = FusedProgram { inputs: input_dtypes, steps, outputs, known_scalars, broadcast_inputs };
        let index = out.nodes.len();
        if let (true, Some((r, reduce))) = (exported == [k], final_reduction(tape, &consumers, k)) {
            // The group's one value is only reduced: one node computes both.
            absorbed.insert(r);
            map.insert(Ref::Node(r, 0), Ref::Node(index, 0));
            let primitive = Arc::new(FusedReduce { program, reduce });
            out.nodes.push(TapeNode { primitive, inputs, outputs: tape.nodes[r].outputs.clone(), stream: node.stream });
            continue;
        }
        for (j, &m) in exported.iter().enumerate() {
            map.insert(Ref::Node(m, 0), Ref::Node(index, j));
        }
        let shape = node.outputs[0].shape.clone();
        let specs: Vec<OutputSpec> = exported
            .iter()
            .map(|&m| OutputSpec { shape: shape.clone(), dtype: tape.nodes[m].outputs[0].dtype })
            .collect();
        out.nodes.push(TapeNode { primitive: Arc::new(Fused(program)), inputs, outputs: specs, stream: node.stream });
    }
    out.outputs = tape.outputs.iter().map(|&r| remap(r, &map)).collect();
    out
}

/// The source of `r` when `r` is a [`BroadcastTo`] to the shape of the
/// group ending at `last`, on its stream.
fn broadcast_source(tape: &Tape, r: Ref, last: &TapeNode) -> Option<Ref> {
    let Ref::Node(p, 0) = r else { return None };
    let producer = &tape.nodes[p];
    let is_broadcast = producer.primitive.as_any().is::<BroadcastTo>();
    (is_broadcast && producer.stream == last.stream && producer.outputs[0].shape == last.outputs[0].shape)
        .then(|| producer.inputs[0])
}

/// The bits of a one-element host constant (little-endian, zero-extended;
/// see [`host_scalar_bytes`]); `None` for others.
fn known_scalar(c: &Array) -> Option<u64> {
    if c.dtype() == Dtype::C64 {
        return None;
    }
    let bytes = host_scalar_bytes(c)?;
    let mut bits = [0u8; 8];
    bits.get_mut(..bytes.len())?.copy_from_slice(&bytes);
    Some(u64::from_le_bytes(bits))
}

/// The shape and dtype of a reference of the rebuilt tape (inputs have no
/// recorded spec here; their dtype is read from the original consumer).
fn spec_of(out: &Tape, r: Ref, original: &Tape) -> OutputSpec {
    match r {
        Ref::Node(k, j) => out.nodes[k].outputs[j].clone(),
        Ref::Constant(i) => OutputSpec::of(&original.constants[i]),
        Ref::Input(i) => original.input_specs[i].clone(),
    }
}
