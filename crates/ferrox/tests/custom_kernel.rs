//! Custom CUDA kernels (`ops::custom_kernel`, MLX's `fast.cuda_kernel`):
//! the sources ferrox writes follow MLX's signature rules and compile with
//! NVRTC (no GPU needed; CI installs the `nvidia-cuda-nvrtc` wheel and sets
//! `FERROX_REQUIRE_NVRTC=1`); without a GPU stream the ops refuse with
//! errors naming them; the primitive has no derivative or batching rule and
//! cannot be exported. Running kernels is tested on a GPU by
//! python/tests/test_custom_kernel.py.
#![cfg(feature = "cuda")]

use ferrox::backend::cuda::{compiler, custom_kernel::compile_source};
use ferrox::backend::{expanded_source, KernelCode, KernelLaunch, ShapeInfo, PRELUDE_INCLUDE};
use ferrox::device::{with_stream, Device};
use ferrox::export::{trace_events, Kwargs};
use ferrox::ops::custom_kernel::{cuda_kernel, precompiled_cuda_kernel, CudaKernel, TemplateArg};
use ferrox::primitives::{CustomKernel, OutputSpec};
use ferrox::{device, jvp, ops, vjp, vmap, Array, Dtype, Error, Result};

const ARCH: &str = "sm_90";

/// Whether NVRTC can run here (a failure where CI requires it).
fn nvrtc_present() -> bool {
    match compiler::nvrtc_version() {
        Ok(_) => true,
        Err(why) => {
            assert!(std::env::var_os("FERROX_REQUIRE_NVRTC").is_none(), "NVRTC is required here: {why}");
            eprintln!("NVRTC not found, custom kernel compile check not run: {why}");
            false
        }
    }
}

/// Whether the cubin's string table holds `name` as a whole symbol name.
fn contains_symbol(cubin: &[u8], name: &str) -> bool {
    let needle: Vec<u8> = [&[0u8][..], name.as_bytes(), &[0u8][..]].concat();
    cubin.windows(needle.len()).any(|w| w == needle.as_slice())
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// An array of `dtype` and `shape` (only its dtype and rank matter to the source).
fn arg(dtype: Dtype, shape: &[usize]) -> Result<Array> {
    ops::zeros(shape, dtype)
}

fn kernel(name: &str, inputs: &[&str], outputs: &[&str], source: &str, header: &str) -> Result<CudaKernel> {
    cuda_kernel(name, &names(inputs), &names(outputs), source, header, true, 0)
}

/// Template arguments by name.
type Template = Vec<(String, TemplateArg)>;

/// One compile-check case: kernel, inputs, output dtypes and template.
type CompileCase = (CudaKernel, Vec<Array>, Vec<Dtype>, Template);

/// The message of an error result.
fn message<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("an error").to_string()
}

/// MLX's `test_custom_kernel_args`: four inputs (one 0-d), two outputs, and
/// a bool, an int and a dtype template argument.
fn args_kernel() -> Result<(CudaKernel, Vec<Array>, Template)> {
    let source = "
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = a[0];
        if (e) {
            out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
        } else {
            out1[elem] = 1;
        }
        out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
    ";
    let k = kernel("arg_test", &["a", "b", "c", "d"], &["out1", "out2"], source, "")?;
    let inputs =
        vec![arg(Dtype::F32, &[3, 6])?, arg(Dtype::I32, &[3])?, arg(Dtype::BF16, &[2, 2])?, arg(Dtype::F32, &[])?];
    let template = vec![
        ("e".to_string(), TemplateArg::Bool(true)),
        ("f".to_string(), TemplateArg::Int(3)),
        ("T".to_string(), TemplateArg::Dtype(Dtype::F16)),
    ];
    Ok((k, inputs, template))
}

#[test]
fn the_signature_follows_mlx() -> Result<()> {
    let (k, inputs, template) = args_kernel()?;
    let (name, source) = k.source_for(&inputs, &[Dtype::F32, Dtype::I32], &template)?;
    assert_eq!(name, "custom_kernel_arg_test_t_3_float16_t");
    assert!(source.starts_with(&format!("{PRELUDE_INCLUDE}\n")));
    let expected = "\
extern \"C\" __global__ void custom_kernel_arg_test_t_3_float16_t(
    const float* a,
    const int32_t* b,
    const __nv_bfloat16* c,
    const float* d,
    float* out1,
    int32_t* out2) {
  constexpr bool e = true;
  constexpr int f = 3;
  using T = __half;

";
    assert!(source.contains(expected), "{source}");
    assert!(source.trim_end().ends_with("}\n\n} // namespace ferrox::cu"));

    // Layout parameters for the names the body mentions, never for 0-d inputs.
    let k = kernel("lay", &["x", "s"], &["out"], "out[0] = x_strides[0] + x_ndim + s_shape[0];", "")?;
    let (_, source) = k.source_for(&[arg(Dtype::F64, &[2, 3])?, arg(Dtype::C64, &[])?], &[Dtype::Bool], &[])?;
    let expected = "\
    const double* x,
    const __grid_constant__ Strides x_strides,
    const __grid_constant__ int x_ndim,
    const ferrox::cu::complex64_t* s,
    bool* out) {
out[0] =";
    assert!(source.contains(expected), "{source}");

    // The header goes between the prelude and the kernel.
    let k = kernel("h", &["x"], &["y"], "y[0] = x[0];", "#define HEADER_MARK 1")?;
    let (_, source) = k.source_for(&[arg(Dtype::F32, &[1])?], &[Dtype::F32], &[])?;
    let (header, kernel_at) = (source.find("#define HEADER_MARK").unwrap(), source.find("__global__").unwrap());
    assert!(PRELUDE_INCLUDE.len() < header && header < kernel_at);

    // Negative int template arguments keep the kernel name an identifier.
    let (name, _) = k.source_for(&[arg(Dtype::F32, &[1])?], &[Dtype::F32], &[("n".into(), TemplateArg::Int(-3))])?;
    assert_eq!(name, "custom_kernel_h_n3");
    Ok(())
}

/// (kernel, inputs, output dtypes, template) of the kernels the compile
/// check builds: MLX's own tests of custom kernels, every dtype in and out,
/// and the prelude's helpers.
fn compile_cases() -> Result<Vec<CompileCase>> {
    let mut cases = Vec::new();
    let elem = "auto elem = cooperative_groups::this_grid().thread_rank();\n";
    cases.push((
        kernel("basic", &["a"], &["out1"], &format!("{elem}out1[elem] = a[elem];"), "")?,
        vec![arg(Dtype::F32, &[2, 2])?],
        vec![Dtype::F32],
        vec![],
    ));
    let (k, inputs, template) = args_kernel()?;
    cases.push((k, inputs, vec![Dtype::F32, Dtype::I32], template));
    let strided = format!(
        "{elem}auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
        T tmp = inp[loc];
        out[elem] = exp(tmp) * WARP_SIZE;"
    );
    cases.push((
        cuda_kernel("myexp", &names(&["inp"]), &names(&["out"]), &strided, "", false, 0)?,
        vec![arg(Dtype::F32, &[12, 6])?],
        vec![Dtype::F32],
        vec![("T".to_string(), TemplateArg::Dtype(Dtype::F32))],
    ));
    // A helper without __device__: MLX compiles with
    // --device-as-default-execution-space.
    let header = "template <typename T>\nT do_exp(T x) {\n    return exp(x);\n}\n";
    cases.push((
        kernel("helper", &["a"], &["out1"], &format!("{elem}out1[elem] = do_exp(a[elem]);"), header)?,
        vec![arg(Dtype::F32, &[2, 2])?],
        vec![Dtype::F32],
        vec![],
    ));
    cases.push((
        kernel("test_fun", &["a"], &["out"], "out[0] = blockDim.x;", "")?,
        vec![arg(Dtype::F32, &[1, 1])?],
        vec![Dtype::U32],
        vec![],
    ));
    for d in Dtype::ALL {
        cases.push((
            kernel("copy", &["x"], &["y"], &format!("{elem}y[elem] = x[elem];"), "")?,
            vec![arg(d, &[4])?],
            vec![d],
            vec![("T".to_string(), TemplateArg::Dtype(d))],
        ));
    }
    let helpers = "
        auto block = cg::this_thread_block();
        auto warp = cg::tiled_partition<32>(block);
        auto quad = cg::tiled_partition<4>(block);
        extern __shared__ float smem[];
        auto i = cg::this_grid().thread_rank();
        auto loc = elem_to_loc_nd<2>(i, x_shape.data(), x_strides.data());
        smem[block.thread_rank()] = x[loc];
        block.sync();
        cg::sync(warp);
        float total = cg::reduce(warp, smem[block.thread_rank()], cg::plus<float>());
        __half hi = cg::reduce(quad, __half(x[loc]), cg::greater<__half>());
        __nv_bfloat16 lo = cg::reduce(quad, __nv_bfloat16(x[loc]), cg::less<__nv_bfloat16>());
        if (warp.thread_rank() == 0) {
            atomicAdd(sum, total);
        }
        ferrox::cu::complex64_t z{float(hi), float(lo)};
        z = z * z + z / ferrox::cu::complex64_t(2.0f, 1.0f) - 1.0f;
        zs[i] = z;
        half_out[i] = warp.shfl_down(__half2float(hi), 1u) + quad.shfl(lo, 0) + warp.ballot(total > 0) + quad.all(1);
        long long wide = warp.shfl_xor((long long)i, 3u) + (int64_t)grid_size + (uint64_t)1;
        (void)wide;
    ";
    cases.push((
        kernel("helpers", &["x"], &["sum", "zs", "half_out"], helpers, "")?,
        vec![arg(Dtype::F32, &[8, 32])?],
        vec![Dtype::F32, Dtype::C64, Dtype::F16],
        vec![("grid_size".to_string(), TemplateArg::Int(256))],
    ));
    Ok(cases)
}

#[test]
fn generated_sources_compile_with_nvrtc() -> Result<()> {
    if !nvrtc_present() {
        return Ok(());
    }
    let mut failures = Vec::new();
    for (k, inputs, out_dtypes, template) in compile_cases()? {
        let (name, source) = k.source_for(&inputs, &out_dtypes, &template)?;
        match compile_source(&name, &source, ARCH) {
            Ok(cubin) if contains_symbol(&cubin, &name) => {}
            Ok(_) => failures.push(format!("{name}: the cubin has no kernel {name}")),
            Err(e) => failures.push(format!("{name}:\n{e}\n{source}")),
        }
    }
    // The oldest architecture CUDA 13 targets (bfloat16 without cvt.bf16).
    let (k, inputs, template) = args_kernel()?;
    let (name, source) = k.source_for(&inputs, &[Dtype::F32, Dtype::I32], &template)?;
    if let Err(e) = compile_source(&name, &source, "sm_75") {
        failures.push(format!("{name} for sm_75:\n{e}"));
    }
    assert!(failures.is_empty(), "{} custom kernels failed:\n{}", failures.len(), failures.join("\n\n"));
    Ok(())
}

#[test]
fn compile_errors_count_the_lines_of_the_generated_source() -> Result<()> {
    if !nvrtc_present() {
        return Ok(());
    }
    let k = kernel("bad", &["x"], &["y"], "y[0] = x[0];\n    y[1] = undefined_name;", "")?;
    let (name, source) = k.source_for(&[arg(Dtype::F32, &[2])?], &[Dtype::F32], &[])?;
    let line = source.lines().position(|l| l.contains("undefined_name")).unwrap() + 1;
    let log = compile_source(&name, &source, ARCH).expect_err("the body does not compile");
    assert!(
        log.contains(&format!("{name}.cu({line}): error")) && log.contains("undefined_name"),
        "line {line}:\n{log}"
    );
    // Without the prelude line the source is compiled as given.
    assert_eq!(expanded_source("k", "int x;"), "int x;");
    Ok(())
}

#[test]
fn kernels_refuse_the_cpu_and_bad_arguments() -> Result<()> {
    let cpu = device::default_stream(Device::CPU);
    let k = kernel("k", &["a", "b"], &["out"], "out[0] = a[0] + b[0];", "")?;
    let (a, b) = (arg(Dtype::F32, &[4])?, arg(Dtype::F32, &[4])?);
    let call = |inputs: &[Array], shapes: &[Vec<usize>], dtypes: &[Dtype], tg: [u32; 3]| {
        with_stream(cpu, || k.call(inputs, shapes, dtypes, [4, 1, 1], tg, &[], None))
    };
    let one = [vec![4]];
    let msg = message(call(&[a.clone(), b.clone()], &one, &[Dtype::F32], [4, 1, 1]));
    assert!(msg.starts_with("[custom_kernel] Only supports the GPU;"), "{msg}");
    assert_eq!(
        message(call(std::slice::from_ref(&a), &one, &[Dtype::F32], [4, 1, 1])),
        "[custom_kernel] Expected `inputs` to have size 2 but got size 1."
    );
    assert_eq!(
        message(call(&[a.clone(), b.clone()], &[vec![4], vec![4]], &[Dtype::F32], [4, 1, 1])),
        "[custom_kernel] Expected `output_shapes` to have size 1 but got size 2."
    );
    assert_eq!(
        message(call(&[a.clone(), b.clone()], &one, &[], [4, 1, 1])),
        "[custom_kernel] Expected `output_dtypes` to have size 1 but got size 0."
    );
    let msg = message(call(&[a.clone(), b.clone()], &one, &[Dtype::F32], [0, 1, 1]));
    assert!(msg.contains("threadgroup must be positive"), "{msg}");
    let msg =
        with_stream(cpu, || k.call(&[a.clone(), b.clone()], &one, &[Dtype::F32], [64, 64, 1], [64, 64, 1], &[], None));
    assert!(message(msg).contains("exceeds CUDA's limits"));
    let msg = with_stream(cpu, || {
        k.call(&[a.clone(), b.clone()], &one, &[Dtype::F32], [1, 1 << 20, 1], [1, 1, 1], &[], None)
    });
    assert!(message(msg).contains("65535 blocks"));

    assert_eq!(message(kernel("k", &["a"], &[], "", "")), "[custom_kernel] Must specify at least one output.");
    assert!(message(kernel("k", &["1a"], &["out"], "", "")).contains("\"1a\" is not a valid C++ identifier"));
    assert!(message(kernel("k", &["a"], &["a"], "", "")).contains("\"a\" is used twice"));
    assert!(message(kernel("my kernel", &["a"], &["b"], "", "")).contains("letters, digits and underscores"));
    let template = [("a".to_string(), TemplateArg::Int(1))];
    assert!(message(k.source_for(&[a.clone(), b.clone()], &[Dtype::F32], &template)).contains("used twice"));
    let deep = arg(Dtype::F32, &[1; 11])?;
    let k = kernel("k", &["a"], &["out"], "out[0] = a_shape[0];", "")?;
    assert!(message(k.source_for(&[deep], &[Dtype::F32], &[])).contains("at most 10"));

    let pre = |shapes: &[Vec<usize>], dtypes: &[Dtype]| {
        with_stream(cpu, || {
            precompiled_cuda_kernel("k", b"ptx", &[], shapes, dtypes, &[], [1, 1, 1], [1, 1, 1], 0, None, false)
        })
    };
    let msg = message(pre(&one, &[Dtype::F32]));
    assert!(msg.starts_with("[precompiled_cuda_kernel] Only supports the GPU;"), "{msg}");
    assert_eq!(
        message(pre(&one, &[Dtype::F32, Dtype::F32])),
        "[precompiled_cuda_kernel] Expected `output_dtypes` to have size 1 but got size 2."
    );
    assert!(message(pre(&[], &[])).contains("at least one output"));
    Ok(())
}

/// A custom kernel node over `x` (never runnable: its code is no module).
fn kernel_node(x: &Array) -> Result<Vec<Array>> {
    let kernel = CustomKernel {
        launch: KernelLaunch {
            name: "k".into(),
            code: KernelCode::Binary(b"k".to_vec()),
            grid: [1, 1, 1],
            threadgroup: [1, 1, 1],
            shape_infos: vec![ShapeInfo::default()],
            init_value: None,
            scalars: vec![],
            shared_memory: 0,
        },
        ensure_row_contiguous: true,
        input_dtypes: vec![x.dtype()],
        outputs: vec![OutputSpec { shape: vec![2], dtype: Dtype::F32 }],
    };
    Array::siblings_from_primitive(vec![OutputSpec { shape: vec![2], dtype: Dtype::F32 }], kernel, vec![x.clone()])
}

#[test]
fn custom_kernel_nodes_have_no_derivative_batching_or_export() -> Result<()> {
    let cpu = device::default_stream(Device::CPU);
    with_stream(cpu, || -> Result<()> {
        let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
        let ones = ops::ones(&[2], Dtype::F32)?;
        let err = vjp(|a| kernel_node(&a[0]), std::slice::from_ref(&x), std::slice::from_ref(&ones)).unwrap_err();
        assert_eq!(err.to_string(), "[Primitive::vjp] Not implemented for CustomKernel.");
        let err = jvp(|a| kernel_node(&a[0]), std::slice::from_ref(&x), std::slice::from_ref(&ones)).unwrap_err();
        assert_eq!(err.to_string(), "[Primitive::jvp] Not implemented for CustomKernel.");
        let batch = ops::ones(&[3, 2], Dtype::F32)?;
        let err = vmap(|a| kernel_node(&a[0]), &[batch], &[Some(0)], &[Some(0)]).unwrap_err();
        assert_eq!(err.to_string(), "[Primitive::vmap] Not implemented for CustomKernel.");
        let err = trace_events(
            &|a: &[Array], _: &Kwargs| kernel_node(&a[0]),
            std::slice::from_ref(&x),
            &Kwargs::new(),
            false,
        )
        .unwrap_err();
        assert!(err.to_string().contains("The primitive CustomKernel cannot be exported."), "{err}");
        let err = kernel_node(&x)?[0].eval().unwrap_err();
        assert!(matches!(&err, Error::Device { op: "custom_kernel", .. }), "{err}");
        assert!(err.to_string().contains("only run on the GPU"));
        Ok(())
    })
}
