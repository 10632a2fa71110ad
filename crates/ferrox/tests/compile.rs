//! `compile`: traces are cached per signature, graphs are simplified and
//! fused, and compiled results equal uncompiled ones bit for bit.

use ferrox::backend::fused::{FusedOp, FusedProgram, FusedStep, Operand};
use ferrox::backend::{BinaryOp, UnaryOp};
use ferrox::primitives::{Fused, OutputSpec};
use ferrox::transforms::compile::{compile, CompiledFunction};
use ferrox::{ops, Array, Dtype, Result};

fn randn(shape: &[usize], seed: u64) -> Result<Array> {
    ops::random::normal(shape, Dtype::F32, None, None, Some(&ops::random::key(seed)?))
}

/// MLX's erf GELU: x * (1 + erf(x / sqrt 2)) / 2.
fn gelu(x: &Array) -> Result<Array> {
    let inner = ops::erf(&ops::divide(x, &Array::scalar(std::f32::consts::SQRT_2))?)?;
    let y = ops::multiply(x, &ops::add(&Array::scalar(1.0f32), &inner)?)?;
    ops::divide(&y, &Array::scalar(2.0f32))
}

fn gelu_compiled() -> CompiledFunction {
    compile(|xs| Ok(vec![gelu(&xs[0])?]), false)
}

#[test]
fn compiled_gelu_equals_eager_bit_for_bit() -> Result<()> {
    let f = gelu_compiled();
    for shape in [vec![], vec![0], vec![7], vec![3, 5000], vec![2, 3, 4]] {
        let x = randn(&shape, 1)?;
        let got = f.call(std::slice::from_ref(&x))?[0].to_vec::<f32>()?;
        let want = gelu(&x)?.to_vec::<f32>()?;
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
    let stats = f.stats();
    assert_eq!((stats.misses, stats.hits, stats.entries), (5, 0, 5));
    Ok(())
}

#[test]
fn the_cache_hits_on_the_same_signature_and_retraces_on_a_new_one() -> Result<()> {
    let f = gelu_compiled();
    let x = randn(&[4, 4], 2)?;
    f.call(std::slice::from_ref(&x))?;
    f.call(&[randn(&[4, 4], 3)?])?;
    assert_eq!((f.stats().misses, f.stats().hits), (1, 1));
    f.call(&[ops::astype(&x, Dtype::F64)?])?; // new dtype
    f.call(&[randn(&[4, 5], 4)?])?; // new shape
    assert_eq!((f.stats().misses, f.stats().hits), (3, 1));
    f.call_keyed(std::slice::from_ref(&x), "other")?; // new key
    assert_eq!(f.stats().misses, 4);
    f.clear_cache();
    assert_eq!(f.stats().entries, 0);
    Ok(())
}

#[test]
fn shapeless_reuses_one_trace_across_shapes() -> Result<()> {
    let f = compile(|xs| Ok(vec![ops::add(&ops::exp(&xs[0])?, &xs[1])?]), true);
    for n in [3usize, 10, 1] {
        let (x, y) = (randn(&[2, n], 5)?, randn(&[n], 6)?);
        let got = f.call(&[x.clone(), y.clone()])?[0].to_vec::<f32>()?;
        assert_eq!(got, ops::add(&ops::exp(&x)?, &y)?.to_vec::<f32>()?);
    }
    assert_eq!((f.stats().misses, f.stats().hits), (1, 2));
    Ok(())
}

#[test]
fn shapeless_refuses_shape_dependent_graphs() -> Result<()> {
    // A reshape to a fixed shape keeps it: other sizes are refused when replayed.
    let f = compile(|xs| Ok(vec![ops::reshape(&xs[0], &[6])?]), true);
    assert_eq!(f.call(&[randn(&[2, 3], 7)?])?[0].shape(), &[6]);
    let err = f.call(&[randn(&[2, 4], 7)?]).unwrap_err().to_string();
    assert!(err.contains("shapeless"), "{err}");
    // One inferring its extent (-1) re-derives it, as MLX's.
    let flat = compile(|xs| Ok(vec![ops::reshape(&xs[0], &[-1])?]), true);
    assert_eq!(flat.call(&[randn(&[2, 3], 7)?])?[0].shape(), &[6]);
    assert_eq!(flat.call(&[randn(&[2, 4], 7)?])?[0].shape(), &[8]);
    // A slice's window holds the traced shape: refused when traced.
    let g = compile(
        |xs| Ok(vec![ops::index(&xs[0], &[ops::Index::Slice { start: Some(1), stop: None, step: None }])?]),
        true,
    );
    let err = g.call(&[randn(&[3], 8)?]).unwrap_err().to_string();
    assert!(err.contains("shapeless"), "{err}");
    Ok(())
}

#[test]
fn common_subexpressions_merge_and_chains_fuse() -> Result<()> {
    let f = compile(|xs| Ok(vec![ops::add(&ops::exp(&xs[0])?, &ops::exp(&xs[0])?)?]), false);
    let x = randn(&[8], 8)?;
    assert_eq!(f.graph(std::slice::from_ref(&x), "", false)?, vec!["exp", "add"]);
    let fused = f.graph(std::slice::from_ref(&x), "", true)?;
    assert_eq!(fused.len(), 1);
    assert!(fused[0].starts_with("Compiled[exp(in0)"), "{fused:?}");
    let got = f.call(std::slice::from_ref(&x))?[0].to_vec::<f32>()?;
    let e = ops::exp(&x)?;
    assert_eq!(got, ops::add(&e, &e)?.to_vec::<f32>()?);
    Ok(())
}

#[test]
fn scalar_constants_are_known_to_the_fused_program() -> Result<()> {
    // x * 2 + 1: the two Python-scalar-like constants are one-element
    // arrays the fused program records by value (CUDA writes them into
    // the kernel); the result is the eager one.
    let f = compile(
        |xs| Ok(vec![ops::add(&ops::multiply(&xs[0], &Array::scalar(2.0f32))?, &Array::scalar(1.0f32))?]),
        false,
    );
    let x = randn(&[5, 3], 11)?;
    let graph = f.graph(std::slice::from_ref(&x), "", true)?;
    assert_eq!(graph.len(), 1, "{graph:?}");
    assert!(graph[0].contains(" = 0x40000000") && graph[0].contains(" = 0x3f800000"), "{graph:?}");
    let want = ops::add(&ops::multiply(&x, &Array::scalar(2.0f32))?, &Array::scalar(1.0f32))?;
    assert_eq!(f.call(std::slice::from_ref(&x))?[0].to_vec::<f32>()?, want.to_vec::<f32>()?);
    Ok(())
}

#[test]
fn a_member_read_outside_its_group_becomes_an_output() -> Result<()> {
    // exp(x) is read by the chain and returned: the fused node has two outputs.
    let f = compile(
        |xs| {
            let e = ops::exp(&xs[0])?;
            let y = ops::multiply(&ops::sin(&e)?, &xs[1])?;
            Ok(vec![y, e])
        },
        false,
    );
    let (x, w) = (randn(&[3, 4], 9)?, randn(&[4], 10)?);
    let out = f.call(&[x.clone(), w.clone()])?;
    let e = ops::exp(&x)?;
    assert_eq!(out[0].to_vec::<f32>()?, ops::multiply(&ops::sin(&e)?, &w)?.to_vec::<f32>()?);
    assert_eq!(out[1].to_vec::<f32>()?, e.to_vec::<f32>()?);
    let graph = f.graph(&[x, w], "", true)?;
    assert_eq!(graph.len(), 1, "{graph:?}");
    assert!(graph[0].starts_with("Compiled[exp(in0)"), "{graph:?}");
    Ok(())
}

#[test]
fn grad_of_compiled_and_compiled_grad_match_eager() -> Result<()> {
    let loss = |x: &Array| ops::sum(&gelu(x)?, None, false);
    let x = randn(&[5, 6], 11)?;
    let want =
        ferrox::value_and_grad(|xs| Ok(vec![loss(&xs[0])?]), std::slice::from_ref(&x), &[0])?.1[0].to_vec::<f32>()?;
    let f = compile(move |xs| Ok(vec![loss(&xs[0])?]), false);
    let got = ferrox::value_and_grad(|xs| f.call(xs), std::slice::from_ref(&x), &[0])?.1[0].to_vec::<f32>()?;
    assert_eq!(got, want);
    let g = compile(move |xs| Ok(ferrox::value_and_grad(|ys| Ok(vec![loss(&ys[0])?]), xs, &[0])?.1), false);
    assert_eq!(g.call(std::slice::from_ref(&x))?[0].to_vec::<f32>()?, want);
    assert_eq!(g.call(&[x])?[0].to_vec::<f32>()?, want);
    assert_eq!(g.stats().hits, 1);
    Ok(())
}

#[test]
fn vmap_of_compiled_matches_eager() -> Result<()> {
    let f = gelu_compiled();
    let x = randn(&[3, 7], 12)?;
    let got = ferrox::vmap(|xs| f.call(xs), std::slice::from_ref(&x), &[Some(1)], &[Some(0)])?;
    let want = ops::transpose(&gelu(&x)?, None)?;
    assert_eq!(got[0].to_vec::<f32>()?, ops::contiguous(&want, false)?.to_vec::<f32>()?);
    Ok(())
}

#[test]
fn evaluating_inside_a_trace_is_an_error() -> Result<()> {
    let f = compile(|xs| Ok(vec![Array::scalar(xs[0].item::<f32>()?)]), false);
    let err = f.call(&[Array::scalar(1.0f32)]).unwrap_err().to_string();
    assert!(err.contains("Attempting to eval an array"), "{err}");
    Ok(())
}

/// `tanh(x) * w + cast(i)`: broadcast inputs, a cast and a comparison into `where`.
fn sample_program() -> FusedProgram {
    let step = |op, args: Vec<Operand>, dtype| FusedStep { op, args, dtype };
    FusedProgram {
        inputs: vec![Dtype::F32, Dtype::F32, Dtype::I32],
        steps: vec![
            step(FusedOp::Unary(UnaryOp::Tanh), vec![Operand::Input(0)], Dtype::F32),
            step(FusedOp::Binary(BinaryOp::Multiply), vec![Operand::Step(0), Operand::Input(1)], Dtype::F32),
            step(FusedOp::AsType, vec![Operand::Input(2)], Dtype::F32),
            step(FusedOp::Binary(BinaryOp::Add), vec![Operand::Step(1), Operand::Step(2)], Dtype::F32),
            step(FusedOp::Binary(BinaryOp::Greater), vec![Operand::Step(3), Operand::Input(1)], Dtype::Bool),
            step(FusedOp::Select, vec![Operand::Step(4), Operand::Step(3), Operand::Input(0)], Dtype::F32),
        ],
        outputs: vec![5, 4],
        known_scalars: Vec::new(),
        broadcast_inputs: Vec::new(),
    }
}

fn fused_node(xs: &[Array]) -> Result<Vec<Array>> {
    let fused = Fused(sample_program());
    let specs: Vec<OutputSpec> = ferrox::primitives::Primitive::output_specs(&fused, xs)?;
    Array::siblings_from_primitive(specs, fused, xs.to_vec())
}

fn sample_inputs() -> Result<Vec<Array>> {
    // A transposed view, a broadcast row and a broadcast column.
    let x = ops::transpose(&randn(&[300, 40], 14)?, None)?;
    let w = randn(&[300], 15)?;
    let i = ops::astype(&ops::multiply(&randn(&[40, 1], 16)?, &Array::scalar(3.0f32))?, Dtype::I32)?;
    Ok(vec![x, w, i])
}

#[test]
fn fused_programs_match_their_unfused_steps() -> Result<()> {
    let xs = sample_inputs()?;
    let fused = fused_node(&xs)?;
    let plain = Fused(sample_program()).unfused(&xs)?;
    assert_eq!(fused[0].shape(), &[40, 300]);
    assert_eq!(fused[0].to_vec::<f32>()?, plain[0].to_vec::<f32>()?);
    assert_eq!(fused[1].to_vec::<bool>()?, plain[1].to_vec::<bool>()?);
    Ok(())
}

#[test]
fn fused_nodes_differentiate_and_batch_like_their_steps() -> Result<()> {
    let xs = sample_inputs()?;
    let cot = vec![randn(&[40, 300], 17)?, ops::zeros(&[40, 300], Dtype::Bool)?];
    let (_, got) = ferrox::vjp(fused_node, &xs, &cot)?;
    let (_, want) = ferrox::vjp(|v| Fused(sample_program()).unfused(v), &xs, &cot)?;
    for (g, w) in got.iter().zip(&want).take(2) {
        assert_eq!(g.to_vec::<f32>()?, w.to_vec::<f32>()?);
    }
    let tans = vec![randn(&[40, 300], 18)?, randn(&[300], 19)?, ops::zeros(&[40, 1], Dtype::I32)?];
    let (_, got) = ferrox::jvp(fused_node, &xs, &tans)?;
    let (_, want) = ferrox::jvp(|v| Fused(sample_program()).unfused(v), &xs, &tans)?;
    assert_eq!(got[0].to_vec::<f32>()?, want[0].to_vec::<f32>()?);
    let batched = ferrox::vmap(fused_node, &xs, &[Some(0), None, Some(0)], &[Some(0)])?;
    let want = Fused(sample_program()).unfused(&xs)?;
    assert_eq!(batched[0].to_vec::<f32>()?, want[0].to_vec::<f32>()?);
    Ok(())
}

#[test]
fn graph_replay_runs_the_whole_graph_as_one_node() -> Result<()> {
    use ferrox::transforms::compile::{graph_replay, set_graph_replay, GraphReplay};
    let previous = set_graph_replay(GraphReplay::Always);
    assert_eq!(graph_replay(), GraphReplay::Always);
    let k = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
    let kc = k.clone();
    let f = move |xs: &[Array]| -> Result<Vec<Array>> {
        let s = ops::sum(&ops::multiply(&xs[0], &xs[0])?, None, false)?;
        Ok(vec![ops::add(&gelu(&xs[0])?, &kc)?, s, xs[0].clone(), kc.clone()])
    };
    let c = compile(f.clone(), false);
    for seed in 0..3 {
        let x = randn(&[3], seed)?;
        let (got, want) = (c.call(std::slice::from_ref(&x))?, f(std::slice::from_ref(&x))?);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.to_vec::<f32>()?, w.to_vec::<f32>()?);
        }
    }
    // The CPU runs the graph op by op: nothing is captured.
    let stats = c.stats();
    assert_eq!((stats.misses, stats.hits, stats.graphs_captured, stats.graph_launches), (1, 2, 0, 0));
    set_graph_replay(previous);
    Ok(())
}
