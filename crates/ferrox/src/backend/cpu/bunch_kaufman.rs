//! The Bunch–Kaufman `L D T(L)` factorization of a symmetric matrix in
//! LAPACK's `sytrf` form, which PyTorch's `ldl_factor` returns and its
//! `ldl_solve` reads.
//!
//! faer's LBLᵀ factorization tests its pivots differently (it compares the
//! diagonal against `alpha * rowmax² / colmax` where LAPACK uses
//! `alpha * colmax² / rowmax`), so its factors pick other pivots than
//! LAPACK's and cannot be repacked into this form; this module follows
//! LAPACK's unblocked `dsytf2` (lower triangle) step by step: the same
//! pivot choices, the same interchanges (applied to the trailing matrix
//! only, so each column of `L` is stored in the row order of its step),
//! the same pivot encoding.

use faer::traits::RealField;
use rayon::prelude::*;

/// Trailing matrices at least this large (elements) are updated on
/// several threads.
const PARALLEL_UPDATE: usize = 128 * 128;

/// An `n x n` matrix stored column by column.
pub struct ColumnMajor<'a, T> {
    /// The entries, column `j` at `data[j * n..(j + 1) * n]`.
    pub data: &'a mut [T],
    /// The order.
    pub n: usize,
}

impl<T: Copy> ColumnMajor<'_, T> {
    fn get(&self, i: usize, j: usize) -> T {
        self.data[j * self.n + i]
    }

    fn set(&mut self, i: usize, j: usize, v: T) {
        self.data[j * self.n + i] = v;
    }

    fn swap(&mut self, (i0, j0): (usize, usize), (i1, j1): (usize, usize)) {
        self.data.swap(j0 * self.n + i0, j1 * self.n + i1);
    }
}

/// Factorizes the lower triangle of `a` in place (the strict upper triangle
/// is neither read nor written) and returns LAPACK's 1-based pivots: `p > 0`
/// for a 1x1 block whose row and column were interchanged with `p`, and
/// `-p` on both rows of a 2x2 block whose second row was interchanged with
/// `p`. A zero or NaN column leaves its (singular) 1x1 block in place, as
/// LAPACK does.
pub fn factor_lower<T: RealField + Copy + Send + Sync>(a: &mut ColumnMajor<'_, T>) -> Vec<i32> {
    let n = a.n;
    let zero = T::zero_impl();
    let one = T::one_impl();
    // (1 + sqrt(17)) / 8: bounds the growth of the entries by 2.57 per step.
    let alpha = T::from_f64_impl((1.0 + 17f64.sqrt()) / 8.0);
    let mut pivots = vec![0i32; n];
    let mut k = 0;
    while k < n {
        let abs_kk = abs(a.get(k, k));
        // The largest entry below the diagonal of column k (the first of ties).
        let (imax, colmax) = argmax((k + 1..n).map(|i| (i, abs(a.get(i, k)))));
        let singular = (abs_kk == zero && colmax == zero) || T::is_nan_impl(&abs_kk);
        let mut step = 1;
        let pivot;
        if singular || abs_kk >= alpha * colmax {
            pivot = k;
        } else {
            // The largest off-diagonal entry of row (and column) imax.
            let row = (k..imax).map(|j| (j, abs(a.get(imax, j))));
            let column = (imax + 1..n).map(|i| (i, abs(a.get(i, imax))));
            let (_, rowmax) = argmax(row.chain(column));
            if abs_kk >= alpha * colmax * (colmax / rowmax) {
                pivot = k;
            } else if abs(a.get(imax, imax)) >= alpha * rowmax {
                pivot = imax;
            } else {
                pivot = imax;
                step = 2;
            }
        }
        let kk = k + step - 1;
        if pivot != kk {
            interchange(a, k, kk, pivot);
        }
        if step == 1 {
            if k + 1 < n && !singular {
                let d = one / a.get(k, k);
                rank_one_update(a, k, d);
            }
            pivots[k] = pivot as i32 + 1;
        } else {
            rank_two_update(a, k);
            pivots[k] = -(pivot as i32 + 1);
            pivots[k + 1] = -(pivot as i32 + 1);
        }
        k += step;
    }
    pivots
}

/// `|x|`.
fn abs<T: RealField>(x: T) -> T {
    T::abs_impl(&x)
}

/// The index and value of the first largest of `values` (`(0, 0)` when
/// there are none).
fn argmax<T: RealField + Copy>(values: impl Iterator<Item = (usize, T)>) -> (usize, T) {
    let mut best: Option<(usize, T)> = None;
    for (i, v) in values {
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.unwrap_or((0, T::zero_impl()))
}

/// Interchanges rows and columns `kk` and `p > kk` of the lower triangle of
/// the trailing matrix `a[k.., k..]` (and, for a 2x2 step, the entries of
/// column `k` in those rows).
fn interchange<T: Copy>(a: &mut ColumnMajor<'_, T>, k: usize, kk: usize, p: usize) {
    for i in p + 1..a.n {
        a.swap((i, kk), (i, p));
    }
    for j in kk + 1..p {
        a.swap((j, kk), (p, j));
    }
    a.swap((kk, kk), (p, p));
    if kk != k {
        a.swap((kk, k), (p, k));
    }
}

/// The 1x1 step at `k` with `d = 1 / a[k, k]`: the trailing lower triangle
/// loses `d x T(x)` (`x` the column below the pivot), then `x` becomes the
/// multipliers `d x` (LAPACK's `dsyr` and `dscal`, rounded as they are).
fn rank_one_update<T: RealField + Copy + Send + Sync>(a: &mut ColumnMajor<'_, T>, k: usize, d: T) {
    let n = a.n;
    let x: Vec<T> = (k + 1..n).map(|i| a.get(i, k)).collect();
    trailing_columns(a, k + 1, |c, column| {
        let xj = x[c] * d;
        for (value, &xi) in column.iter_mut().zip(&x[c..]) {
            *value = *value - xi * xj;
        }
    });
    for (r, i) in (k + 1..n).enumerate() {
        a.set(i, k, x[r] * d);
    }
}

/// The 2x2 step at `k`: with `D = [[a_kk, a_k1k], [a_k1k, a_k1k1]]`, the
/// trailing lower triangle loses `W D^-1 T(W)` (`W` the two columns below
/// the block), then `W` becomes the multipliers `W D^-1` (LAPACK's scaled
/// formulas, which keep the 2x2 inverse well conditioned).
fn rank_two_update<T: RealField + Copy + Send + Sync>(a: &mut ColumnMajor<'_, T>, k: usize) {
    let n = a.n;
    if k + 2 >= n {
        return;
    }
    let one = T::one_impl();
    let d21 = a.get(k + 1, k);
    let d11 = a.get(k + 1, k + 1) / d21;
    let d22 = a.get(k, k) / d21;
    let t = one / (d11 * d22 - one);
    let d21 = t / d21;
    let w0: Vec<T> = (k + 2..n).map(|i| a.get(i, k)).collect();
    let w1: Vec<T> = (k + 2..n).map(|i| a.get(i, k + 1)).collect();
    // The multipliers of each row below the block.
    let m0: Vec<T> = w0.iter().zip(&w1).map(|(&x0, &x1)| d21 * (d11 * x0 - x1)).collect();
    let m1: Vec<T> = w0.iter().zip(&w1).map(|(&x0, &x1)| d21 * (d22 * x1 - x0)).collect();
    trailing_columns(a, k + 2, |c, column| {
        let (mj0, mj1) = (m0[c], m1[c]);
        for ((value, &x0), &x1) in column.iter_mut().zip(&w0[c..]).zip(&w1[c..]) {
            *value = *value - x0 * mj0 - x1 * mj1;
        }
    });
    for (r, i) in (k + 2..n).enumerate() {
        a.set(i, k, m0[r]);
        a.set(i, k + 1, m1[r]);
    }
}

/// Runs `update(c, column)` on the lower part (from the diagonal down) of
/// each column `start + c` of `a`, on several threads when the trailing
/// matrix is large.
fn trailing_columns<T: Copy + Send + Sync>(
    a: &mut ColumnMajor<'_, T>,
    start: usize,
    update: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let n = a.n;
    let columns = a.data[start * n..].par_chunks_mut(n).enumerate();
    let each = |(c, column): (usize, &mut [T])| update(c, &mut column[start + c..]);
    if (n - start) * (n - start) >= PARALLEL_UPDATE {
        columns.with_min_len(8).for_each(each);
    } else {
        a.data[start * n..].chunks_mut(n).enumerate().for_each(each);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Mat;

    /// `P L D T(L) T(P)` rebuilt from LAPACK's packed form (the reading
    /// `sytrs` does), for checking.
    fn rebuild(ld: &Mat<f64>, pivots: &[i32]) -> Mat<f64> {
        let n = ld.nrows();
        // Start from D and apply the steps from the last to the first:
        // A = P1 L1 P2 L2 ... D ... T(L2) T(P2) T(L1) T(P1).
        let mut m = Mat::<f64>::zeros(n, n);
        let mut k = 0;
        let mut blocks = Vec::new();
        while k < n {
            let step = if pivots[k] < 0 { 2 } else { 1 };
            m[(k, k)] = ld[(k, k)];
            if step == 2 {
                m[(k + 1, k + 1)] = ld[(k + 1, k + 1)];
                m[(k + 1, k)] = ld[(k + 1, k)];
                m[(k, k + 1)] = ld[(k + 1, k)];
            }
            blocks.push((k, step));
            k += step;
        }
        for &(k, step) in blocks.iter().rev() {
            // L_k: identity with the multipliers of columns k.. k+step-1.
            let mut l = Mat::<f64>::identity(n, n);
            for c in k..k + step {
                for i in k + step..n {
                    l[(i, c)] = ld[(i, c)];
                }
            }
            let mut p = Mat::<f64>::identity(n, n);
            let kk = k + step - 1;
            let q = (pivots[k].unsigned_abs() - 1) as usize;
            p[(kk, kk)] = 0.0;
            p[(q, q)] = 0.0;
            p[(kk, q)] = 1.0;
            p[(q, kk)] = 1.0;
            if q == kk {
                p = Mat::identity(n, n);
            }
            let pl = &p * &l;
            m = &pl * &m * pl.transpose();
        }
        m
    }

    #[test]
    fn rebuilds_the_matrix_with_one_and_two_by_two_blocks() {
        // A zero diagonal forces 2x2 blocks; the rest picks both kinds.
        let n = 7;
        let a = Mat::<f64>::from_fn(n, n, |i, j| {
            let (i, j) = (i.max(j), i.min(j));
            if i == j && i < 2 {
                0.0
            } else {
                ((i * 7 + j * 3) % 11) as f64 - 5.0 + (i == j) as usize as f64 * 0.25
            }
        });
        let mut data: Vec<f64> = (0..n * n).map(|k| a[(k % n, k / n)]).collect();
        let pivots = factor_lower(&mut ColumnMajor { data: &mut data, n });
        let ld = Mat::<f64>::from_fn(n, n, |i, j| data[j * n + i]);
        assert!(pivots.iter().any(|&p| p < 0), "{pivots:?}");
        let back = rebuild(&ld, &pivots);
        for i in 0..n {
            for j in 0..n {
                assert!((back[(i, j)] - a[(i, j)]).abs() < 1e-9, "{i} {j}: {} vs {}", back[(i, j)], a[(i, j)]);
            }
        }
    }

    #[test]
    fn a_zero_column_stays_a_singular_one_by_one_block() {
        let mut data: Vec<f64> = (0..9)
            .map(|k| {
                if k % 3 == 1 || k / 3 == 1 {
                    0.0
                } else if k % 4 == 0 {
                    10.0 + k as f64
                } else {
                    1.0
                }
            })
            .collect();
        let pivots = factor_lower(&mut ColumnMajor { data: &mut data, n: 3 });
        assert_eq!(pivots, vec![1, 2, 3]);
        assert_eq!(data[4], 0.0);
    }
}
