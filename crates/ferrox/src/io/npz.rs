//! NumPy's `.npz`: a zip archive with one `.npy` file per array. Stored
//! (uncompressed) entries load lazily from the file's own bytes; deflated
//! ones are decompressed first.

use super::source::Source;
use super::{npy, Output};
use crate::array::Array;
use crate::error::{Error, Result};
use std::io::{Read, Seek, Write};
use std::sync::Arc;
use zip::result::ZipError;

/// Entries beyond which an archive is refused rather than exhausting memory.
const MAX_ENTRIES: usize = 1 << 20;

/// The arrays of the `.npz` archive in `source`, named by their entries
/// without the `.npy` suffix, in archive order.
pub fn load(source: &Arc<Source>) -> Result<Vec<(String, Array)>> {
    let zip_error = |e: ZipError| source.corrupt("load", format!("not a valid .npz (zip) file: {e}."));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(source.bytes())).map_err(zip_error)?;
    if archive.len() > MAX_ENTRIES {
        return Err(
            source.corrupt("load", format!("{} zip entries are more than the {MAX_ENTRIES} supported.", archive.len()))
        );
    }
    let mut arrays = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(zip_error)?;
        let name = entry.name_raw().to_vec();
        let name = String::from_utf8_lossy(&name).into_owned();
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        let array = if entry.compression() == zip::CompressionMethod::Stored {
            let start = entry.data_start().and_then(|s| usize::try_from(s).ok()).unwrap_or(usize::MAX);
            let end = usize::try_from(entry.size()).ok().and_then(|n| start.checked_add(n));
            match end.filter(|&e| e <= source.bytes().len()) {
                Some(end) => npy::load(source, start, end)?,
                None => {
                    return Err(source.corrupt("load", format!("zip entry {name:?} runs past the end of the file.")))
                }
            }
        } else {
            // Never inflate past the size the entry declares (a zip bomb).
            let declared = entry.size();
            let mut bytes = Vec::new();
            (&mut entry)
                .take(declared.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(|e| source.corrupt("load", format!("zip entry {name:?} cannot be decompressed: {e}.")))?;
            if bytes.len() as u64 != declared {
                return Err(source
                    .corrupt("load", format!("zip entry {name:?} does not hold the {declared} bytes it declares.")));
            }
            let inner = Source::from_vec(format!("{}[{name}]", source.name()), bytes);
            let len = inner.bytes().len();
            npy::load(&inner, 0, len)?
        };
        arrays.push((key, array));
    }
    Ok(arrays)
}

/// Writes the arrays to `out` as a `.npz` archive (entries `name.npy`),
/// deflated when `compressed`.
pub fn write<W: Write + Seek>(out: W, name: &str, arrays: &[(String, Array)], compressed: bool) -> Result<()> {
    let zip_error = |e: ZipError| Error::corrupt("savez", name, format!("cannot write the zip archive: {e}."));
    let mut zip = zip::ZipWriter::new(out);
    let method = if compressed { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
    for (key, a) in arrays {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(method)
            .large_file(a.nbytes() >= u32::MAX as usize - 4096);
        zip.start_file(format!("{key}.npy"), options).map_err(zip_error)?;
        let mut entry = Output::new("savez", name, &mut zip);
        npy::write(&mut entry, a)?;
    }
    zip.finish().map_err(zip_error)?;
    Ok(())
}
