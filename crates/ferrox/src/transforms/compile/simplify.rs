//! Graph simplification of a recorded function, before fusion: identity
//! nodes are bypassed, equal scalar constants become one, nodes that apply
//! an equivalent primitive to the same inputs are merged (common
//! subexpressions), and nodes no output needs are dropped.

use super::tape::{host_scalar_bytes, Ref, Tape, TapeNode};
use crate::primitives::Identity;
use std::collections::HashMap;

/// Simplifies `tape` in place.
pub(crate) fn simplify(tape: &mut Tape) {
    let mut map: HashMap<Ref, Ref> = merge_scalar_constants(tape);
    let mut seen: HashMap<(&'static str, Vec<Ref>), Vec<usize>> = HashMap::new();
    let nodes = std::mem::take(&mut tape.nodes);
    let mut kept: Vec<Option<TapeNode>> = Vec::with_capacity(nodes.len());
    for (k, mut node) in nodes.into_iter().enumerate() {
        for r in node.inputs.iter_mut() {
            *r = *map.get(r).unwrap_or(r);
        }
        if node.primitive.as_any().is::<Identity>() && node.inputs.len() == 1 {
            map.insert(Ref::Node(k, 0), node.inputs[0]);
            kept.push(None);
            continue;
        }
        if let Some(tag) = node.primitive.tag() {
            let key = (tag, node.inputs.clone());
            let twins = seen.entry(key).or_default();
            let twin = twins.iter().copied().find(|&t| {
                let other = kept[t].as_ref().expect("recorded twins are kept");
                other.stream == node.stream
                    && other.outputs == node.outputs
                    && other.primitive.is_equivalent(&*node.primitive)
            });
            if let Some(t) = twin {
                for j in 0..node.outputs.len() {
                    map.insert(Ref::Node(k, j), Ref::Node(t, j));
                }
                kept.push(None);
                continue;
            }
            twins.push(k);
        }
        kept.push(Some(node));
    }
    for r in tape.outputs.iter_mut() {
        *r = *map.get(r).unwrap_or(r);
    }
    drop_dead(tape, kept);
}

/// Merges evaluated one-element host constants of equal dtype, shape and
/// value (a Python scalar written twice); the map of merged references.
fn merge_scalar_constants(tape: &Tape) -> HashMap<Ref, Ref> {
    let mut map = HashMap::new();
    let mut first: HashMap<(crate::dtype::Dtype, Vec<usize>, Vec<u8>), usize> = HashMap::new();
    for (i, c) in tape.constants.iter().enumerate() {
        let Some(bytes) = host_scalar_bytes(c) else { continue };
        let key = (c.dtype(), c.shape().to_vec(), bytes);
        match first.get(&key) {
            Some(&j) => {
                map.insert(Ref::Constant(i), Ref::Constant(j));
            }
            None => {
                first.insert(key, i);
            }
        }
    }
    map
}

/// Keeps the nodes (of `kept`, indexed like the original tape) that an
/// output needs, renumbered in order, and the constants they read.
fn drop_dead(tape: &mut Tape, kept: Vec<Option<TapeNode>>) {
    let mut live = vec![false; kept.len()];
    let mut constant_live = vec![false; tape.constants.len()];
    let mark = |r: Ref, live: &mut Vec<bool>, constant_live: &mut Vec<bool>| match r {
        Ref::Node(k, _) => live[k] = true,
        Ref::Constant(i) => constant_live[i] = true,
        Ref::Input(_) => {}
    };
    for &r in &tape.outputs {
        mark(r, &mut live, &mut constant_live);
    }
    for k in (0..kept.len()).rev() {
        if !live[k] {
            continue;
        }
        if let Some(node) = &kept[k] {
            for &r in &node.inputs {
                mark(r, &mut live, &mut constant_live);
            }
        }
    }
    let mut node_index: HashMap<usize, usize> = HashMap::new();
    let mut constant_index: HashMap<usize, usize> = HashMap::new();
    let constants = std::mem::take(&mut tape.constants);
    for (i, c) in constants.into_iter().enumerate() {
        if constant_live[i] {
            constant_index.insert(i, tape.constants.len());
            tape.constants.push(c);
        }
    }
    let renumber = |r: Ref, node_index: &HashMap<usize, usize>| match r {
        Ref::Node(k, j) => Ref::Node(node_index[&k], j),
        Ref::Constant(i) => Ref::Constant(constant_index[&i]),
        Ref::Input(i) => Ref::Input(i),
    };
    for (k, node) in kept.into_iter().enumerate() {
        let Some(mut node) = node.filter(|_| live[k]) else { continue };
        for r in node.inputs.iter_mut() {
            *r = renumber(*r, &node_index);
        }
        node_index.insert(k, tape.nodes.len());
        tape.nodes.push(node);
    }
    for r in tape.outputs.iter_mut() {
        *r = renumber(*r, &node_index);
    }
}
