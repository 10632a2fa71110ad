//! Engine behaviour seen from the Rust API: laziness, graph release, views,
//! typed errors.

use ferrox::ops::{self, Index};
use ferrox::{eval, get_active_memory, Array, Dtype, Error};

#[test]
fn ops_are_lazy_until_evaluated() -> ferrox::Result<()> {
    let a = ops::ones(&[4], Dtype::F32)?;
    let b = (&a * 3.0)?;
    assert!(!b.is_evaluated());
    eval([&b])?;
    assert!(b.is_evaluated());
    assert_eq!(b.to_vec::<f32>()?, vec![3.0; 4]);
    Ok(())
}

#[test]
fn training_style_loop_keeps_memory_flat() -> ferrox::Result<()> {
    let mut x = ops::zeros(&[1024], Dtype::F32)?;
    x.eval()?;
    let mut at_100 = 0;
    for step in 0..10_000 {
        x = (&(&x * 1.0001)? + 0.5)?;
        x.eval()?;
        if step == 100 {
            at_100 = get_active_memory();
        }
    }
    // Other tests run concurrently in this process: allow their buffers.
    assert!(get_active_memory() <= at_100 + (64 << 20));
    assert!(x.to_vec::<f32>()?[0] > 5000.0);
    Ok(())
}

#[test]
fn long_unevaluated_chains_evaluate_and_drop_without_recursion() -> ferrox::Result<()> {
    let mut x = Array::scalar(0i64);
    for _ in 0..200_000 {
        x = (&x + &Array::scalar(1i64))?;
    }
    assert_eq!(x.item::<i64>()?, 200_000);
    let mut y = Array::scalar(0.0f32);
    for _ in 0..200_000 {
        y = (&y + 1.0)?;
    }
    drop(y); // never evaluated: dropping must not overflow the stack
    Ok(())
}

#[test]
fn views_share_the_buffer() -> ferrox::Result<()> {
    let a = ops::reshape(&ops::arange(0.0, 24.0, 1.0, Dtype::F32)?, &[2, 3, 4])?;
    a.eval()?;
    let base = a.data()?;
    let views = [
        a.t()?,
        a.reshape(&[6, 4])?,
        a.broadcast_to(&[5, 2, 3, 4])?,
        a.index(&[Index::Int(1), Index::Slice { start: None, stop: None, step: Some(-1) }])?,
    ];
    for v in &views {
        assert!(std::sync::Arc::ptr_eq(&v.data()?.storage, &base.storage), "{v:?}");
    }
    assert_eq!(views[3].to_vec::<f32>()?[..4], [20.0, 21.0, 22.0, 23.0]);
    Ok(())
}

#[test]
fn errors_are_typed_and_name_the_op() {
    let a = ops::ones(&[2, 3], Dtype::F32).unwrap();
    let b = ops::ones(&[4], Dtype::F32).unwrap();
    assert!(matches!(ops::add(&a, &b), Err(Error::Broadcast { op: "add", .. })));
    assert!(matches!(ops::matmul(&a, &a), Err(Error::ShapeMismatch { op: "matmul", .. })));
    assert!(matches!(ops::sum(&a, Some(&[2]), false), Err(Error::AxisOutOfRange { op: "sum", axis: 2, ndim: 2 })));
    let flags = ops::ones(&[2], Dtype::Bool).unwrap();
    assert!(matches!(ops::negative(&flags), Err(Error::UnsupportedDtype { op: "negative", .. })));
    assert!(matches!(a.index(&[Index::Int(5)]), Err(Error::IndexOutOfRange { op: "index", index: 5, .. })));
    let msg = ops::add(&a, &b).unwrap_err().to_string();
    assert_eq!(msg, "[add] Shapes (2,3) and (4,) cannot be broadcast.");
}

#[test]
fn oversized_allocations_fail_cleanly() {
    let huge = ops::zeros(&[1 << 40, 1 << 20], Dtype::F32).unwrap();
    let err = huge.eval().unwrap_err();
    assert!(err.to_string().contains("zeros") || err.to_string().contains("full"), "{err}");
}

#[test]
fn promotion_and_weak_scalars_follow_mlx() -> ferrox::Result<()> {
    let h = ops::ones(&[2], Dtype::F16)?;
    assert_eq!((&h * 2.0)?.dtype(), Dtype::F16);
    let i = ops::ones(&[2], Dtype::I32)?;
    assert_eq!((&i + 1.5)?.dtype(), Dtype::F32);
    assert_eq!(ops::divide(&i, &i)?.dtype(), Dtype::F32);
    let u = ops::ones(&[2], Dtype::U8)?;
    let s = ops::ones(&[2], Dtype::I8)?;
    assert_eq!(ops::add(&u, &s)?.dtype(), Dtype::I16);
    Ok(())
}
