//! Shapes, strides and broadcasting: the [`Layout`] every kernel receives.

/// How an array's elements sit in a buffer: shape, strides (in elements, may
/// be negative or zero) and the offset of element `[0, 0, ...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Extent of each dimension.
    pub shape: Vec<usize>,
    /// Step in elements between neighbours along each dimension.
    pub strides: Vec<isize>,
    /// Position of the first element in the buffer.
    pub offset: usize,
}

/// Row-major (C order) strides for `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        // Saturates: only shapes with a zero extent can overflow here, and
        // their strides are never used to address an element.
        acc = acc.saturating_mul(d.max(1).min(isize::MAX as usize) as isize);
    }
    strides
}

/// Number of elements of a shape. Saturates at `usize::MAX` rather than
/// wrapping, so a shape too large for memory never looks small (and a zero
/// extent anywhere gives 0, however large the others).
pub fn numel(shape: &[usize]) -> usize {
    if shape.contains(&0) {
        return 0;
    }
    shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d))
}

/// Bytes an array of `shape` with `itemsize`-byte elements occupies, or
/// `None` when that exceeds `isize::MAX` (no allocation could hold it).
pub fn checked_nbytes(shape: &[usize], itemsize: usize) -> Option<usize> {
    numel(shape).checked_mul(itemsize).filter(|&b| b <= isize::MAX as usize)
}

/// NumPy broadcasting of two shapes; `None` if they are incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// Resolves a possibly negative axis against `ndim`; `None` if out of range.
pub fn normalize_axis(axis: isize, ndim: usize) -> Option<usize> {
    let n = ndim as isize;
    if axis < -n || axis >= n {
        None
    } else {
        Some(((axis + n) % n.max(1)) as usize)
    }
}

impl Layout {
    /// A row-major layout of `shape` starting at offset 0.
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout { shape: shape.to_vec(), strides: contiguous_strides(shape), offset: 0 }
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        numel(&self.shape)
    }

    /// True when elements are dense in row-major order (dims of extent 1 ignored).
    pub fn is_row_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d == 1 {
                continue;
            }
            if s != expected {
                return false;
            }
            expected *= d as isize;
        }
        true
    }

    /// Whether the elements are dense in column-major order from `offset`
    /// (the transpose of a row-contiguous layout).
    pub fn is_col_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for (&d, &st) in self.shape.iter().zip(&self.strides) {
            if d != 1 && st != expected {
                return false;
            }
            expected *= d as isize;
        }
        true
    }

    /// The buffer elements the layout reaches, as the first and one past the
    /// last offset (`None` when it has no elements).
    pub fn reach(&self) -> Option<(usize, usize)> {
        if self.size() == 0 {
            return None;
        }
        let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let step = (d as isize - 1) * s;
            if step < 0 {
                lo += step;
            } else {
                hi += step;
            }
        }
        Some((lo as usize, hi as usize + 1))
    }

    /// True when every element is the same buffer element (a single value,
    /// possibly broadcast: each stride is 0 or its extent is 1).
    pub fn reads_one_element(&self) -> bool {
        self.strides.iter().zip(&self.shape).all(|(&s, &d)| s == 0 || d == 1)
    }

    /// This layout broadcast to `shape` (leading dims and extent-1 dims get stride 0).
    /// `None` if the shapes are incompatible.
    pub fn broadcast_to(&self, shape: &[usize]) -> Option<Layout> {
        if shape.len() < self.ndim() {
            return None;
        }
        let lead = shape.len() - self.ndim();
        let mut strides = vec![0isize; shape.len()];
        for (i, &d) in shape.iter().enumerate().skip(lead) {
            let (sd, ss) = (self.shape[i - lead], self.strides[i - lead]);
            strides[i] = if sd == d {
                ss
            } else if sd == 1 {
                0
            } else {
                return None;
            };
        }
        Some(Layout { shape: shape.to_vec(), strides, offset: self.offset })
    }

    /// The layout with dimensions reordered: new dim `i` is old dim `perm[i]`.
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// A strided window: along each axis take `len` elements from `start`
    /// stepping by `step` (which may be negative). Callers guarantee bounds.
    /// An empty window starts at offset 0, so kernels that slice
    /// `offset..offset + size` out of an (empty) buffer stay in range.
    pub fn slice(&self, start: &[usize], len: &[usize], step: &[isize]) -> Layout {
        let mut offset = self.offset as isize;
        let mut strides = self.strides.clone();
        for i in 0..self.ndim() {
            if len[i] > 0 {
                offset += start[i] as isize * self.strides[i];
            }
            strides[i] = self.strides[i] * step[i];
        }
        let offset = if numel(len) == 0 { 0 } else { offset.max(0) as usize };
        Layout { shape: len.to_vec(), strides, offset }
    }

    /// The same elements seen with `new_shape`, without copying, if the strides
    /// allow it (NumPy's no-copy reshape); `None` when a copy is needed.
    pub fn reshape_view(&self, new_shape: &[usize]) -> Option<Layout> {
        if self.size() == 0 {
            return Some(Layout::contiguous(new_shape));
        }
        if self.is_row_contiguous() {
            let mut l = Layout::contiguous(new_shape);
            l.offset = self.offset;
            return Some(l);
        }
        // Drop extent-1 dims, then match groups of old dims to groups of new dims.
        let old: Vec<(usize, isize)> =
            self.shape.iter().copied().zip(self.strides.iter().copied()).filter(|&(d, _)| d != 1).collect();
        let mut new_strides = vec![0isize; new_shape.len()];
        let (mut oi, mut ni) = (0usize, 0usize);
        while ni < new_shape.len() && oi < old.len() {
            if new_shape[ni] == 1 {
                ni += 1;
                continue;
            }
            let (oj0, nj0) = (oi, ni);
            let mut op = old[oi].0;
            let mut np = new_shape[ni];
            while op != np {
                if np < op {
                    ni += 1;
                    np *= new_shape[ni];
                } else {
                    oi += 1;
                    op *= old[oi].0;
                }
            }
            // The old group must be one strided block.
            for k in oj0..oi {
                if old[k].1 != old[k + 1].1 * old[k + 1].0 as isize {
                    return None;
                }
            }
            // Fill the new group's strides from its innermost dim outwards.
            new_strides[ni] = old[oi].1;
            for k in (nj0..ni).rev() {
                new_strides[k] = new_strides[k + 1] * new_shape[k + 1] as isize;
            }
            oi += 1;
            ni += 1;
        }
        Some(Layout { shape: new_shape.to_vec(), strides: new_strides, offset: self.offset })
    }
}

/// Merges neighbouring dimensions that are contiguous with each other in every
/// one of several layouts sharing `shape`; returns the collapsed shape and strides.
pub fn collapse_dims<const N: usize>(shape: &[usize], strides: [&[isize]; N]) -> (Vec<usize>, [Vec<isize>; N]) {
    let (shape, strides) = collapse_dims_of(shape, &strides);
    (shape, strides.try_into().unwrap_or_else(|_| unreachable!("one stride vector per layout")))
}

/// [`collapse_dims`] for a number of layouts known at run time.
pub fn collapse_dims_of(shape: &[usize], strides: &[&[isize]]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let n = strides.len();
    let mut out_shape: Vec<usize> = Vec::with_capacity(shape.len());
    let mut out_strides: Vec<Vec<isize>> = (0..n).map(|_| Vec::with_capacity(shape.len())).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let mergeable =
            !out_shape.is_empty() && (0..n).all(|k| *out_strides[k].last().unwrap() == strides[k][i] * d as isize);
        if mergeable {
            *out_shape.last_mut().unwrap() *= d;
            for k in 0..n {
                *out_strides[k].last_mut().unwrap() = strides[k][i];
            }
        } else {
            out_shape.push(d);
            for k in 0..n {
                out_strides[k].push(strides[k][i]);
            }
        }
    }
    if out_shape.is_empty() {
        out_shape.push(1);
        for s in out_strides.iter_mut() {
            s.push(1);
        }
    }
    (out_shape, out_strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]), Some(vec![3, 4]));
        assert_eq!(broadcast_shapes(&[], &[2, 2]), Some(vec![2, 2]));
        assert_eq!(broadcast_shapes(&[3], &[4]), None);
    }

    #[test]
    fn reshape_view_of_transposed_needs_copy() {
        let l = Layout::contiguous(&[2, 3]).permute(&[1, 0]);
        assert!(l.reshape_view(&[6]).is_none());
        assert!(l.reshape_view(&[3, 2, 1]).is_some());
        let s = Layout::contiguous(&[4, 6]).slice(&[0, 0], &[4, 3], &[1, 1]);
        assert_eq!(s.reshape_view(&[2, 2, 3]).unwrap().strides, vec![12, 6, 1]);
        assert!(s.reshape_view(&[12]).is_none());
    }

    #[test]
    fn reach_spans_the_elements_a_layout_reads() {
        assert_eq!(Layout::contiguous(&[2, 3]).reach(), Some((0, 6)));
        assert_eq!(Layout::contiguous(&[2, 0]).reach(), None);
        let broadcast = Layout { shape: vec![1 << 40], strides: vec![0], offset: 5 };
        assert_eq!(broadcast.reach(), Some((5, 6)));
        let reversed = Layout { shape: vec![4, 3], strides: vec![-3, 2], offset: 9 };
        assert_eq!(reversed.reach(), Some((0, 14)));
        let sliced = Layout::contiguous(&[4, 6]).slice(&[1, 2], &[2, 3], &[1, 1]);
        assert_eq!(sliced.reach(), Some((8, 17)));
    }

    #[test]
    fn collapse_merges_contiguous_dims() {
        let st = contiguous_strides(&[2, 3, 4]);
        let (s, [c]) = collapse_dims(&[2, 3, 4], [&st]);
        assert_eq!((s, c), (vec![24], vec![1]));
    }
}
