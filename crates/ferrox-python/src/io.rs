//! Files: `load`, `save`, `savez`, `savez_compressed`, `save_safetensors`,
//! `save_gguf`, as MLX's. A file is a path (str or os.PathLike) or a binary
//! file object; paths are memory-mapped, file objects read whole.

use crate::array::PyArray;
use crate::convert::to_array;
use crate::device::on_stream;
use crate::errors::IntoPyResult;
use ferrox::io::{self, Format, GgufValue, Loaded, Metadata, Output, Source};
use ferrox::Array;
use ferrox_python_macros::guarded;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::path::PathBuf;

/// A file argument: a path, or a file object to read from or write to.
enum FileArg<'py> {
    Path(PathBuf),
    Object(Bound<'py, PyAny>),
}

/// Classifies `file` for `op`; `mode` is "read" or "write".
fn file_arg<'py>(op: &str, file: &Bound<'py, PyAny>, mode: &str) -> PyResult<FileArg<'py>> {
    if file.is_instance_of::<PyString>() || file.hasattr("__fspath__")? {
        let path: PathBuf = file.extract()?;
        return Ok(FileArg::Path(path));
    }
    if file.hasattr(mode)? {
        return Ok(FileArg::Object(file.clone()));
    }
    Err(PyTypeError::new_err(format!("[{op}] Input must be a file-like object, or string")))
}

/// The name of a file argument, for format inference and errors.
fn file_name(file: &FileArg<'_>) -> Option<String> {
    match file {
        FileArg::Path(p) => Some(p.display().to_string()),
        FileArg::Object(o) => o.getattr("name").ok().and_then(|n| n.extract::<String>().ok()),
    }
}

/// All bytes of a readable file object.
fn read_object(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let data = obj.call_method0("read")?;
    let bytes = data
        .downcast::<PyBytes>()
        .map_err(|_| PyTypeError::new_err(format!("[{op}] The file object must be opened in binary mode.")))?;
    Ok(bytes.as_bytes().to_vec())
}

/// Writes `bytes` to a writable file object.
fn write_object(obj: &Bound<'_, PyAny>, bytes: &[u8]) -> PyResult<()> {
    obj.call_method1("write", (PyBytes::new(obj.py(), bytes),))?;
    Ok(())
}

/// Runs `body` on an in-memory writer and writes what it wrote to `obj`.
fn write_to_object(
    op: &'static str,
    obj: &Bound<'_, PyAny>,
    body: impl FnOnce(&mut Output<&mut Vec<u8>>) -> ferrox::Result<()>,
) -> PyResult<()> {
    let mut buffer = Vec::new();
    let mut out = Output::new(op, "python file object", &mut buffer);
    body(&mut out).py()?;
    out.finish().py()?;
    write_object(obj, &buffer)
}

/// Named arrays from a dict of str to array (or array-like).
fn named_arrays(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Array)>> {
    let dict = obj
        .downcast::<PyDict>()
        .map_err(|_| PyTypeError::new_err(format!("[{op}] The arrays must be a dict of names to arrays.")))?;
    dict.iter()
        .map(|(k, v)| {
            let key: String =
                k.extract().map_err(|_| PyTypeError::new_err(format!("[{op}] Array names must be strings.")))?;
            Ok((key, to_array(&v, None)?))
        })
        .collect()
}

/// Loads arrays from a file (`.npy`, `.npz`, `.safetensors` or `.gguf`).
///
/// Args:
///     file (str or PathLike(str) or IO(bytes)): Path or file object.
///     format (str, optional): File format; inferred from the extension when None.
///     return_metadata (bool, optional): Also return the file's metadata.
///
/// Returns:
///     Any: The result.
#[guarded]
#[pyfunction]
#[pyo3(signature = (file, /, format = None, return_metadata = false, *, stream = None))]
fn load(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    format: Option<&str>,
    return_metadata: bool,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    let file = file_arg("load", file, "read")?;
    let format = match format {
        Some(f) => Format::from_name(f).py()?,
        None => match file_name(&file) {
            Some(name) => Format::from_file_name(&name).py()?,
            None => return Err(PyValueError::new_err("[load] Could not infer file format from extension")),
        },
    };
    if return_metadata && matches!(format, Format::Npy | Format::Npz) {
        return Err(PyValueError::new_err(format!("[load] metadata not supported for format {}", format.extension())));
    }
    let source = match &file {
        FileArg::Path(p) => Source::open("load", p).py()?,
        FileArg::Object(o) => {
            Source::from_vec(file_name(&file).unwrap_or("python file object".into()), read_object("load", o)?)
        }
    };
    let loaded = on_stream(stream, || py.allow_threads(|| io::load_source(&source, format)))?.py()?;
    let (arrays, metadata) = match loaded {
        Loaded::Array(a) => return Ok(PyArray::wrap(a).into_pyobject(py)?.into_any().unbind()),
        Loaded::Arrays(arrays, metadata) => (arrays, metadata),
    };
    let dict = PyDict::new(py);
    for (name, a) in arrays {
        dict.set_item(name, PyArray::wrap(a))?;
    }
    if !return_metadata {
        return Ok(dict.into_any().unbind());
    }
    let meta = PyDict::new(py);
    match metadata {
        Metadata::None => {}
        Metadata::Strings(pairs) => {
            for (k, v) in pairs {
                meta.set_item(k, v)?;
            }
        }
        Metadata::Gguf(pairs) => {
            for (k, v) in pairs {
                match v {
                    GgufValue::Array(a) => meta.set_item(k, PyArray::wrap(a))?,
                    GgufValue::String(s) => meta.set_item(k, s)?,
                    GgufValue::Strings(list) => meta.set_item(k, PyList::new(py, list)?)?,
                }
            }
        }
    }
    Ok(PyTuple::new(py, [dict.into_any(), meta.into_any()])?.into_any().unbind())
}

/// Saves an array to a binary file in `.npy` format (`.npy` is appended to
/// a path without it).
///
/// Args:
///     file (str or PathLike(str) or IO(bytes)): Path or file object.
///     arr (array): Array to save.
#[guarded]
#[pyfunction]
#[pyo3(signature = (file, arr, /))]
fn save(py: Python<'_>, file: &Bound<'_, PyAny>, arr: &Bound<'_, PyAny>) -> PyResult<()> {
    let a = to_array(arr, None)?;
    match file_arg("save", file, "write")? {
        FileArg::Path(p) => py.allow_threads(|| io::save(&p, &a)).py(),
        FileArg::Object(o) => write_to_object("save", &o, |out| io::npy::write(out, &a)),
    }
}

/// The arrays of `savez`: positional ones named `arr_0`, `arr_1`, ... and
/// keyword ones by their keywords.
fn savez_arrays(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Array)>> {
    let mut arrays = Vec::new();
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            arrays.push((k.extract::<String>()?, to_array(&v, None)?));
        }
    }
    for (i, v) in args.iter().enumerate() {
        let name = format!("arr_{i}");
        if arrays.iter().any(|(n, _)| *n == name) {
            return Err(PyValueError::new_err(format!("[savez] Cannot use un-named variables and keyword {name}")));
        }
        arrays.push((name, to_array(&v, None)?));
    }
    Ok(arrays)
}

fn savez_impl(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
    compressed: bool,
) -> PyResult<()> {
    let arrays = savez_arrays(args, kwargs)?;
    match file_arg("savez", file, "write")? {
        FileArg::Path(p) => py.allow_threads(|| io::savez(&p, &arrays, compressed)).py(),
        FileArg::Object(o) => {
            let mut buffer = std::io::Cursor::new(Vec::new());
            io::npz::write(&mut buffer, "python file object", &arrays, compressed).py()?;
            write_object(&o, buffer.get_ref())
        }
    }
}

/// Saves several arrays to a binary file in uncompressed `.npz` format.
///
/// Args:
///     file (str or PathLike(str) or IO(bytes)): Path or file object.
///     *args (array): Arrays saved as ``arr_0``, ``arr_1``, ...
///     **kwargs (array): Arrays saved under their names.
#[guarded]
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn savez(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    savez_impl(py, file, args, kwargs, false)
}

/// Saves several arrays to a binary file in compressed `.npz` format.
///
/// Args:
///     file (str or PathLike(str) or IO(bytes)): Path or file object.
///     *args (array): Arrays saved as ``arr_0``, ``arr_1``, ...
///     **kwargs (array): Arrays saved under their names.
#[guarded]
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn savez_compressed(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    savez_impl(py, file, args, kwargs, true)
}

/// Saves a dict of arrays (and optional string metadata) to a binary file
/// in `.safetensors` format.
///
/// Args:
///     file (str or PathLike(str) or IO(bytes)): Path or file object.
///     arrays (dict(str, array)): Named arrays.
///     metadata (dict(str, str), optional): Metadata to store with the arrays.
#[guarded]
#[pyfunction]
#[pyo3(signature = (file, arrays, metadata = None))]
fn save_safetensors(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    arrays: &Bound<'_, PyAny>,
    metadata: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let arrays = named_arrays("save_safetensors", arrays)?;
    let metadata: Vec<(String, String)> = match metadata {
        Some(m) if !m.is_none() => {
            let bad = || {
                PyValueError::new_err("[save_safetensors] Metadata must be a dictionary with string keys and values")
            };
            let dict = m.downcast::<PyDict>().map_err(|_| bad())?;
            dict.iter()
                .map(|(k, v)| {
                    Ok((k.extract::<String>().map_err(|_| bad())?, v.extract::<String>().map_err(|_| bad())?))
                })
                .collect::<PyResult<_>>()?
        }
        _ => Vec::new(),
    };
    match file_arg("save_safetensors", file, "write")? {
        FileArg::Path(p) => py.allow_threads(|| io::save_safetensors(&p, &arrays, &metadata)).py(),
        FileArg::Object(o) => {
            write_to_object("save_safetensors", &o, |out| io::safetensors::write(out, &arrays, &metadata))
        }
    }
}

/// Saves a dict of arrays (and optional metadata: arrays of at most one
/// dimension, strings, lists of strings) to a binary file in `.gguf` format.
///
/// Args:
///     file (str or PathLike(str) or IO(bytes)): Path or file object.
///     arrays (dict(str, array)): Named arrays.
///     metadata (dict(str, Any), optional): Metadata to store with the arrays.
#[guarded]
#[pyfunction]
#[pyo3(signature = (file, arrays, metadata = None))]
fn save_gguf(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    arrays: &Bound<'_, PyAny>,
    metadata: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let arrays = named_arrays("save_gguf", arrays)?;
    let mut values = Vec::new();
    if let Some(m) = metadata.filter(|m| !m.is_none()) {
        let dict = m.downcast::<PyDict>().map_err(|_| PyTypeError::new_err("[save_gguf] Metadata must be a dict."))?;
        for (k, v) in dict.iter() {
            let key: String =
                k.extract().map_err(|_| PyTypeError::new_err("[save_gguf] Metadata keys must be strings."))?;
            let value = if let Ok(s) = v.extract::<String>() {
                GgufValue::String(s)
            } else if let Ok(list) = v.downcast::<PyList>() {
                if list.iter().all(|x| x.is_instance_of::<PyString>()) && !list.is_empty() {
                    GgufValue::Strings(list.extract()?)
                } else {
                    GgufValue::Array(to_array(&v, None)?)
                }
            } else {
                GgufValue::Array(to_array(&v, None).map_err(|_| {
                    PyTypeError::new_err(format!(
                        "[save_gguf] Metadata {key:?} must be an array, a string or a list of strings."
                    ))
                })?)
            };
            values.push((key, value));
        }
    }
    match file_arg("save_gguf", file, "write")? {
        FileArg::Path(p) => py.allow_threads(|| io::save_gguf(&p, &arrays, &values)).py(),
        FileArg::Object(o) => write_to_object("save_gguf", &o, |out| io::gguf::write(out, &arrays, &values)),
    }
}

/// Adds the file functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::add_functions!(m, load, save, savez, savez_compressed, save_safetensors, save_gguf);
    Ok(())
}
