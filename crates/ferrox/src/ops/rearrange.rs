//! Ops that rearrange elements, built from views, slices, slice updates and
//! concatenation: `moveaxis`, `permute_dims`, `atleast_*d`, `tile`,
//! `repeat`, `roll`, `pad`, `split`, `unflatten`, `flip`, `unstack`,
//! `broadcast_arrays`, `meshgrid`, `contiguous`. Their derivatives and
//! batching rules come from the primitives they use.

use super::elementwise::astype;
use super::shaping::{broadcast_to, concatenate, expand_dims, reshape, reshape_to, squeeze, transpose};
use super::{axis, normalize_axes};
use crate::array::Array;
use crate::error::{fmt_shape, Error, Result};
use crate::primitives::{AsStrided, BroadcastAgainst, Contiguous, Depends, OutputSpec, Slice, SliceUpdate};
use crate::shape::{broadcast_shapes, normalize_axis, numel};

/// `a[start:stop:step]` along `ax` (start and stop already clamped to the
/// axis; `len` elements are taken).
pub(crate) fn slice_axis(a: &Array, ax: usize, start: usize, len: usize, step: isize) -> Result<Array> {
    let nd = a.ndim();
    let mut starts = vec![0; nd];
    let mut lens = a.shape().to_vec();
    let mut steps = vec![1; nd];
    starts[ax] = start;
    lens[ax] = len;
    steps[ax] = step;
    Array::from_primitive(lens.clone(), a.dtype(), Slice { start: starts, len: lens, step: steps }, vec![a.clone()])
}

/// `base` with the window starting at `start` along `ax` replaced by
/// `update` (whose extent along `ax` is the window's).
fn update_axis(base: &Array, update: &Array, ax: usize, start: usize) -> Result<Array> {
    let nd = base.ndim();
    let mut starts = vec![0; nd];
    starts[ax] = start;
    let update = astype(update, base.dtype())?;
    let p = SliceUpdate { start: starts, len: update.shape().to_vec(), step: vec![1; nd] };
    Array::from_primitive(base.shape().to_vec(), base.dtype(), p, vec![base.clone(), update])
}

/// `a` with axis `source` moved to position `destination`.
pub fn moveaxis(a: &Array, source: isize, destination: isize) -> Result<Array> {
    let nd = a.ndim();
    let check = |ax: isize| {
        normalize_axis(ax, nd).ok_or_else(|| Error::AxisArgument {
            op: "moveaxis",
            msg: format!("Invalid axis {ax} for array with {nd} dimensions."),
        })
    };
    let (s, d) = (check(source)?, check(destination)?);
    let mut order: Vec<isize> = (0..nd as isize).filter(|&i| i != s as isize).collect();
    order.insert(d, s as isize);
    transpose(a, Some(&order))
}

/// `a` with its axes permuted (reversed when `axes` is `None`); MLX's
/// array-API name for [`transpose`].
pub fn permute_dims(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    transpose(a, axes)
}

/// `a` with at least `n` dimensions (1, 2 or 3), as NumPy's `atleast_nd`:
/// a 0-d array becomes `(1,)`, `(1, 1)` or `(1, 1, 1)`; a 1-d array of
/// length `k` becomes `(1, k)` or `(1, k, 1)`; a 2-d `(m, k)` becomes
/// `(m, k, 1)` for 3.
pub fn atleast_nd(a: &Array, n: usize) -> Result<Array> {
    let s = a.shape();
    let shape = match (n, s.len()) {
        (_, k) if k >= n => return Ok(a.clone()),
        (1, 0) => vec![1],
        (2, 0) => vec![1, 1],
        (2, 1) => vec![1, s[0]],
        (3, 0) => vec![1, 1, 1],
        (3, 1) => vec![1, s[0], 1],
        (3, 2) => vec![s[0], s[1], 1],
        _ => return Err(Error::invalid("atleast_nd", format!("Unsupported dimension count {n}."))),
    };
    reshape_to(a, shape)
}

/// `a` repeated `reps[i]` times along each axis (NumPy's `tile`): `reps`
/// shorter than `a.ndim()` is padded with ones in front, and `a` gets
/// leading axes when `reps` is longer.
pub fn tile(a: &Array, reps: &[i64]) -> Result<Array> {
    if reps.iter().any(|&r| r < 0) {
        return Err(Error::invalid("tile", "Negative repetitions are not allowed."));
    }
    let nd = a.ndim().max(reps.len());
    let mut shape = vec![1usize; nd - a.ndim()];
    shape.extend_from_slice(a.shape());
    let mut r = vec![1usize; nd - reps.len()];
    r.extend(reps.iter().map(|&v| v as usize));
    // (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...), then merged.
    let interleaved: Vec<usize> = shape.iter().flat_map(|&d| [1, d]).collect();
    let target: Vec<usize> = r.iter().zip(&shape).flat_map(|(&k, &d)| [k, d]).collect();
    let out: Vec<usize> = r.iter().zip(&shape).map(|(&k, &d)| k * d).collect();
    let x = broadcast_to(&reshape_to(a, interleaved)?, &target)?;
    reshape_to(&x, out)
}

/// Each element repeated `repeats` times along `axis` (over the flattened
/// array when `None`), as NumPy's `repeat` with one count.
pub fn repeat(a: &Array, repeats: i64, axis_: Option<isize>) -> Result<Array> {
    if repeats < 0 {
        return Err(Error::invalid("repeat", "Number of repeats cannot be negative"));
    }
    let (x, ax) = match axis_ {
        None => (reshape_to(a, vec![a.size()])?, 0),
        Some(v) => (a.clone(), axis("repeat", v, a.ndim())?),
    };
    let r = repeats as usize;
    let expanded = expand_dims(&x, &[ax as isize + 1])?;
    let mut target = expanded.shape().to_vec();
    target[ax + 1] = r;
    let mut out = x.shape().to_vec();
    out[ax] *= r;
    reshape_to(&broadcast_to(&expanded, &target)?, out)
}

/// `a` rotated by `shift` positions along one axis.
fn roll_axis(a: &Array, shift: i64, ax: usize) -> Result<Array> {
    let n = a.shape()[ax];
    if n == 0 {
        return Ok(a.clone());
    }
    let s = shift.rem_euclid(n as i64) as usize;
    if s == 0 {
        return Ok(a.clone());
    }
    let tail = slice_axis(a, ax, n - s, s, 1)?;
    let head = slice_axis(a, ax, 0, n - s, 1)?;
    concatenate(&[tail, head], ax as isize)
}

/// Elements shifted along axes with wrap-around (NumPy's `roll`). With no
/// axes the flattened array rolls; one shift applies to every given axis;
/// several shifts with one axis add up (as MLX); otherwise shifts and axes
/// pair up.
pub fn roll(a: &Array, shift: &[i64], axes: Option<&[isize]>) -> Result<Array> {
    let Some(axes) = axes else {
        let total = shift.iter().fold(0i64, |acc, &v| acc.wrapping_add(v));
        let flat = reshape_to(a, vec![a.size()])?;
        return reshape_to(&roll_axis(&flat, total, 0)?, a.shape().to_vec());
    };
    let resolved = axes.iter().map(|&v| axis("roll", v, a.ndim())).collect::<Result<Vec<_>>>()?;
    let pairs: Vec<(i64, usize)> = match (shift.len(), resolved.len()) {
        (1, _) => resolved.iter().map(|&ax| (shift[0], ax)).collect(),
        (_, 1) => shift.iter().map(|&s| (s, resolved[0])).collect(),
        (k, m) if k == m => shift.iter().copied().zip(resolved).collect(),
        (k, m) => {
            return Err(Error::invalid(
                "roll",
                format!("The shift ({k} values) and axis ({m} values) must have the same length."),
            ))
        }
    };
    pairs.into_iter().try_fold(a.clone(), |x, (s, ax)| roll_axis(&x, s, ax))
}

/// How [`pad`] fills the new elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// A constant value.
    Constant,
    /// The edge element repeated.
    Edge,
    /// The reflection without the edge element (`[2, 1 | 0, 1, 2]`).
    Reflect,
    /// The reflection including the edge element (`[1, 0 | 0, 1, 2]`).
    Symmetric,
}

impl PadMode {
    /// The mode named as in MLX (`"constant"`, `"edge"`, `"reflect"`, `"symmetric"`).
    pub fn from_name(name: &str) -> Result<PadMode> {
        Ok(match name {
            "constant" => PadMode::Constant,
            "edge" => PadMode::Edge,
            "reflect" => PadMode::Reflect,
            "symmetric" => PadMode::Symmetric,
            other => return Err(Error::invalid("pad", format!("Invalid padding mode ({other}) passed to pad"))),
        })
    }
}

/// `a` with `pad_width[i] = (before, after)` elements added along axis `i`,
/// filled as `mode` says (`value` for [`PadMode::Constant`], cast to
/// `a`'s dtype).
pub fn pad(a: &Array, pad_width: &[(i64, i64)], mode: PadMode, value: &Array) -> Result<Array> {
    if pad_width.len() != a.ndim() {
        return Err(Error::invalid(
            "pad",
            format!("Invalid number of padding sizes passed to pad with axes of size {}", a.ndim()),
        ));
    }
    for (i, &(lo, hi)) in pad_width.iter().enumerate() {
        if lo < 0 || hi < 0 {
            let (which, v) = if lo < 0 { ("low", lo) } else { ("high", hi) };
            return Err(Error::invalid(
                "pad",
                format!(
                    "Invalid {which} padding size ({v}) passed to pad for axis {i}. Padding sizes must be non-negative"
                ),
            ));
        }
    }
    let mut out_shape = a.shape().to_vec();
    for (d, &(lo, hi)) in out_shape.iter_mut().zip(pad_width) {
        *d = d
            .checked_add(lo as usize)
            .and_then(|v| v.checked_add(hi as usize))
            .ok_or_else(|| Error::invalid("pad", "The padded shape is too large."))?;
    }
    numel_checked(&out_shape)?;
    let fill = match mode {
        PadMode::Constant => broadcast_to(&astype(value, a.dtype())?, &out_shape)?,
        _ => super::zeros(&out_shape, a.dtype())?,
    };
    let mut out = fill;
    let mut starts = vec![0; a.ndim()];
    for (s, &(lo, _)) in starts.iter_mut().zip(pad_width) {
        *s = lo as usize;
    }
    let p = SliceUpdate { start: starts, len: a.shape().to_vec(), step: vec![1; a.ndim()] };
    out = Array::from_primitive(out_shape.clone(), a.dtype(), p, vec![out, a.clone()])?;
    if mode == PadMode::Constant {
        return Ok(out);
    }
    for (ax, &(lo, hi)) in pad_width.iter().enumerate() {
        let (lo, hi, n) = (lo as usize, hi as usize, a.shape()[ax]);
        if lo == 0 && hi == 0 {
            continue;
        }
        if n == 0 {
            let name = if mode == PadMode::Symmetric { "symmetric" } else { "reflect" };
            let name = if mode == PadMode::Edge { "edge" } else { name };
            return Err(Error::invalid("pad", format!("Cannot pad empty axis {ax} using mode '{name}'.")));
        }
        out = match mode {
            PadMode::Edge => {
                let first = slice_axis(&out, ax, lo, 1, 1)?;
                let last = slice_axis(&out, ax, lo + n - 1, 1, 1)?;
                let mut x = out.clone();
                if lo > 0 {
                    let mut shape = out.shape().to_vec();
                    shape[ax] = lo;
                    x = update_axis(&x, &broadcast_to(&first, &shape)?, ax, 0)?;
                }
                if hi > 0 {
                    let mut shape = out.shape().to_vec();
                    shape[ax] = hi;
                    x = update_axis(&x, &broadcast_to(&last, &shape)?, ax, lo + n)?;
                }
                x
            }
            _ => reflect_axis(&out, ax, lo, hi, n, mode == PadMode::Symmetric)?,
        };
    }
    Ok(out)
}

/// Fills the `lo` and `hi` pads of axis `ax` (around `n` filled elements)
/// with reflections, in chunks as MLX does (so pads longer than the axis
/// keep reflecting the growing array).
fn reflect_axis(out: &Array, ax: usize, lo: usize, hi: usize, n: usize, include_edge: bool) -> Result<Array> {
    let offset = if !include_edge && n > 1 { 1 } else { 0 };
    let tile = n - offset;
    let mut x = out.clone();
    let (mut filled_start, mut remaining) = (lo, lo);
    while remaining > 0 {
        let chunk = remaining.min(tile);
        let piece = flip_axis(&slice_axis(&x, ax, filled_start + offset, chunk, 1)?, ax)?;
        x = update_axis(&x, &piece, ax, filled_start - chunk)?;
        filled_start -= chunk;
        remaining -= chunk;
    }
    let (mut filled_end, mut remaining) = (lo + n, hi);
    while remaining > 0 {
        let chunk = remaining.min(tile);
        let piece = flip_axis(&slice_axis(&x, ax, filled_end - offset - chunk, chunk, 1)?, ax)?;
        x = update_axis(&x, &piece, ax, filled_end)?;
        filled_end += chunk;
        remaining -= chunk;
    }
    Ok(x)
}

/// The element count of a shape, or the error for one too large to exist.
fn numel_checked(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::invalid("pad", format!("The padded shape {} is too large.", fmt_shape(shape))))
}

/// How [`split`] divides an axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitSpec {
    /// Into this many equal parts.
    Sections(i64),
    /// At these indices (NumPy's rules: clamped, possibly empty parts).
    Indices(Vec<i64>),
}

/// The most arrays one `split` returns; more would only exhaust memory.
const MAX_SPLIT_PARTS: i64 = 1 << 24;

/// `a` cut into parts along `axis`.
pub fn split(a: &Array, spec: &SplitSpec, axis_: isize) -> Result<Vec<Array>> {
    let ax = axis("split", axis_, a.ndim())?;
    let n = a.shape()[ax] as i64;
    let bounds: Vec<i64> = match spec {
        SplitSpec::Sections(k) => {
            if *k <= 0 || n % k != 0 {
                return Err(Error::invalid(
                    "split",
                    format!(
                        "Array split does not result in sub arrays with equal size: attempting {k} splits along axis {ax} for shape {}.",
                        fmt_shape(a.shape())
                    ),
                ));
            }
            if *k > MAX_SPLIT_PARTS {
                return Err(Error::invalid(
                    "split",
                    format!("Cannot split into {k} parts: at most {MAX_SPLIT_PARTS} are supported."),
                ));
            }
            (1..*k).map(|i| i * (n / k)).collect()
        }
        SplitSpec::Indices(v) => v.clone(),
    };
    let resolve = |i: i64| if i < 0 { (i + n).max(0) } else { i.min(n) };
    let mut edges = vec![0];
    edges.extend(bounds.iter().map(|&i| resolve(i)));
    edges.push(n);
    edges
        .windows(2)
        .map(|w| {
            let (s, e) = (w[0], w[1].max(w[0]));
            slice_axis(a, ax, s as usize, (e - s) as usize, 1)
        })
        .collect()
}

/// Axis `axis` of `a` replaced by the axes `shape` (one entry may be -1).
pub fn unflatten(a: &Array, axis_: isize, shape: &[isize]) -> Result<Array> {
    let ax = axis("unflatten", axis_, a.ndim())?;
    if shape.is_empty() {
        return Err(Error::invalid("unflatten", "Shape to unflatten to cannot be empty."));
    }
    let n = a.shape()[ax];
    let known: usize = shape.iter().filter(|&&d| d != -1).map(|&d| d.max(0) as usize).product();
    let inferred = shape.iter().filter(|&&d| d == -1).count();
    let parts: Vec<usize> = match inferred {
        0 => shape.iter().map(|&d| d.max(0) as usize).collect(),
        1 if known > 0 && n.is_multiple_of(known) => {
            shape.iter().map(|&d| if d == -1 { n / known } else { d as usize }).collect()
        }
        _ => Vec::new(),
    };
    if shape.iter().any(|&d| d < -1) || parts.is_empty() || numel(&parts) != n {
        let shown: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        return Err(Error::invalid(
            "unflatten",
            format!("Cannot unflatten axis {ax} with size {n} into shape ({}).", shown.join(",")),
        ));
    }
    let mut out = a.shape()[..ax].to_vec();
    out.extend(parts);
    out.extend_from_slice(&a.shape()[ax + 1..]);
    reshape_to(a, out)
}

/// `a` reversed along one axis.
fn flip_axis(a: &Array, ax: usize) -> Result<Array> {
    let n = a.shape()[ax];
    slice_axis(a, ax, n.saturating_sub(1), n, -1)
}

/// `a` reversed along `axes` (every axis when `None`).
pub fn flip(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let axes = match axes {
        Some(v) => normalize_axes("flip", v, a.ndim())?,
        None => (0..a.ndim()).collect(),
    };
    axes.into_iter().try_fold(a.clone(), |x, ax| flip_axis(&x, ax))
}

/// The slices of `a` along `axis`, each without that axis.
pub fn unstack(a: &Array, axis_: isize) -> Result<Vec<Array>> {
    if a.ndim() == 0 {
        return Err(Error::invalid("unstack", "No axis to unstack along in a 0-dimensional array."));
    }
    let ax = axis("unstack", axis_, a.ndim())?;
    // Each output is a few graph nodes (under a kilobyte): a count the host
    // cannot hold (a broadcast view of 2**30 rows) is a MemoryError, not an
    // abort when an allocation fails.
    let bytes = a.shape()[ax].saturating_mul(1024);
    if bytes > crate::memory::physical_memory() {
        return Err(Error::allocation_failed("unstack", bytes, "CPU"));
    }
    (0..a.shape()[ax]).map(|i| squeeze(&slice_axis(a, ax, i, 1, 1)?, Some(&[ax as isize]))).collect()
}

/// The arrays broadcast against each other.
pub fn broadcast_arrays(arrays: &[Array]) -> Result<Vec<Array>> {
    let mut shape: Vec<usize> = Vec::new();
    for a in arrays {
        shape = broadcast_shapes(&shape, a.shape()).ok_or_else(|| Error::Broadcast {
            op: "broadcast_arrays",
            lhs: shape.clone(),
            rhs: a.shape().to_vec(),
        })?;
    }
    // Each array is broadcast against the others (not to a fixed shape),
    // so a shapeless compiled function re-derives the shape on each call.
    let against = |i: usize, a: &Array| -> Result<Array> {
        if a.shape() == shape.as_slice() {
            return Ok(a.clone());
        }
        let mut inputs = vec![a.clone()];
        inputs.extend(arrays.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, b)| b.clone()));
        Array::from_primitive(shape.clone(), a.dtype(), BroadcastAgainst, inputs)
    };
    arrays.iter().enumerate().map(|(i, a)| against(i, a)).collect()
}

/// Coordinate grids from 1-D coordinate arrays (NumPy's `meshgrid`):
/// `indexing` is `"xy"` (Cartesian: the first two axes swap) or `"ij"`
/// (matrix); `sparse` keeps each output broadcastable instead of full.
pub fn meshgrid(arrays: &[Array], sparse: bool, indexing: &str) -> Result<Vec<Array>> {
    if indexing != "xy" && indexing != "ij" {
        return Err(Error::invalid("meshgrid", "Invalid indexing value. Valid values are 'xy' and 'ij'."));
    }
    let n = arrays.len();
    let flat = arrays.iter().map(|a| reshape(a, &[-1])).collect::<Result<Vec<_>>>()?;
    let mut outs = Vec::with_capacity(n);
    for (i, a) in flat.iter().enumerate() {
        let mut shape = vec![1isize; n];
        let pos = if indexing == "xy" && n > 1 && i < 2 { 1 - i } else { i };
        shape[pos] = a.size() as isize;
        outs.push(reshape(a, &shape)?);
    }
    if sparse {
        return Ok(outs);
    }
    broadcast_arrays(&outs)
}

/// `a` with a row-major layout (column-major accepted too when
/// `allow_col_major`); a copy only where the layout is neither.
pub fn contiguous(a: &Array, allow_col_major: bool) -> Result<Array> {
    Array::from_primitive(a.shape().to_vec(), a.dtype(), Contiguous { allow_col_major }, vec![a.clone()])
}

/// MLX's `as_strided`: a view of `a`'s elements (in row-major order) with
/// `shape`, `strides` (in elements; default: row-major for `shape`) and
/// `offset`. Unlike MLX, positions outside `a` are refused.
///
/// ```
/// use ferrox::{ops, Array};
/// let a = Array::from_slice(&[0i32, 1, 2, 3, 4], &[5])?;
/// let windows = ops::as_strided(&a, Some(&[3, 3]), Some(&[1, 1]), 0)?;
/// assert_eq!(windows.to_vec::<i32>()?, vec![0, 1, 2, 1, 2, 3, 2, 3, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn as_strided(a: &Array, shape: Option<&[usize]>, strides: Option<&[isize]>, offset: usize) -> Result<Array> {
    let shape = shape.map_or_else(|| a.shape().to_vec(), |s| s.to_vec());
    let strides = strides.map_or_else(|| crate::shape::contiguous_strides(&shape), |s| s.to_vec());
    let p = AsStrided { shape: shape.clone(), strides, offset };
    p.check_reach(a.size())?;
    Array::from_primitive(shape, a.dtype(), p, vec![a.clone()])
}

/// MLX's `depends`: arrays equal to `inputs` whose evaluation first
/// evaluates `dependencies` (an edge in the graph, e.g. to order side
/// effects).
pub fn depends(inputs: &[Array], dependencies: &[Array]) -> Result<Vec<Array>> {
    if inputs.is_empty() {
        return Ok(Vec::new());
    }
    let outputs = inputs.iter().map(OutputSpec::of).collect();
    let all = inputs.iter().chain(dependencies).cloned().collect();
    Array::siblings_from_primitive(outputs, Depends { count: inputs.len() }, all)
}
