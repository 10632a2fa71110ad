//! Einstein summation: `einsum` and the contraction order it follows,
//! `einsum_path`. As MLX (after NumPy and opt_einsum): the subscripts are
//! parsed and their ellipses expanded, a greedy search picks which pair of
//! operands to contract next, and each step becomes diagonals, sums and
//! one batched `matmul` (or a broadcast product and a sum when nothing is
//! contracted), so einsum runs on every backend and is differentiable.

use std::collections::{BTreeMap, BTreeSet};

use super::contraction::diagonal;
use super::elementwise::multiply;
use super::matmul::matmul;
use super::reduction::sum;
use super::shaping::{broadcast_to, reshape_to, transpose};
use crate::array::Array;
use crate::error::{fmt_shape, Error, Result};

/// The subscript letters of one term, in axis order.
type Term = Vec<char>;

/// The order in which [`einsum`] contracts its operands, and a summary of
/// what that order costs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EinsumPath {
    /// For each step, the positions (in the current operand list) of the
    /// operands it contracts; the step's result goes to the end of the list.
    pub steps: Vec<Vec<usize>>,
    /// MLX's text report: the scaling and FLOP counts, naive and optimized.
    pub report: String,
}

/// One contraction step: the terms it takes, where they sit in the operand
/// list, and the term it produces.
struct Step {
    inputs: Vec<Term>,
    positions: Vec<usize>,
    output: Term,
}

/// The parsed and checked subscripts of an einsum call.
struct Plan {
    steps: Vec<Step>,
    naive: (usize, usize),
    optimized: (usize, usize),
}

fn set(term: &[char]) -> BTreeSet<char> {
    term.iter().copied().collect()
}

/// The number of elements of a term (repeated letters count each time).
fn term_size<'a>(term: impl IntoIterator<Item = &'a char>, dims: &BTreeMap<char, usize>) -> usize {
    term.into_iter().fold(1usize, |acc, c| acc.saturating_mul(dims[c]))
}

/// opt_einsum's FLOP estimate for a step that touches `letters`.
fn flop_count(letters: &BTreeSet<char>, inner: bool, num_terms: usize, dims: &BTreeMap<char, usize>) -> usize {
    let factor = (num_terms.saturating_sub(1)).max(1) + usize::from(inner);
    term_size(letters, dims).saturating_mul(factor)
}

/// The cost and scaling (number of distinct letters) of contracting all
/// `inputs` in one product.
fn cost_and_scaling(inputs: &[Term], output: &Term, dims: &BTreeMap<char, usize>) -> (usize, usize) {
    let letters: BTreeSet<char> = inputs.iter().flatten().copied().collect();
    let inner = letters.iter().any(|c| !output.contains(c));
    (flop_count(&letters, inner, inputs.len(), dims), letters.len())
}

/// Splits `subscripts` into input terms and the output term (inferred in
/// implicit mode: an ellipsis first, then the letters that occur once, in
/// alphabetical order).
fn parse(subscripts: &str) -> (Vec<String>, String) {
    let s: String = subscripts.chars().filter(|c| *c != ' ').collect();
    let (lhs, rhs) = match s.find("->") {
        Some(pos) => (s[..pos].to_string(), s[pos + 2..].to_string()),
        None => {
            let mut counts: BTreeMap<char, usize> = BTreeMap::new();
            for c in s.chars().filter(|c| *c != ',' && *c != '.') {
                *counts.entry(c).or_default() += 1;
            }
            let mut rhs = if s.contains('.') { "...".to_string() } else { String::new() };
            rhs.extend(counts.into_iter().filter(|&(_, n)| n == 1).map(|(c, _)| c));
            (s, rhs)
        }
    };
    (lhs.split(',').map(str::to_string).collect(), rhs)
}

/// Checks that `subscript` holds only letters and at most one ellipsis, and
/// replaces the ellipsis by letters from `spare`. `ndim` is the operand's
/// rank (None for the output, which takes the longest input ellipsis).
fn expand_ellipsis(
    op: &'static str,
    subscript: &str,
    operand: Option<(usize, &Array)>,
    spare: &[char],
    longest: &mut usize,
) -> Result<Term> {
    let chars: Vec<char> = subscript.chars().collect();
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut seen_ellipsis = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            if seen_ellipsis {
                after.push(c)
            } else {
                before.push(c)
            }
            i += 1;
            continue;
        }
        if c != '.' || chars.get(i + 1) != Some(&'.') || chars.get(i + 2) != Some(&'.') {
            return Err(Error::invalid(op, format!("Subscripts must be letters, but got '{c}'.")));
        }
        if seen_ellipsis {
            return Err(Error::invalid(
                op,
                format!("Only one ellipsis per subscript is allowed but found more in '{subscript}'."),
            ));
        }
        seen_ellipsis = true;
        i += 3;
    }
    if !seen_ellipsis {
        return Ok(before);
    }
    let len = match operand {
        Some((index, a)) => {
            let named = before.len() + after.len();
            if a.ndim() < named {
                return Err(Error::invalid(
                    op,
                    format!(
                        "Operand {index} with shape {} has insufficient dimensions for subscript '{subscript}'. \
                         The ellipsis requires at least {named} dimensions but the operand has {} dimensions.",
                        fmt_shape(a.shape()),
                        a.ndim()
                    ),
                ));
            }
            let len = a.ndim() - named;
            *longest = (*longest).max(len);
            len
        }
        None => *longest,
    };
    if len > spare.len() {
        return Err(Error::invalid(op, "Too many dimensions under the ellipsis: not enough unused letters."));
    }
    let mut term = before;
    term.extend_from_slice(&spare[spare.len() - len..]);
    term.extend(after);
    Ok(term)
}

/// A pair of terms the greedy search may contract next; it prefers the
/// pair that removes the most elements, then the cheapest, then the one
/// found first (opt_einsum's greedy rule).
struct Candidate {
    removed: i128,
    cost: usize,
    output: BTreeSet<char>,
    dims: usize,
    x: usize,
    y: usize,
}

/// opt_einsum's greedy contraction order over `inputs`, as MLX runs it.
fn greedy_path(
    mut inputs: Vec<Term>,
    output: &Term,
    dims: &BTreeMap<char, usize>,
    cost_limit: usize,
    memory_limit: usize,
) -> (Vec<Step>, usize, usize) {
    let mut pairs: Vec<(usize, usize)> =
        (0..inputs.len()).flat_map(|i| (i + 1..inputs.len()).map(move |j| (i, j))).collect();
    let mut steps = Vec::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    let (mut path_cost, mut path_scaling) = (0usize, 0usize);
    let n = inputs.len();
    for _ in 0..n - 1 {
        let consider = |p1: usize, p2: usize, inputs: &[Term], candidates: &mut Vec<Candidate>, path_cost: usize| {
            let letters: BTreeSet<char> = inputs[p1].iter().chain(&inputs[p2]).copied().collect();
            let kept: BTreeSet<char> = inputs
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != p1 && i != p2)
                .flat_map(|(_, t)| t.iter())
                .chain(output.iter())
                .filter(|c| letters.contains(c))
                .copied()
                .collect();
            let new_size = term_size(&kept, dims);
            if new_size > memory_limit {
                return;
            }
            let removed = term_size(&set(&inputs[p1]), dims) as i128 + term_size(&set(&inputs[p2]), dims) as i128
                - new_size as i128;
            let cost = flop_count(&letters, letters.len() > kept.len(), 2, dims);
            if path_cost.saturating_add(cost) > cost_limit {
                return;
            }
            candidates.push(Candidate { removed, cost, output: kept, dims: letters.len(), x: p1, y: p2 });
        };
        for &(p1, p2) in &pairs {
            if !set(&inputs[p1]).is_disjoint(&set(&inputs[p2])) {
                consider(p1, p2, &inputs, &mut candidates, path_cost);
            }
        }
        if candidates.is_empty() {
            for &(p1, p2) in &pairs {
                consider(p1, p2, &inputs, &mut candidates, path_cost);
            }
        }
        if candidates.is_empty() {
            // Nothing pays off: one product of everything that is left.
            let (cost, scaling) = cost_and_scaling(&inputs, output, dims);
            let positions = (0..inputs.len()).collect();
            steps.push(Step { inputs, positions, output: output.clone() });
            path_cost = path_cost.saturating_add(cost);
            path_scaling = path_scaling.max(scaling);
            break;
        }
        let mut best = 0;
        for (i, c) in candidates.iter().enumerate() {
            let b = &candidates[best];
            if c.removed > b.removed || (c.removed == b.removed && c.cost < b.cost) {
                best = i;
            }
        }
        let best = candidates.remove(best);
        path_scaling = path_scaling.max(best.dims);
        let mut new_term: Term = best.output.iter().copied().collect();
        new_term.sort_by_key(|c| dims[c]);
        let (x, y) = (best.x, best.y);
        let term_y = inputs.remove(y);
        let term_x = inputs.remove(x);
        steps.push(Step { inputs: vec![term_x, term_y], positions: vec![x, y], output: new_term.clone() });
        inputs.push(new_term);
        candidates.retain(|c| c.x != x && c.x != y && c.y != x && c.y != y);
        for c in &mut candidates {
            c.x -= usize::from(c.x > x) + usize::from(c.x > y);
            c.y -= usize::from(c.y > x) + usize::from(c.y > y);
        }
        let last = inputs.len() - 1;
        pairs = (0..last).map(|i| (i, last)).collect();
        path_cost = path_cost.saturating_add(best.cost);
    }
    (steps, path_cost, path_scaling)
}

/// Parses and checks `subscripts` against `operands` and plans the steps.
fn plan(op: &'static str, subscripts: &str, operands: &[Array]) -> Result<Plan> {
    if operands.is_empty() {
        return Err(Error::invalid(op, "At least one operand is required."));
    }
    let (in_subscripts, out_subscript) = parse(subscripts);
    if in_subscripts.len() != operands.len() {
        return Err(Error::invalid(
            op,
            format!(
                "Number of operands, {}, does not match number of input subscripts, {}",
                operands.len(),
                in_subscripts.len()
            ),
        ));
    }
    let used: BTreeSet<char> = subscripts.chars().collect();
    let spare: Vec<char> = ('a'..='z').chain('A'..='Z').filter(|c| !used.contains(c)).collect();
    let mut longest = 0;
    let inputs = in_subscripts
        .iter()
        .zip(operands)
        .enumerate()
        .map(|(i, (s, a))| expand_ellipsis(op, s, Some((i, a)), &spare, &mut longest))
        .collect::<Result<Vec<Term>>>()?;
    let output = expand_ellipsis(op, &out_subscript, None, &spare, &mut longest)?;
    if set(&output).len() != output.len() {
        return Err(Error::invalid(op, "Repeat indices not allowed in output."));
    }
    let mut dims: BTreeMap<char, usize> = BTreeMap::new();
    for (i, (term, a)) in inputs.iter().zip(operands).enumerate() {
        if term.len() != a.ndim() {
            return Err(Error::invalid(
                op,
                format!("Invalid number of subscripts {} for input {i} with {} dimensions.", term.len(), a.ndim()),
            ));
        }
        let mut local: BTreeMap<char, usize> = BTreeMap::new();
        for (&c, &d) in term.iter().zip(a.shape()) {
            let first = *local.entry(c).or_insert(d);
            if first != d {
                return Err(Error::invalid(
                    op,
                    format!("Dimensions of repeated subscripts do not have the same size ({first} != {d})."),
                ));
            }
        }
        for (j, (&c, &d)) in term.iter().zip(a.shape()).enumerate() {
            let known = dims.entry(c).or_insert(d);
            if d != 1 && *known != 1 && *known != d {
                return Err(Error::invalid(
                    op,
                    format!(
                        "Cannot broadcast dimension {j} of input {i} with shape {} to size {known}.",
                        fmt_shape(a.shape())
                    ),
                ));
            }
            *known = (*known).max(d);
        }
    }
    if let Some(c) = output.iter().find(|c| !dims.contains_key(c)) {
        return Err(Error::invalid(op, format!("Output subscript '{c}' does not appear in any input.")));
    }
    let max_size = inputs.iter().map(|t| term_size(t, &dims)).fold(term_size(&output, &dims), usize::max);
    let naive = cost_and_scaling(&inputs, &output, &dims);
    if inputs.len() <= 2 {
        let positions = (0..inputs.len()).collect();
        return Ok(Plan { steps: vec![Step { inputs, positions, output }], naive, optimized: naive });
    }
    let (mut steps, cost, scaling) = greedy_path(inputs, &output, &dims, naive.0, max_size);
    if let Some(last) = steps.last_mut() {
        last.output = output;
    }
    Ok(Plan { steps, naive, optimized: (cost, scaling) })
}

/// MLX's `einsum_path`: the contraction order [`einsum`] would follow for
/// these subscripts and operands, and a report of its cost.
pub fn einsum_path(subscripts: &str, operands: &[Array]) -> Result<EinsumPath> {
    let plan = plan("einsum_path", subscripts, operands)?;
    let report = format!(
        "  Complete contraction:  {subscripts}\n         Naive scaling:  {}\n     Optimized scaling:  {}\n      \
         Naive FLOP count:  {}\n  Optimized FLOP count:  {}\n",
        plan.naive.1, plan.optimized.1, plan.naive.0, plan.optimized.0
    );
    Ok(EinsumPath { steps: plan.steps.into_iter().map(|s| s.positions).collect(), report })
}

/// `a` with each repeated letter of `term` reduced to its diagonal (which
/// goes last); `term` is updated to match.
fn collapse_repeats(mut a: Array, term: &mut Term) -> Result<Array> {
    while let Some((i, j)) =
        (0..term.len()).find_map(|i| (i + 1..term.len()).find(|&j| term[j] == term[i]).map(|j| (i, j)))
    {
        a = diagonal(&a, 0, i as isize, j as isize)?;
        let c = term[i];
        term.remove(j);
        term.remove(i);
        term.push(c);
    }
    Ok(a)
}

/// Collapses repeated letters and sums the letters that occur in one
/// input of the step only (and not in its output).
fn preprocess(step: &mut Step, operands: &mut [Array]) -> Result<()> {
    for (term, &pos) in step.inputs.iter_mut().zip(&step.positions) {
        if set(term).len() < term.len() {
            operands[pos] = collapse_repeats(operands[pos].clone(), term)?;
        }
    }
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    for c in step.inputs.iter().flat_map(|t| set(t)).chain(set(&step.output)) {
        *counts.entry(c).or_default() += 1;
    }
    for (term, &pos) in step.inputs.iter_mut().zip(&step.positions) {
        let axes: Vec<isize> = (0..term.len()).filter(|&i| counts[&term[i]] == 1).map(|i| i as isize).collect();
        if !axes.is_empty() {
            operands[pos] = sum(&operands[pos], Some(&axes), false)?;
            term.retain(|c| counts[c] != 1);
        }
    }
    Ok(())
}

/// Whether the (preprocessed) step is a batched product with a contraction.
fn can_dot(step: &Step) -> bool {
    step.inputs.len() == 2 && step.inputs[0].iter().any(|c| !step.output.contains(c))
}

/// `x` with its axes reordered to `groups` (concatenated) and all but the
/// first group's axes merged into one axis per remaining group.
fn group_axes(x: &Array, batch: &[usize], first: &[usize], second: &[usize]) -> Result<Array> {
    let order: Vec<isize> = batch.iter().chain(first).chain(second).map(|&i| i as isize).collect();
    let size = |axes: &[usize]| axes.iter().map(|&i| x.shape()[i]).product::<usize>();
    let mut shape: Vec<usize> = batch.iter().map(|&i| x.shape()[i]).collect();
    shape.extend([size(first), size(second)]);
    reshape_to(&transpose(x, Some(&order))?, shape)
}

/// A two-operand step as one batched matmul: batch letters, then `a`'s
/// free letters, then `b`'s, reordered to the step's output.
fn dot_step(step: &Step, a: &Array, b: &Array) -> Result<Array> {
    let (ta, tb, out) = (&step.inputs[0], &step.inputs[1], &step.output);
    let pos = |t: &Term, c: char| t.iter().position(|&x| x == c).expect("letter of the other term");
    let a_contract: Vec<usize> = (0..ta.len()).filter(|&i| !out.contains(&ta[i])).collect();
    let a_batch: Vec<usize> = (0..ta.len()).filter(|&i| out.contains(&ta[i]) && tb.contains(&ta[i])).collect();
    let a_free: Vec<usize> = (0..ta.len()).filter(|&i| out.contains(&ta[i]) && !tb.contains(&ta[i])).collect();
    let b_contract: Vec<usize> = a_contract.iter().map(|&i| pos(tb, ta[i])).collect();
    let b_batch: Vec<usize> = a_batch.iter().map(|&i| pos(tb, ta[i])).collect();
    let b_free: Vec<usize> = (0..tb.len()).filter(|&i| out.contains(&tb[i]) && !ta.contains(&tb[i])).collect();
    // Broadcast the shared axes (a size-1 axis pairs with any size).
    let (mut sa, mut sb) = (a.shape().to_vec(), b.shape().to_vec());
    for (&i, &j) in a_contract.iter().zip(&b_contract).chain(a_batch.iter().zip(&b_batch)) {
        let d = sa[i].max(sb[j]);
        (sa[i], sb[j]) = (d, d);
    }
    let (a, b) = (broadcast_to(a, &sa)?, broadcast_to(b, &sb)?);
    let mut out_shape: Vec<usize> = a_batch.iter().chain(&a_free).map(|&i| sa[i]).collect();
    out_shape.extend(b_free.iter().map(|&i| sb[i]));
    let product =
        matmul(&group_axes(&a, &a_batch, &a_free, &a_contract)?, &group_axes(&b, &b_batch, &b_contract, &b_free)?)?;
    let letters: Vec<char> =
        a_batch.iter().chain(&a_free).map(|&i| ta[i]).chain(b_free.iter().map(|&i| tb[i])).collect();
    let order: Vec<isize> = out.iter().map(|c| pos(&letters, *c) as isize).collect();
    transpose(&reshape_to(&product, out_shape)?, Some(&order))
}

/// A step as one broadcast product of its operands and a sum over the
/// letters that are not in its output.
fn product_step(step: &Step, operands: &[Array]) -> Result<Array> {
    let mut letters: Vec<char> = Vec::new();
    for c in step.inputs.iter().flatten() {
        if !letters.contains(c) {
            letters.push(*c);
        }
    }
    let mut product: Option<Array> = None;
    for (term, &pos) in step.inputs.iter().zip(&step.positions) {
        let a = &operands[pos];
        let mut shape = a.shape().to_vec();
        shape.resize(letters.len(), 1);
        let missing: Vec<char> = letters.iter().filter(|c| !term.contains(c)).copied().collect();
        let order: Vec<isize> = letters
            .iter()
            .map(|c| match term.iter().position(|x| x == c) {
                Some(i) => i as isize,
                None => (term.len() + missing.iter().position(|x| x == c).unwrap_or(0)) as isize,
            })
            .collect();
        let aligned = transpose(&reshape_to(a, shape)?, Some(&order))?;
        product = Some(match product {
            None => aligned,
            Some(p) => multiply(&p, &aligned)?,
        });
    }
    let product = product.expect("a step has at least one operand");
    let summed: Vec<usize> = (0..letters.len()).filter(|&i| !step.output.contains(&letters[i])).collect();
    let kept: Vec<char> = letters.iter().filter(|c| step.output.contains(c)).copied().collect();
    let reduced = if summed.is_empty() {
        product
    } else {
        let axes: Vec<isize> = summed.iter().map(|&i| i as isize).collect();
        sum(&product, Some(&axes), false)?
    };
    let order: Vec<isize> =
        step.output.iter().map(|c| kept.iter().position(|x| x == c).expect("output letter") as isize).collect();
    transpose(&reduced, Some(&order))
}

/// MLX's `einsum`: the Einstein summation of `operands` described by
/// `subscripts` (`"ij,jk->ik"`; implicit output, `...` and repeated
/// letters as in NumPy). Letters of size 1 broadcast.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[1f32, 2., 3., 4.], &[2, 2])?;
/// let trace = ops::einsum("ii", &[a.clone()])?;
/// assert_eq!(trace.to_vec::<f32>()?, vec![5.]);
/// let ab = ops::einsum("ij,jk->ik", &[a.clone(), a])?;
/// assert_eq!(ab.to_vec::<f32>()?, vec![7., 10., 15., 22.]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn einsum(subscripts: &str, operands: &[Array]) -> Result<Array> {
    let plan = plan("einsum", subscripts, operands)?;
    let mut list: Vec<Array> = operands.to_vec();
    for mut step in plan.steps {
        preprocess(&mut step, &mut list)?;
        let result = if can_dot(&step) {
            dot_step(&step, &list[step.positions[0]], &list[step.positions[1]])?
        } else {
            product_step(&step, &list)?
        };
        for &p in step.positions.iter().rev() {
            list.remove(p);
        }
        list.push(result);
    }
    Ok(list.pop().expect("einsum leaves one operand"))
}
