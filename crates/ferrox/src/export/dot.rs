//! Graphviz output of a computation (MLX's `export_to_dot`).

use crate::array::Array;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

/// Writes the graph behind `outputs` in Graphviz's DOT language: arrays
/// are ovals (labelled with their name from `names`, else a number, plus
/// shape and dtype), primitives boxes; the walk stops at evaluated arrays.
pub fn export_to_dot(out: &mut dyn Write, outputs: &[Array], names: &[(String, Array)]) -> Result<()> {
    let op = "export_to_dot";
    let io = |e: std::io::Error| Error::file(op, "<output>", &e);
    let given: HashMap<usize, &str> = names.iter().map(|(n, a)| (a.node_key(), n.as_str())).collect();
    let mut ids: HashMap<usize, usize> = HashMap::new();
    let mut text = String::from("digraph {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n");
    let mut array_node = |a: &Array, text: &mut String| -> String {
        let fresh = ids.len();
        let id = *ids.entry(a.node_key()).or_insert(fresh);
        if id == fresh {
            let label = given.get(&a.node_key()).map_or_else(|| id.to_string(), |n| n.to_string());
            let shape: Vec<String> = a.shape().iter().map(usize::to_string).collect();
            text.push_str(&format!(
                "  a{id} [shape=oval, label=\"{}\\n({}) {}\"];\n",
                label.replace('"', "\\\""),
                shape.join(", "),
                a.dtype()
            ));
        }
        format!("a{id}")
    };
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<Array> = outputs.to_vec();
    let mut primitives = 0usize;
    while let Some(a) = stack.pop() {
        let node = array_node(&a, &mut text);
        let Some(recipe) = a.pending_recipe() else { continue };
        if !seen.insert(Arc::as_ptr(&recipe) as usize) {
            continue;
        }
        let p = format!("p{primitives}");
        primitives += 1;
        text.push_str(&format!("  {p} [shape=box, label=\"{}\"];\n", recipe.primitive.label()));
        for sibling in recipe.sibling_nodes().into_iter().flatten() {
            let s = array_node(&Array::from_node(sibling), &mut text);
            text.push_str(&format!("  {p} -> {s};\n"));
        }
        if !recipe.sibling_nodes().iter().any(|n| n.as_ref().is_some_and(|n| Arc::as_ptr(n) as usize == a.node_key())) {
            text.push_str(&format!("  {p} -> {node};\n"));
        }
        for input in &recipe.inputs {
            let i = array_node(input, &mut text);
            text.push_str(&format!("  {i} -> {p};\n"));
            stack.push(input.clone());
        }
    }
    text.push_str("}\n");
    out.write_all(text.as_bytes()).map_err(io)
}
