//! NumPy's `.npy` format: a magic string, a version, a Python-dict header
//! (`descr`, `fortran_order`, `shape`) and the raw elements. bfloat16, which
//! NumPy lacks, is written as MLX writes it (`'<V2'`).

use super::source::{Cursor, Source};
use super::{host_bytes, loaded_array, Output};
use crate::array::Array;
use crate::dtype::Dtype;
use crate::error::Result;
use std::io::Write;
use std::sync::Arc;

const MAGIC: &[u8] = b"\x93NUMPY";

/// Headers longer than this are refused (NumPy's own limit is 10,000 bytes
/// unless told otherwise; this leaves room for very deep shapes).
const MAX_HEADER_LEN: u32 = 1 << 20;

/// Most dimensions an array in a file may have.
pub(crate) const MAX_NDIM: usize = 64;

/// A parsed `.npy` header: what the elements are and where they start.
struct Header {
    dtype: Dtype,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
    data_offset: usize,
}

/// Loads the `.npy` file held in `source[start..end]` as a lazy array
/// (its bytes are read when it is evaluated).
pub fn load(source: &Arc<Source>, start: usize, end: usize) -> Result<Array> {
    let header = parse_header(source, start, end)?;
    // The bytes of the nonzero dimensions must fit even when another one is
    // 0, as NumPy requires of every array: then no partial product of the
    // shape overflows, in either order (Fortran order reverses it). A
    // (2**62, 8, 0) header is refused, not loaded as an empty array.
    let too_large =
        || source.corrupt("load", format!("the header's shape {:?} is too large for any array.", header.shape));
    let nonzero_bytes = header
        .shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(header.dtype.size(), |acc, &d| acc.checked_mul(d))
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(too_large)?;
    let nbytes = if header.shape.contains(&0) { 0 } else { nonzero_bytes };
    if nbytes > end - header.data_offset {
        return Err(source.corrupt(
            "load",
            format!(
                "the header describes {nbytes} bytes of data but the file holds {}; it may be truncated.",
                end - header.data_offset
            ),
        ));
    }
    let mut shape = header.shape.clone();
    if header.fortran_order {
        shape.reverse();
    }
    let array = loaded_array(source, header.data_offset, header.big_endian, shape, header.dtype)?;
    if header.fortran_order && array.ndim() > 1 {
        let perm: Vec<isize> = (0..array.ndim() as isize).rev().collect();
        return crate::ops::transpose(&array, Some(&perm));
    }
    Ok(array)
}

fn parse_header(source: &Source, start: usize, end: usize) -> Result<Header> {
    let mut cur = Cursor::new(source, "load");
    cur.pos = start;
    let corrupt = |cur: &Cursor, msg: &str| cur.corrupt(msg);
    if cur.take(6, "the .npy magic string")? != MAGIC {
        return Err(source.corrupt("load", "not a .npy file (the magic string \\x93NUMPY is missing)."));
    }
    let major = cur.u8("the .npy version")?;
    let _minor = cur.u8("the .npy version")?;
    let header_len = match major {
        1 => cur.u16("the header length")? as u32,
        2 | 3 => cur.u32("the header length")?,
        v => return Err(source.corrupt("load", format!("unsupported .npy format version {v}."))),
    };
    if header_len > MAX_HEADER_LEN {
        return Err(
            source.corrupt("load", format!("the header claims {header_len} bytes, more than a .npy header needs."))
        );
    }
    let text = cur.take(header_len as u64, "the header")?;
    if cur.pos > end {
        return Err(corrupt(&cur, "the header runs past the end of the array's data"));
    }
    let text = std::str::from_utf8(text).map_err(|_| corrupt(&cur, "the header is not text"))?;
    let dict = parse_dict(text).map_err(|m| source.corrupt("load", format!("invalid .npy header {text:?}: {m}.")))?;
    let descr = dict.descr.ok_or_else(|| source.corrupt("load", "the header has no 'descr'."))?;
    let shape = dict.shape.ok_or_else(|| source.corrupt("load", "the header has no 'shape'."))?;
    let (dtype, big_endian) =
        dtype_from_descr(&descr).ok_or_else(|| source.corrupt("load", format!("unsupported array type {descr:?}.")))?;
    if shape.len() > MAX_NDIM {
        return Err(
            source.corrupt("load", format!("{} dimensions are more than the {MAX_NDIM} supported.", shape.len()))
        );
    }
    Ok(Header { dtype, big_endian, fortran_order: dict.fortran_order.unwrap_or(false), shape, data_offset: cur.pos })
}

/// The entries of a header dict.
#[derive(Default)]
struct Dict {
    descr: Option<String>,
    fortran_order: Option<bool>,
    shape: Option<Vec<usize>>,
}

/// Parses the Python dict literal of a header:
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
fn parse_dict(text: &str) -> std::result::Result<Dict, String> {
    let mut p = Parser { s: text.trim_end().as_bytes(), i: 0 };
    let mut dict = Dict::default();
    p.expect(b'{')?;
    loop {
        p.skip_space();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key.as_str() {
            "descr" => dict.descr = Some(p.string().map_err(|_| "'descr' must be a type string".to_string())?),
            "fortran_order" => dict.fortran_order = Some(p.boolean()?),
            "shape" => dict.shape = Some(p.tuple()?),
            other => return Err(format!("unexpected key {other:?}")),
        }
        p.skip_space();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    p.skip_space();
    if p.i != p.s.len() {
        return Err("text after the dict".into());
    }
    Ok(dict)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected {:?} at character {}", c as char, self.i))
        }
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        self.skip_space();
        let quote = *self.s.get(self.i).ok_or("unexpected end")?;
        if quote != b'\'' && quote != b'"' {
            return Err(format!("expected a string at character {}", self.i));
        }
        let start = self.i + 1;
        let len = self.s[start..].iter().position(|&c| c == quote).ok_or("unterminated string")?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }
    fn boolean(&mut self) -> std::result::Result<bool, String> {
        self.skip_space();
        for (word, value) in [("True", true), ("False", false)] {
            if self.s[self.i..].starts_with(word.as_bytes()) {
                self.i += word.len();
                return Ok(value);
            }
        }
        Err("'fortran_order' must be True or False".into())
    }
    fn tuple(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(dims);
            }
            self.skip_space();
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
            let digits = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII digits");
            let dim: usize = digits.parse().map_err(|_| format!("invalid dimension at character {start}"))?;
            dims.push(dim);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

/// The dtype and byte order of an array-protocol type string (`'<f4'`).
fn dtype_from_descr(descr: &str) -> Option<(Dtype, bool)> {
    let (order, code) = match descr.as_bytes().first()? {
        b'<' | b'>' | b'|' | b'=' => (descr.as_bytes()[0], &descr[1..]),
        _ => (b'|', descr),
    };
    let dtype = match code {
        "b1" | "?" => Dtype::Bool,
        "u1" | "B" => Dtype::U8,
        "u2" => Dtype::U16,
        "u4" => Dtype::U32,
        "u8" => Dtype::U64,
        "i1" | "b" => Dtype::I8,
        "i2" => Dtype::I16,
        "i4" => Dtype::I32,
        "i8" => Dtype::I64,
        "f2" | "e" => Dtype::F16,
        "f4" => Dtype::F32,
        "f8" => Dtype::F64,
        "c8" => Dtype::C64,
        "V2" => Dtype::BF16,
        _ => return None,
    };
    let big_endian = order == b'>' || (order == b'=' && cfg!(target_endian = "big"));
    Some((dtype, big_endian && dtype.size() > 1))
}

/// The array-protocol type string ferrox writes for `dtype`.
fn descr(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Bool => "|b1",
        Dtype::U8 => "|u1",
        Dtype::U16 => "<u2",
        Dtype::U32 => "<u4",
        Dtype::U64 => "<u8",
        Dtype::I8 => "|i1",
        Dtype::I16 => "<i2",
        Dtype::I32 => "<i4",
        Dtype::I64 => "<i8",
        Dtype::F16 => "<f2",
        Dtype::BF16 => "<V2",
        Dtype::F32 => "<f4",
        Dtype::F64 => "<f8",
        Dtype::C64 => "<c8",
    }
}

/// Writes `a` to `out` as a `.npy` file.
pub fn write<W: Write>(out: &mut Output<W>, a: &Array) -> Result<()> {
    let dims: Vec<String> = a.shape().iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", descr(a.dtype()));
    // NumPy pads magic + version + length + header + '\n' to 64 bytes.
    let v1 = header.len() + 11 < u16::MAX as usize;
    let prefix = if v1 { 10 } else { 12 };
    let total = (prefix + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - prefix - header.len() - 1));
    header.push('\n');
    out.put(MAGIC)?;
    if v1 {
        out.put(&[1, 0])?;
        out.put(&(header.len() as u16).to_le_bytes())?;
    } else {
        out.put(&[2, 0])?;
        out.put(&(header.len() as u32).to_le_bytes())?;
    }
    out.put(header.as_bytes())?;
    host_bytes(a, |bytes| out.put(bytes))
}
