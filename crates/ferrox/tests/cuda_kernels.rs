//! Every CUDA kernel must compile with NVRTC, and every (op, dtype) pair of
//! the op tables must have its kernels. This needs NVRTC but no GPU: CI
//! installs the `nvidia-cuda-nvrtc` wheel and sets `FERROX_REQUIRE_NVRTC=1`,
//! so that a broken or missing kernel fails the build there.
#![cfg(feature = "cuda")]

use ferrox::backend::cuda::compiler;
use ferrox::backend::cuda::kernels::{self, Family, Module};
use ferrox::backend::{BinaryOp, ScanOp, UnaryOp};
use ferrox::Dtype;

/// Whether NVRTC can run here (a failure where CI requires it).
fn nvrtc_present() -> bool {
    match compiler::nvrtc_version() {
        Ok(_) => true,
        Err(why) => {
            assert!(std::env::var_os("FERROX_REQUIRE_NVRTC").is_none(), "NVRTC is required here: {why}");
            eprintln!("NVRTC not found, kernel compile check not run: {why}");
            false
        }
    }
}

/// Compiles (name, source, expected kernel names) units for sm_90a (Hopper
/// with its warpgroup instructions, so the wgmma kernels compile too) on
/// two threads (NVRTC is thread-safe and CI machines have two cores);
/// returns the failures, including kernels missing from a cubin.
fn compile_units(units: &[(String, String, Vec<String>)]) -> Vec<String> {
    let check = |part: &[(String, String, Vec<String>)]| -> Vec<String> {
        part.iter()
            .flat_map(|(name, src, kernels)| match compiler::compile(name, src, "sm_90a") {
                Err(e) => vec![e],
                Ok(cubin) => kernels
                    .iter()
                    .filter(|k| !contains_symbol(&cubin, k))
                    .map(|k| format!("module {name} has no kernel {k}"))
                    .collect(),
            })
            .collect()
    };
    let (left, right) = units.split_at(units.len() / 2);
    std::thread::scope(|s| {
        let a = s.spawn(|| check(left));
        let b = s.spawn(|| check(right));
        let mut e = a.join().expect("compile thread");
        e.extend(b.join().expect("compile thread"));
        e
    })
}

/// Whether the cubin's string table holds `name` as a whole symbol name.
fn contains_symbol(cubin: &[u8], name: &str) -> bool {
    let needle: Vec<u8> = [&[0u8][..], name.as_bytes(), &[0u8][..]].concat();
    cubin.windows(needle.len()).any(|w| w == needle.as_slice())
}

#[test]
fn every_family_module_compiles_with_nvrtc() {
    if !nvrtc_present() {
        return;
    }
    let units: Vec<_> = Family::ALL
        .iter()
        .flat_map(|&f| Dtype::ALL.iter().map(move |&d| Module::Family(f, d)))
        .map(|m| (m.name(), m.source(), m.kernel_names()))
        .collect();
    let errors = compile_units(&units);
    assert!(errors.is_empty(), "{} kernel modules failed:\n{}", errors.len(), errors.join("\n\n"));
}

#[test]
fn every_op_table_kernel_exists_for_every_dtype_it_computes_in() {
    if !nvrtc_present() {
        return;
    }
    let errors = compile_units(&kernels::op_table_check_modules());
    assert!(errors.is_empty(), "{} op-table kernels failed:\n{}", errors.len(), errors.join("\n\n"));
}

#[test]
fn one_op_modules_compile_alone() {
    if !nvrtc_present() {
        return;
    }
    let units: Vec<_> = [
        Module::Unary(UnaryOp::Exp, Dtype::BF16),
        Module::Unary(UnaryOp::Isnan, Dtype::C64),
        Module::Binary(BinaryOp::Less, Dtype::U8),
        Module::Binary(BinaryOp::Add, Dtype::F32),
        Module::Scan(ScanOp::Sum, Dtype::Bool),
        Module::Scan(ScanOp::LogAddExp, Dtype::C64),
        Module::Scan(ScanOp::Max, Dtype::BF16),
    ]
    .into_iter()
    .map(|m| (m.name(), m.source(), m.kernel_names()))
    .collect();
    let errors = compile_units(&units);
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

#[test]
fn module_names_and_sources_follow_the_tables() {
    let m = Module::Unary(UnaryOp::Exp, Dtype::BF16);
    assert_eq!(m.name(), "unary_exp_bf16");
    assert!(m.source().starts_with("#define FX_DTYPE_BF16 1\n"));
    assert!(m.source().ends_with("FX_UNARY(exp, OpExp, FxLift1, T)\n\n"));
    assert_eq!(m.kernel_names(), ["exp_contig", "exp_strided"]);
    let b = Module::Binary(BinaryOp::Equal, Dtype::I32);
    assert!(b.source().contains("FX_BINARY(equal, FxCmp, OpEqual, fx_bool)"));
    // Every op of the tables has kernels for at least one dtype, and
    // exactly for the dtypes it computes in.
    for &op in UnaryOp::ALL {
        assert!(kernels::unary_kernel_dtypes(op).count() > 0, "{}", op.name());
    }
    assert!(kernels::unary_kernel_dtypes(UnaryOp::Exp).all(|d| d.is_inexact()));
    assert!(!kernels::binary_kernel_dtypes(BinaryOp::LeftShift).any(|d| d == Dtype::Bool));
}

/// One program per dtype using every unary and binary op that computes in
/// it, comparisons feeding a `where`, and casts to every other real dtype.
fn fused_check_program(d: Dtype) -> ferrox::backend::fused::FusedProgram {
    use ferrox::backend::fused::{FusedOp, FusedProgram, FusedStep, Operand};
    let mut steps = Vec::new();
    let (x, y, c) = (Operand::Input(0), Operand::Input(1), Operand::Input(2));
    for op in UnaryOp::ALL.iter().copied().filter(|op| op.kind().compute_dtype(d) == Some(d)) {
        steps.push(FusedStep { op: FusedOp::Unary(op), args: vec![x], dtype: op.kind().kernel_output(d) });
    }
    for op in BinaryOp::ALL.iter().copied().filter(|op| op.kind().compute_dtype(d) == Some(d)) {
        steps.push(FusedStep { op: FusedOp::Binary(op), args: vec![x, y], dtype: op.kind().kernel_output(d) });
    }
    steps.push(FusedStep { op: FusedOp::Select, args: vec![c, x, y], dtype: d });
    for &to in Dtype::ALL.iter().filter(|&&to| to != Dtype::C64) {
        steps.push(FusedStep { op: FusedOp::AsType, args: vec![Operand::Step(steps.len() - 1)], dtype: to });
    }
    let outputs = (0..steps.len()).collect();
    FusedProgram {
        inputs: vec![d, d, Dtype::Bool],
        steps,
        outputs,
        known_scalars: Vec::new(),
        broadcast_inputs: Vec::new(),
    }
}

#[test]
fn fused_kernels_compile_for_every_real_dtype() {
    use ferrox::backend::cuda::fused::{kernel_source, module_dtype, InputMode};
    if !nvrtc_present() {
        return;
    }
    let mut units = Vec::new();
    for &d in Dtype::ALL.iter().filter(|&&d| d != Dtype::C64) {
        let program = fused_check_program(d);
        assert_eq!(module_dtype(&program), Some(d), "{d}");
        let dense = [InputMode::Contiguous, InputMode::Row, InputMode::Scalar];
        let strided = [InputMode::Strided, InputMode::Contiguous, InputMode::Row];
        // A broadcast scalar second operand (division by a scalar has its own code).
        let scalar = [InputMode::Contiguous, InputMode::Scalar, InputMode::Scalar];
        units.push((format!("fused_vector_{d}"), kernel_source(&program, d, &dense, true), vec!["fx_fused".into()]));
        units.push((format!("fused_scalar_{d}"), kernel_source(&program, d, &scalar, true), vec!["fx_fused".into()]));
        // The same with the scalars known: written into the source.
        let mut known = program.clone();
        let two = 1u64 << (8 * d.size() - 2); // 2.0 for floats, a positive integer otherwise
        known.known_scalars = vec![None, Some(if d == Dtype::Bool { 1 } else { two }), Some(1)];
        let source = kernel_source(&known, d, &scalar, true);
        assert!(!source.contains("in1[0]") && !source.contains("in2[0]"), "{d}");
        units.push((format!("fused_literal_{d}"), source, vec!["fx_fused".into()]));
        units.push((
            format!("fused_strided_{d}"),
            kernel_source(&program, d, &strided, false),
            vec!["fx_fused".into()],
        ));
    }
    let errors = compile_units(&units);
    assert!(errors.is_empty(), "{} fused kernels failed:\n{}", errors.len(), errors.join("\n\n"));
}

#[test]
fn fused_reduction_kernels_compile_for_every_real_dtype() {
    use ferrox::backend::cuda::fused::InputMode;
    use ferrox::backend::cuda::fused_reduce::kernel_source;
    use ferrox::backend::ReduceOp;
    if !nvrtc_present() {
        return;
    }
    let ops = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];
    let kernels: Vec<String> = ["all", "rows", "cols"].iter().map(|k| format!("fx_fused_{k}")).collect();
    let mut units = Vec::new();
    for (i, &d) in Dtype::ALL.iter().filter(|&&d| d != Dtype::C64).enumerate() {
        // The check program's `where`, of the module dtype, is the one output.
        let mut program = fused_check_program(d);
        let select = program.steps.iter().position(|s| s.op == ferrox::backend::fused::FusedOp::Select);
        program.outputs = vec![select.expect("the program has a where")];
        let op = ops[i % ops.len()];
        let packed = [InputMode::Contiguous, InputMode::Row, InputMode::Scalar];
        let strided = [InputMode::Strided, InputMode::Scalar, InputMode::Contiguous];
        units.push((
            format!("fused_reduce_packed_{d}"),
            kernel_source(&program, d, &packed, true, op),
            kernels.clone(),
        ));
        units.push((
            format!("fused_reduce_strided_{d}"),
            kernel_source(&program, d, &strided, false, op),
            kernels.clone(),
        ));
    }
    let errors = compile_units(&units);
    assert!(errors.is_empty(), "{} fused reduction kernels failed:\n{}", errors.len(), errors.join("\n\n"));
}
