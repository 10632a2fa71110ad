//! Exported functions through the Rust API, and the primitive identity
//! (tags, parameters, equivalence, output shapes) that export relies on.

use ferrox::export::{self, Exporter, Kwargs};
use ferrox::primitives::{decode, Arange, Eye, Full, Primitive, PrimitiveIdentity, Reduce, Unary, TAGS};
use ferrox::{ops, Array, Dtype, Scalar};

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ferrox-export-test-{}-{name}", std::process::id()))
}

fn same(a: &Array, b: &Array) -> ferrox::Result<bool> {
    Ok(a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_host()?.bytes() == b.to_host()?.bytes())
}

#[test]
fn export_import_with_positional_and_keyword_arguments() -> ferrox::Result<()> {
    let path = temp("kw");
    let w = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
    let w2 = w.clone();
    let fun = Box::new(move |args: &[Array], kw: &Kwargs| {
        let y = ops::matmul(&args[0], &w2)?;
        Ok(vec![ops::add(&y, &kw["bias"])?, ops::sum(&y, None, false)?])
    });
    let x = Array::from_slice(&[1.0f32, 0.0, -1.0, 2.0, 2.0, 2.0], &[2, 3])?;
    let mut kwargs = Kwargs::new();
    kwargs.insert("bias".into(), Array::from_slice(&[0.5f32, -0.5], &[2])?);
    export::export_function(&path, fun, std::slice::from_ref(&x), &kwargs, false, "meta")?;
    let imported = export::import_function(&path)?;
    assert_eq!(imported.metadata(), "meta");
    let got = imported.call(std::slice::from_ref(&x), &kwargs)?;
    let y = ops::matmul(&x, &w)?;
    assert!(same(&got[0], &ops::add(&y, &kwargs["bias"])?)?);
    assert!(same(&got[1], &ops::sum(&y, None, false)?)?);
    // Another shape matches no trace.
    assert!(imported.call(&[ops::zeros(&[3, 3], Dtype::F32)?], &kwargs).is_err());
    std::fs::remove_file(&path).ok();
    Ok(())
}

#[test]
fn exporter_traces_share_constants_and_refuse_after_close() -> ferrox::Result<()> {
    let path = temp("multi");
    let c = ops::ones(&[64, 64], Dtype::F32)?;
    c.eval()?;
    let fun = Box::new(move |args: &[Array], _: &Kwargs| {
        let mut out = c.clone();
        for a in args {
            out = ops::add(&out, a)?;
        }
        Ok(vec![out])
    });
    let mut exporter = Exporter::new(&path, fun, true, "");
    exporter.trace(&[], &Kwargs::new())?;
    exporter.trace(&[Array::scalar(1.0f32)], &Kwargs::new())?;
    exporter.close()?;
    assert!(exporter.trace(&[Array::scalar(1.0f32), Array::scalar(1.0f32)], &Kwargs::new()).is_err());
    assert!(std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) < 64 * 64 * 4 + 4096);
    let imported = export::import_function(&path)?;
    let out = imported.call(&[Array::scalar(2.0f32)], &Kwargs::new())?;
    assert_eq!(out[0].to_vec::<f32>()?[0], 3.0);
    std::fs::remove_file(&path).ok();
    Ok(())
}

#[test]
fn every_tag_decodes_its_own_parameters() -> ferrox::Result<()> {
    let samples: Vec<Box<dyn Primitive>> = vec![
        Box::new(Full(Scalar::Float(1.5))),
        Box::new(Arange { start: -1.0, step: 0.5 }),
        Box::new(Eye { k: -2 }),
        Box::new(Unary(ferrox::backend::UnaryOp::Sin)),
        Box::new(Reduce { op: ferrox::backend::ReduceOp::Max, axes: vec![0, 2] }),
    ];
    for p in samples {
        let tag = p.tag().expect("serializable");
        assert!(TAGS.contains(&tag));
        let back = decode("test", tag, p.params().expect("parameters"))?;
        assert!(back.is_equivalent(&*p) && p.is_equivalent(&*back), "{tag}");
    }
    let a = Reduce { op: ferrox::backend::ReduceOp::Max, axes: vec![0] };
    let b = Reduce { op: ferrox::backend::ReduceOp::Max, axes: vec![1] };
    assert!(!a.is_equivalent(&b) && !a.is_equivalent(&Eye { k: 0 }));
    assert!(decode("test", "Nope", serde_json::Value::Null).is_err());
    assert!(decode("test", "Reduce", serde_json::json!({"op": "Max"})).is_err());
    Ok(())
}

#[test]
fn output_specs_check_inputs_against_parameters() -> ferrox::Result<()> {
    let x = ops::zeros(&[2, 3], Dtype::F32)?;
    let sum = Reduce { op: ferrox::backend::ReduceOp::Sum, axes: vec![1] };
    let specs = sum.output_specs(std::slice::from_ref(&x))?;
    assert_eq!((specs[0].shape.clone(), specs[0].dtype), (vec![2, 1], Dtype::F32));
    assert!(Reduce { op: ferrox::backend::ReduceOp::Sum, axes: vec![2] }
        .output_specs(std::slice::from_ref(&x))
        .is_err());
    assert!(sum.output_specs(&[]).is_err());
    assert!(Unary(ferrox::backend::UnaryOp::BitwiseInvert).output_specs(std::slice::from_ref(&x)).is_err());
    assert!(Full(Scalar::Int(0)).output_specs(&[]).is_err());
    Ok(())
}
