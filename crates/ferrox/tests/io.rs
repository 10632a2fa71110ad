//! Files through the Rust API: round trips of every format, and a replay of
//! the fuzz targets' seed corpora (crates/ferrox/fuzz/corpus), which must
//! load or fail with an error, never panic.

use ferrox::io::{self, Format, GgufValue, Loaded, Metadata};
use ferrox::{Array, Dtype};
use std::path::PathBuf;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ferrox-io-test-{}-{name}", std::process::id()))
}

fn arrays() -> ferrox::Result<Vec<(String, Array)>> {
    Ok(vec![
        ("a".to_string(), Array::from_slice(&[1.5f32, -2.0, 3.25, 0.0, 7.0, 8.5], &[2, 3])?),
        ("b".to_string(), Array::from_slice(&[1i32, 2, 3], &[3])?),
    ])
}

fn same(a: &Array, b: &Array) -> ferrox::Result<bool> {
    Ok(a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_host()?.bytes() == b.to_host()?.bytes())
}

#[test]
fn npy_round_trip() -> ferrox::Result<()> {
    let path = temp("a");
    let (_, a) = &arrays()?[0];
    io::save(&path, a)?;
    let Loaded::Array(back) = io::load(&io::with_extension(&path, Format::Npy), None)? else { panic!("an array") };
    assert!(same(&back, a)?);
    std::fs::remove_file(io::with_extension(&path, Format::Npy)).ok();
    Ok(())
}

#[test]
fn npz_safetensors_and_gguf_round_trips() -> ferrox::Result<()> {
    let named = arrays()?;
    for compressed in [false, true] {
        let path = temp(&format!("z{compressed}.npz"));
        io::savez(&path, &named, compressed)?;
        let Loaded::Arrays(back, _) = io::load(&path, None)? else { panic!("arrays") };
        for ((n1, a1), (n2, a2)) in back.iter().zip(&named) {
            assert_eq!(n1, n2);
            assert!(same(a1, a2)?);
        }
        std::fs::remove_file(path).ok();
    }
    let path = temp("s.safetensors");
    io::save_safetensors(&path, &named, &[("k".into(), "v".into())])?;
    let Loaded::Arrays(back, Metadata::Strings(meta)) = io::load(&path, None)? else { panic!("arrays") };
    assert_eq!(meta, vec![("k".to_string(), "v".to_string())]);
    assert!(same(&back[1].1, &named[1].1)?);
    std::fs::remove_file(path).ok();

    let path = temp("g.gguf");
    let meta = vec![
        ("name".to_string(), GgufValue::String("tiny".into())),
        ("ids".to_string(), GgufValue::Array(Array::from_slice(&[4u32, 5], &[2])?)),
    ];
    io::save_gguf(&path, &named, &meta)?;
    let Loaded::Arrays(back, Metadata::Gguf(values)) = io::load(&path, None)? else { panic!("arrays") };
    assert!(same(&back[0].1, &named[0].1)?);
    assert!(matches!(&values[0].1, GgufValue::String(s) if s == "tiny"));
    assert!(matches!(&values[1].1, GgufValue::Array(a) if a.dtype() == Dtype::U32));
    std::fs::remove_file(path).ok();
    Ok(())
}

#[test]
fn fuzz_corpora_load_or_fail_cleanly() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut seen = 0;
    for (dir, format) in
        [("npy", Format::Npy), ("npz", Format::Npz), ("safetensors", Format::Safetensors), ("gguf", Format::Gguf)]
    {
        for entry in std::fs::read_dir(root.join(dir)).expect("corpus directory") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("readable seed");
            // Every prefix too: truncations must be errors, not crashes.
            for cut in [bytes.len(), bytes.len() / 2, bytes.len().saturating_sub(1)] {
                let _ = io::fuzz_load(format, &bytes[..cut]);
            }
            seen += 1;
        }
    }
    assert!(seen >= 4, "the corpora are missing");
}
