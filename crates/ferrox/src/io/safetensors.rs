//! Hugging Face's safetensors: an 8-byte header length, a JSON header
//! (dtype, shape and byte range of each tensor, plus `__metadata__`) and
//! the tensors' bytes. The `safetensors` crate parses and validates the
//! header (ranges inside the file, contiguous and non-overlapping).

use super::source::Source;
use super::{host_bytes, loaded_array, Output};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use safetensors::Dtype as St;
use std::io::Write;
use std::sync::Arc;

/// The dtype an array of safetensors dtype `dtype` loads as (MLX's table:
/// fp8 payloads load as their uint8 bytes).
fn dtype_from_st(dtype: St) -> Option<Dtype> {
    Some(match dtype {
        St::BOOL => Dtype::Bool,
        St::U8 | St::F8_E4M3 | St::F8_E8M0 => Dtype::U8,
        St::I8 => Dtype::I8,
        St::I16 => Dtype::I16,
        St::U16 => Dtype::U16,
        St::F16 => Dtype::F16,
        St::BF16 => Dtype::BF16,
        St::I32 => Dtype::I32,
        St::U32 => Dtype::U32,
        St::F32 => Dtype::F32,
        St::C64 => Dtype::C64,
        St::F64 => Dtype::F64,
        St::I64 => Dtype::I64,
        St::U64 => Dtype::U64,
        _ => return None,
    })
}

fn dtype_to_st(dtype: Dtype) -> St {
    match dtype {
        Dtype::Bool => St::BOOL,
        Dtype::U8 => St::U8,
        Dtype::U16 => St::U16,
        Dtype::U32 => St::U32,
        Dtype::U64 => St::U64,
        Dtype::I8 => St::I8,
        Dtype::I16 => St::I16,
        Dtype::I32 => St::I32,
        Dtype::I64 => St::I64,
        Dtype::F16 => St::F16,
        Dtype::BF16 => St::BF16,
        Dtype::F32 => St::F32,
        Dtype::F64 => St::F64,
        Dtype::C64 => St::C64,
    }
}

/// The tensors (in file order) and the `__metadata__` of the safetensors
/// file in `source`.
pub fn load(source: &Arc<Source>) -> Result<super::Contents<String>> {
    let bytes = source.bytes();
    let (header_len, header) = safetensors::SafeTensors::read_metadata(bytes)
        .map_err(|e| source.corrupt("load_safetensors", format!("invalid safetensors file: {e}.")))?;
    let data_start = 8 + header_len;
    let mut arrays = Vec::new();
    for name in header.offset_keys() {
        let info = header.info(&name).expect("a key of the header");
        let dtype = dtype_from_st(info.dtype).ok_or_else(|| {
            source.corrupt("load_safetensors", format!("tensor {name:?} has unsupported dtype {:?}.", info.dtype))
        })?;
        if info.shape.len() > super::npy::MAX_NDIM {
            return Err(source.corrupt("load_safetensors", format!("tensor {name:?} has too many dimensions.")));
        }
        let array = loaded_array(source, data_start + info.data_offsets.0, false, info.shape.clone(), dtype)?;
        arrays.push((name, array));
    }
    let mut metadata: Vec<(String, String)> = header.metadata().clone().unwrap_or_default().into_iter().collect();
    metadata.sort();
    Ok((arrays, metadata))
}

/// Writes the arrays and metadata to `out` in safetensors format. Tensors
/// are laid out in the order given; the header is padded to 8 bytes.
pub fn write<W: Write>(out: &mut Output<W>, arrays: &[(String, Array)], metadata: &[(String, String)]) -> Result<()> {
    let mut header = String::from("{");
    let quote = |s: &str| json_string(s);
    let mut entries = vec![format!(
        "\"__metadata__\":{{{}}}",
        metadata.iter().map(|(k, v)| format!("{}:{}", quote(k), quote(v))).collect::<Vec<_>>().join(",")
    )];
    let mut offset = 0usize;
    let mut seen = std::collections::HashSet::new();
    for (name, a) in arrays {
        if !seen.insert(name.as_str()) {
            return Err(Error::invalid("save_safetensors", format!("Two tensors are named {name:?}.")));
        }
        if name == "__metadata__" {
            return Err(Error::invalid("save_safetensors", "\"__metadata__\" cannot name a tensor."));
        }
        let dims: Vec<String> = a.shape().iter().map(|d| d.to_string()).collect();
        entries.push(format!(
            "{}:{{\"dtype\":\"{:?}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
            quote(name),
            dtype_to_st(a.dtype()),
            dims.join(","),
            offset,
            offset + a.nbytes()
        ));
        offset += a.nbytes();
    }
    header.push_str(&entries.join(","));
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    out.put(&(header.len() as u64).to_le_bytes())?;
    out.put(header.as_bytes())?;
    for (_, a) in arrays {
        host_bytes(a, |bytes| out.put(bytes))?;
    }
    Ok(())
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
