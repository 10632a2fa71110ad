//! `ferrox::random` through the public API, on the default device: MLX's
//! values for key, split, bits, uniform and normal (mlx 0.32.4), vmap over
//! keys, argument checks.

use ferrox::ops::{self, Index};
use ferrox::{random, vmap, Array, Dtype, Result};

fn f32_bits(a: &Array) -> Result<Vec<u32>> {
    Ok(a.to_vec::<f32>()?.iter().map(|v| v.to_bits()).collect())
}

fn unit(shape: &[usize], key: &Array) -> Result<Array> {
    random::uniform(&Array::scalar(0.0f32), &Array::scalar(1.0f32), shape, Dtype::F32, Some(key))
}

#[test]
fn key_split_bits_uniform_normal_match_mlx() -> Result<()> {
    let k = random::key(0)?;
    assert_eq!(k.to_vec::<u32>()?, vec![0, 0]);
    assert_eq!(random::key(0xDEAD_BEEF_CAFE)?.to_vec::<u32>()?, vec![0xDEAD, 0xBEEF_CAFE]);
    assert_eq!(random::split(&k, 2)?.to_vec::<u32>()?, vec![4146024105, 967050713, 2718843009, 1272950319]);
    assert_eq!(random::bits(&[7], 1, Some(&k))?.to_vec::<u8>()?, vec![143, 35, 95, 55, 29, 21, 219]);
    assert_eq!(random::bits(&[3], 2, Some(&k))?.to_vec::<u16>()?, vec![9103, 14175, 5405]);
    assert_eq!(f32_bits(&unit(&[5], &k)?)?, vec![1058214520, 1036789817, 1053379662, 1063577824, 1058584726]);
    let z = random::normal(&[5], Dtype::F32, None, None, Some(&k))?;
    assert_eq!(f32_bits(&z)?, vec![1044404792, 3215213710, 3196767363, 1067442482, 1048204889]);
    let h = random::normal(&[3], Dtype::F16, None, None, Some(&random::key(42)?))?;
    let h: Vec<u16> = h.to_vec::<half::f16>()?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(h, vec![12795, 48416, 48700]);
    Ok(())
}

#[test]
fn seeded_sequence_is_reproducible() -> Result<()> {
    random::seed(3);
    let a = random::bits(&[4], 4, None)?.to_vec::<u32>()?;
    random::seed(3);
    let b = random::bits(&[4], 4, None)?.to_vec::<u32>()?;
    assert_eq!(a, b);
    Ok(())
}

#[test]
fn vmap_over_keys_gives_each_keys_values() -> Result<()> {
    let keys = random::split(&random::key(7)?, 3)?;
    let out = vmap(|ks| Ok(vec![unit(&[5], &ks[0])?]), std::slice::from_ref(&keys), &[Some(0)], &[Some(0)])?;
    assert_eq!(out[0].shape(), &[3, 5]);
    let got = out[0].to_vec::<f32>()?;
    for i in 0..3 {
        let want = unit(&[5], &ops::index(&keys, &[Index::Int(i as i64)])?)?.to_vec::<f32>()?;
        assert_eq!(&got[i * 5..i * 5 + 5], &want[..]);
    }
    // Keys batched along their last axis, raw bytes of an odd size per key.
    let columns = ops::transpose(&keys, None)?;
    let out = vmap(|ks| Ok(vec![random::bits(&[3], 1, Some(&ks[0]))?]), &[columns], &[Some(1)], &[Some(0)])?;
    let got = out[0].to_vec::<u8>()?;
    for i in 0..3 {
        let want = random::bits(&[3], 1, Some(&ops::index(&keys, &[Index::Int(i as i64)])?))?.to_vec::<u8>()?;
        assert_eq!(&got[i * 3..i * 3 + 3], &want[..]);
    }
    Ok(())
}

#[test]
fn arguments_are_checked() -> Result<()> {
    let k = random::key(0)?;
    assert!(random::bits(&[2], 3, Some(&k)).is_err());
    assert!(random::bits(&[2], 4, Some(&Array::from_slice(&[1i32, 2], &[2])?)).is_err());
    assert!(random::bits(&[2], 4, Some(&Array::from_slice(&[1u32, 2, 3], &[3])?)).is_err());
    assert!(random::uniform(&Array::scalar(0.0f32), &Array::scalar(1.0f32), &[2], Dtype::F64, Some(&k)).is_err());
    assert!(random::normal(&[2], Dtype::I32, None, None, Some(&k)).is_err());
    assert!(random::randint(&Array::scalar(0i32), &Array::scalar(9i32), &[2], Dtype::F32, Some(&k)).is_err());
    Ok(())
}
