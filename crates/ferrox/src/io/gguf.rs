//! llama.cpp's GGUF (version 2 and 3): typed key-value metadata, tensor
//! descriptions (dimensions innermost first), then the aligned tensor data.
//! Plain tensors load lazily from the file. Q4_0, Q4_1 and Q8_0 tensors load
//! as MLX loads them: `name` becomes packed uint32 weights (4 or 8 bits, 32
//! per group) and `prefix.scales`/`prefix.biases` float16 arrays, ready for
//! `dequantize` and `quantized_matmul`. BF16, Q2_K, Q4_K and Q6_K tensors
//! load as float16, converted as MLX converts them (`gguf_quants.rs`); the
//! other quantized types are refused, as MLX refuses them.

use super::gguf_quants::ToF16;
use super::source::{Cursor, Source};
use super::{host_bytes, loaded_array, Output};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::shape::checked_nbytes;
use half::f16;
use std::io::Write;
use std::sync::Arc;

const MAGIC: &[u8; 4] = b"GGUF";
const DEFAULT_ALIGNMENT: u64 = 32;
const OP: &str = "load_gguf";

/// A GGUF metadata value as ferrox returns it (MLX's choice: numbers and
/// numeric arrays become arrays, strings stay strings).
#[derive(Clone, Debug)]
pub enum GgufValue {
    /// A number (0-d) or a list of numbers (1-D).
    Array(Array),
    /// A string.
    String(String),
    /// A list of strings.
    Strings(Vec<String>),
}

/// GGUF's metadata value types.
mod value_type {
    pub const U8: u32 = 0;
    pub const I8: u32 = 1;
    pub const U16: u32 = 2;
    pub const I16: u32 = 3;
    pub const U32: u32 = 4;
    pub const I32: u32 = 5;
    pub const F32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const U64: u32 = 10;
    pub const I64: u32 = 11;
    pub const F64: u32 = 12;
}

/// The dtype a numeric metadata type loads as (float64 becomes float32, as
/// in MLX) and its size in the file.
fn value_dtype(t: u32) -> Option<(Dtype, usize)> {
    use value_type::*;
    Some(match t {
        U8 => (Dtype::U8, 1),
        I8 => (Dtype::I8, 1),
        U16 => (Dtype::U16, 2),
        I16 => (Dtype::I16, 2),
        U32 => (Dtype::U32, 4),
        I32 => (Dtype::I32, 4),
        F32 => (Dtype::F32, 4),
        BOOL => (Dtype::Bool, 1),
        U64 => (Dtype::U64, 8),
        I64 => (Dtype::I64, 8),
        F64 => (Dtype::F64, 8),
        _ => return None,
    })
}

/// The metadata value type of an array's dtype.
fn dtype_value_type(dtype: Dtype) -> Option<u32> {
    use value_type::*;
    Some(match dtype {
        Dtype::U8 => U8,
        Dtype::I8 => I8,
        Dtype::U16 => U16,
        Dtype::I16 => I16,
        Dtype::U32 => U32,
        Dtype::I32 => I32,
        Dtype::F32 => F32,
        Dtype::Bool => BOOL,
        Dtype::U64 => U64,
        Dtype::I64 => I64,
        _ => return None,
    })
}

/// GGML tensor types ferrox reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TensorType {
    Plain(Dtype),
    /// 32 weights per block: an f16 scale and 4-bit weights (bias -8 × scale).
    Q4_0,
    /// 32 weights per block: f16 scale and bias, 4-bit weights.
    Q4_1,
    /// 32 weights per block: an f16 scale and int8 weights.
    Q8_0,
    /// A type MLX converts to float16 (BF16 and some K-quants).
    ToF16(ToF16),
}

impl TensorType {
    fn from_ggml(t: u32) -> Option<TensorType> {
        Some(match t {
            0 => TensorType::Plain(Dtype::F32),
            1 => TensorType::Plain(Dtype::F16),
            2 => TensorType::Q4_0,
            3 => TensorType::Q4_1,
            8 => TensorType::Q8_0,
            24 => TensorType::Plain(Dtype::I8),
            25 => TensorType::Plain(Dtype::I16),
            26 => TensorType::Plain(Dtype::I32),
            27 => TensorType::Plain(Dtype::I64),
            28 => TensorType::Plain(Dtype::F64),
            t => TensorType::ToF16(ToF16::from_ggml(t)?),
        })
    }

    fn to_ggml(dtype: Dtype) -> Option<u32> {
        Some(match dtype {
            Dtype::F32 => 0,
            Dtype::F16 => 1,
            Dtype::I8 => 24,
            Dtype::I16 => 25,
            Dtype::I32 => 26,
            Dtype::I64 => 27,
            Dtype::F64 => 28,
            Dtype::BF16 => 30,
            _ => return None,
        })
    }

    /// Bytes of one 32-weight block of a quantized type.
    fn block_bytes(self) -> Option<usize> {
        match self {
            TensorType::Plain(_) | TensorType::ToF16(_) => None,
            TensorType::Q4_0 => Some(18),
            TensorType::Q4_1 => Some(20),
            TensorType::Q8_0 => Some(34),
        }
    }
}

/// Name and description of a GGML type number, for errors.
fn ggml_type_name(t: u32) -> String {
    const NAMES: [&str; 31] = [
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
        "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16",
        "I32", "I64", "F64", "IQ1_M", "BF16",
    ];
    NAMES.get(t as usize).map(|n| n.to_string()).unwrap_or_else(|| format!("type {t}"))
}

/// The tensors (in file order) and the metadata (in file order) of the GGUF
/// file in `source`.
pub fn load(source: &Arc<Source>) -> Result<super::Contents<GgufValue>> {
    let mut cur = Cursor::new(source, OP);
    if &cur.array::<4>("the GGUF magic")? != MAGIC {
        return Err(source.corrupt(OP, "not a GGUF file (the magic \"GGUF\" is missing)."));
    }
    let version = cur.u32("the GGUF version")?;
    if version != 2 && version != 3 {
        return Err(source.corrupt(OP, format!("unsupported GGUF version {version} (2 and 3 are supported).")));
    }
    let n_tensors = cur.u64("the tensor count")?;
    let n_kv = cur.u64("the metadata count")?;
    let mut metadata = Vec::new();
    let mut alignment = DEFAULT_ALIGNMENT;
    for _ in 0..n_kv {
        let key = string(&mut cur, "a metadata key")?;
        let t = cur.u32("a metadata type")?;
        let value = metadata_value(&mut cur, t, &key)?;
        if key == "general.alignment" {
            alignment = match (&value, t) {
                (GgufValue::Array(a), value_type::U32) => a.item::<u32>()? as u64,
                _ => return Err(cur.corrupt("general.alignment must be a uint32")),
            };
            if alignment == 0 || !alignment.is_power_of_two() {
                return Err(cur.corrupt(format_args!("general.alignment {alignment} is not a power of two")));
            }
        }
        metadata.push((key, value));
    }
    struct Info {
        name: String,
        shape: Vec<usize>,
        ggml_type: u32,
        offset: u64,
    }
    let mut infos = Vec::new();
    for _ in 0..n_tensors {
        let name = string(&mut cur, "a tensor name")?;
        let ndim = cur.u32("a tensor's dimension count")? as usize;
        if ndim > super::npy::MAX_NDIM {
            return Err(cur.corrupt(format_args!("tensor {name:?} has {ndim} dimensions")));
        }
        let mut shape = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            let d = cur.u64("a tensor dimension")?;
            shape.push(usize::try_from(d).map_err(|_| cur.corrupt(format_args!("tensor {name:?} has dimension {d}")))?);
        }
        // GGML lists dimensions innermost first.
        shape.reverse();
        let ggml_type = cur.u32("a tensor type")?;
        let offset = cur.u64("a tensor offset")?;
        infos.push(Info { name, shape, ggml_type, offset });
    }
    let data_start = (cur.pos as u64).div_ceil(alignment) * alignment;
    let file_len = source.bytes().len() as u64;
    let mut arrays: Vec<(String, Array)> = Vec::new();
    let mut push = |name: String, array: Array| -> Result<()> {
        if arrays.iter().any(|(n, _)| *n == name) {
            return Err(source.corrupt(OP, format!("two tensors are named {name:?}.")));
        }
        arrays.push((name, array));
        Ok(())
    };
    for info in infos {
        let name = &info.name;
        let tensor_type = TensorType::from_ggml(info.ggml_type).ok_or_else(|| {
            source.corrupt(OP, format!("tensor {name:?} has unsupported type {}.", ggml_type_name(info.ggml_type)))
        })?;
        let n: usize = info
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| source.corrupt(OP, format!("tensor {name:?} has too many elements.")))?;
        let nbytes = match tensor_type {
            TensorType::Plain(dtype) => checked_nbytes(&info.shape, dtype.size()),
            TensorType::ToF16(t) => t.nbytes(n),
            q => {
                if info.shape.last().is_none_or(|d| d % 32 != 0) {
                    return Err(source.corrupt(
                        OP,
                        format!(
                            "quantized tensor {name:?} has last dimension {:?}, not a multiple of 32.",
                            info.shape.last()
                        ),
                    ));
                }
                (n / 32).checked_mul(q.block_bytes().expect("quantized"))
            }
        }
        .ok_or_else(|| source.corrupt(OP, format!("tensor {name:?} is too large.")))?;
        let start = data_start.checked_add(info.offset).filter(|&s| s <= file_len);
        let Some(start) = start.filter(|&s| nbytes as u64 <= file_len - s) else {
            return Err(
                source.corrupt(OP, format!("tensor {name:?} extends past the end of the file; it may be truncated."))
            );
        };
        let start = start as usize;
        match tensor_type {
            TensorType::Plain(dtype) => {
                push(info.name.clone(), loaded_array(source, start, false, info.shape, dtype)?)?
            }
            TensorType::ToF16(t) => {
                let values = t.to_f16(&source.bytes()[start..start + nbytes], n);
                push(info.name.clone(), Array::from_vec(values, &info.shape)?)?
            }
            q => {
                let (weights, scales, biases) =
                    unpack_quantized(&source.bytes()[start..start + nbytes], q, &info.shape)?;
                let prefix = name.strip_suffix(".weight").unwrap_or(name).to_string();
                push(info.name.clone(), weights)?;
                push(format!("{prefix}.scales"), scales)?;
                push(format!("{prefix}.biases"), biases)?;
            }
        }
    }
    Ok((arrays, metadata))
}

/// A GGUF string: a u64 length and UTF-8 bytes.
fn string(cur: &mut Cursor, what: &str) -> Result<String> {
    let len = cur.u64(what)?;
    let bytes = cur.take(len, what)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| cur.corrupt(format_args!("{what} is not UTF-8")))
}

fn metadata_value(cur: &mut Cursor, t: u32, key: &str) -> Result<GgufValue> {
    if t == value_type::STRING {
        return Ok(GgufValue::String(string(cur, "a metadata string")?));
    }
    if let Some((dtype, size)) = value_dtype(t) {
        let bytes = cur.take(size as u64, "a metadata value")?;
        return Ok(GgufValue::Array(numbers(bytes, t, dtype, &[])?));
    }
    if t != value_type::ARRAY {
        return Err(cur.corrupt(format_args!("metadata {key:?} has unknown type {t}")));
    }
    let element = cur.u32("a metadata array type")?;
    let len = cur.u64("a metadata array length")?;
    if element == value_type::STRING {
        // Each string takes at least its 8-byte length: a lying count ends
        // at the end of the file, not in a huge allocation.
        let mut strings = Vec::new();
        for _ in 0..len {
            strings.push(string(cur, "a metadata string")?);
        }
        return Ok(GgufValue::Strings(strings));
    }
    let Some((dtype, size)) = value_dtype(element) else {
        return Err(cur.corrupt(format_args!("metadata {key:?} is an array of type {element}, which is not supported")));
    };
    let n = usize::try_from(len).map_err(|_| cur.corrupt("a metadata array is too long"))?;
    let bytes = cur.take(len.saturating_mul(size as u64), "a metadata array")?;
    Ok(GgufValue::Array(numbers(bytes, element, dtype, &[n])?))
}

/// An array of `shape` from metadata bytes of value type `t`.
fn numbers(bytes: &[u8], t: u32, dtype: Dtype, shape: &[usize]) -> Result<Array> {
    if t == value_type::F64 {
        // MLX loads float64 metadata as float32.
        let values: Vec<f32> =
            bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8")) as f32).collect();
        return Array::from_vec(values, shape);
    }
    Array::from_bytes(bytes, dtype, shape)
}

/// MLX's layout of a Q4_0/Q4_1/Q8_0 tensor: uint32 words of packed
/// unsigned weights (lowest bits first) and f16 scales and biases per 32.
fn unpack_quantized(data: &[u8], q: TensorType, shape: &[usize]) -> Result<(Array, Array, Array)> {
    let block = q.block_bytes().expect("quantized");
    let groups = data.len() / block;
    let bits = if q == TensorType::Q8_0 { 8 } else { 4 };
    let mut packed = vec![0u8; groups * 32 * bits / 8];
    let mut scales = Vec::with_capacity(groups);
    let mut biases = Vec::with_capacity(groups);
    for (g, b) in data.chunks_exact(block).enumerate() {
        let half = |i: usize| f16::from_le_bytes([b[i], b[i + 1]]);
        let out = &mut packed[g * 32 * bits / 8..(g + 1) * 32 * bits / 8];
        match q {
            TensorType::Q4_0 | TensorType::Q4_1 => {
                let (scale, bias, quants) = if q == TensorType::Q4_0 {
                    (half(0), f16::from_f32(-8.0 * half(0).to_f32()), &b[2..18])
                } else {
                    (half(0), half(2), &b[4..20])
                };
                scales.push(scale);
                biases.push(bias);
                // Byte j holds weight j (low nibble) and weight j + 16 (high).
                let mut weights = [0u8; 32];
                for (j, &byte) in quants.iter().enumerate() {
                    weights[j] = byte & 0x0F;
                    weights[j + 16] = byte >> 4;
                }
                for (k, o) in out.iter_mut().enumerate() {
                    *o = weights[2 * k] | (weights[2 * k + 1] << 4);
                }
            }
            _ => {
                let scale = half(0);
                scales.push(scale);
                biases.push(f16::from_f32(-128.0 * scale.to_f32()));
                // int8 weights become unsigned by flipping the sign bit.
                for (o, &w) in out.iter_mut().zip(&b[2..34]) {
                    *o = w ^ 0x80;
                }
            }
        }
    }
    let mut w_shape = shape.to_vec();
    let mut s_shape = shape.to_vec();
    let last = *shape.last().expect("checked");
    // `last` is a multiple of 32 (checked); dividing first cannot overflow
    // when another dimension is 0 and `last` alone is near usize::MAX.
    *w_shape.last_mut().expect("checked") = last / 32 * bits;
    *s_shape.last_mut().expect("checked") = last / 32;
    let words: Vec<u32> = packed.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4"))).collect();
    Ok((Array::from_vec(words, &w_shape)?, Array::from_vec(scales, &s_shape)?, Array::from_vec(biases, &s_shape)?))
}

/// Writes the arrays and metadata to `out` as a GGUF version 3 file.
pub fn write<W: Write>(
    out: &mut Output<W>,
    arrays: &[(String, Array)],
    metadata: &[(String, GgufValue)],
) -> Result<()> {
    const OP: &str = "save_gguf";
    let mut head = Vec::new();
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&3u32.to_le_bytes());
    head.extend_from_slice(&(arrays.len() as u64).to_le_bytes());
    head.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    let put_str = |head: &mut Vec<u8>, s: &str| {
        head.extend_from_slice(&(s.len() as u64).to_le_bytes());
        head.extend_from_slice(s.as_bytes());
    };
    for (key, value) in metadata {
        put_str(&mut head, key);
        match value {
            GgufValue::String(s) => {
                head.extend_from_slice(&value_type::STRING.to_le_bytes());
                put_str(&mut head, s);
            }
            GgufValue::Strings(list) => {
                head.extend_from_slice(&value_type::ARRAY.to_le_bytes());
                head.extend_from_slice(&value_type::STRING.to_le_bytes());
                head.extend_from_slice(&(list.len() as u64).to_le_bytes());
                for s in list {
                    put_str(&mut head, s);
                }
            }
            GgufValue::Array(a) => {
                if a.ndim() > 1 {
                    return Err(Error::invalid(OP, "Cannot save arrays with more than one dimension."));
                }
                if a.size() == 0 {
                    return Err(Error::invalid(OP, "Cannot save empty arrays."));
                }
                let t = dtype_value_type(a.dtype())
                    .ok_or_else(|| Error::invalid(OP, format!("array type {} not support for metadata.", a.dtype())))?;
                if a.ndim() == 1 {
                    head.extend_from_slice(&value_type::ARRAY.to_le_bytes());
                    head.extend_from_slice(&t.to_le_bytes());
                    head.extend_from_slice(&(a.size() as u64).to_le_bytes());
                } else {
                    head.extend_from_slice(&t.to_le_bytes());
                }
                host_bytes(a, |bytes| {
                    head.extend_from_slice(bytes);
                    Ok(())
                })?;
            }
        }
    }
    let align = |n: u64| n.div_ceil(DEFAULT_ALIGNMENT) * DEFAULT_ALIGNMENT;
    let mut offset = 0u64;
    for (name, a) in arrays {
        let t = TensorType::to_ggml(a.dtype())
            .ok_or_else(|| Error::invalid(OP, format!("dtype {} is not supported", a.dtype())))?;
        put_str(&mut head, name);
        head.extend_from_slice(&(a.ndim() as u32).to_le_bytes());
        for &d in a.shape().iter().rev() {
            head.extend_from_slice(&(d as u64).to_le_bytes());
        }
        head.extend_from_slice(&t.to_le_bytes());
        head.extend_from_slice(&offset.to_le_bytes());
        offset = align(offset + a.nbytes() as u64);
    }
    head.resize(align(head.len() as u64) as usize, 0);
    out.put(&head)?;
    for (_, a) in arrays {
        host_bytes(a, |bytes| out.put(bytes))?;
        let pad = align(a.nbytes() as u64) - a.nbytes() as u64;
        out.put(&vec![0u8; pad as usize])?;
    }
    Ok(())
}
