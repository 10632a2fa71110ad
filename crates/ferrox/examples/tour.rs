//! A short tour of ferrox from Rust: `cargo run --example tour`.

use ferrox::ops::{self, Index};
use ferrox::{Array, Dtype};

fn main() -> ferrox::Result<()> {
    // Arrays from data; ops build a lazy graph.
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
    let b = ops::arange(0.0, 3.0, 1.0, Dtype::F32)?;
    let c = (&a + &b)?; // broadcasting: [2, 3] + [3]
    let y = (&c.exp()? * 0.5)?; // an f64 operand is weakly typed: stays f32
    println!("y = {y}"); // printing evaluates

    // Reductions over any axes, with keepdims.
    let s = y.sum(Some(&[1]), true)?;
    println!("row sums (keepdims) shape {:?}: {s}", s.shape());
    println!("argmax of each row: {}", a.argmax(Some(1), false)?);

    // Matrix products: batched, 1-D operands as NumPy treats them.
    let m = ops::matmul(&a, &a.t()?)?;
    println!("a @ a.T = {m}");

    // Views: slicing, transpose and reshape share the buffer.
    let rev = a.index(&[Index::Ellipsis, Index::Slice { start: None, stop: None, step: Some(-1) }])?;
    println!("a[..., ::-1] = {rev}");

    // Type promotion follows MLX: int32 / int32 gives float32.
    let i = Array::from_slice(&[1i32, 2, 3], &[3])?;
    println!("int32 / int32 -> {}", ops::divide(&i, &i)?.dtype());

    // Errors are typed values that name the op.
    let err = ops::add(&a, &Array::from_slice(&[1.0f32, 2.0], &[2])?).unwrap_err();
    println!("error: {err}");
    Ok(())
}
