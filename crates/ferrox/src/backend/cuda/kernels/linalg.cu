// linalg.cu: the element-wise steps around cuSOLVER's factorizations, for
// the module dtype T.
//
// Kernels (blockDim 256, any gridDim.x >= 1; a contiguous; total may be 0):
//   keep_triangle(T* a, long long total, long long rows, long long cols, int upper)
//       a holds row-major rows x cols matrices (total elements in all);
//       zeroes the elements outside the upper (j >= i) or lower (j <= i)
//       triangle, in place.
//   mark_non_finite(const T* a, int* flags, long long total, long long per)
//       a holds contiguous matrices of per elements (total in all); sets
//       flags[b] = 1 for each matrix b with a NaN or infinite element
//       (flags zeroed by the caller).
//
// float32 and float64 modules only (T real), after cuSOLVER's geev of real
// matrices:
//   eig_values(const T* w, float* out, long long total)
//       w: total complex eigenvalues as (re, im) pairs of T; out: the same
//       as complex64 (re, im float pairs).
//   eig_vectors(const T* w, const T* vr, float* out, long long total, long long n)
//       vr: column-major n x n matrices of LAPACK's packed right
//       eigenvectors (a real eigenvalue's vector in its column; a complex
//       pair w_j, w_j+1 = conj(w_j), imaginary part of w_j positive, has
//       vectors vr_j + i vr_j+1 and vr_j - i vr_j+1); w: their n eigenvalues
//       per matrix, as above; out: total = count * n * n complex64 entries,
//       the vectors as the columns of row-major n x n matrices.

extern "C" __global__ void keep_triangle(T* a, long long total, long long rows, long long cols, int upper) {
    const T zero = fx_from_c(fx_zero());
    const long long nth = fx_thread_count();
#pragma unroll 1
    for (long long idx = fx_thread_id(); idx < total; idx += nth) {
        unsigned long long matrix_index, ij, i, j;
        fx_divmod((unsigned long long)idx, (unsigned long long)(rows * cols), matrix_index, ij);
        fx_divmod(ij, (unsigned long long)cols, i, j);
        const bool kept = upper ? j >= i : j <= i;
        if (!kept) a[idx] = zero;
    }
}

extern "C" __global__ void mark_non_finite(const T* a, int* flags, long long total, long long per) {
    const long long nth = fx_thread_count();
#pragma unroll 1
    for (long long idx = fx_thread_id(); idx < total; idx += nth) {
        if (!fx_isfinite(fx_to_c(a[idx]))) flags[idx / per] = 1;
    }
}

#if defined(FX_DTYPE_F32) || defined(FX_DTYPE_F64)
extern "C" __global__ void eig_values(const T* w, float* out, long long total) {
    const long long nth = fx_thread_count();
#pragma unroll 1
    for (long long idx = fx_thread_id(); idx < total; idx += nth) {
        out[2 * idx] = (float)w[2 * idx];
        out[2 * idx + 1] = (float)w[2 * idx + 1];
    }
}

extern "C" __global__ void eig_vectors(const T* w, const T* vr, float* out, long long total, long long n) {
    const long long nth = fx_thread_count();
#pragma unroll 1
    for (long long idx = fx_thread_id(); idx < total; idx += nth) {
        unsigned long long b, ij, i, j;
        fx_divmod((unsigned long long)idx, (unsigned long long)(n * n), b, ij);
        fx_divmod(ij, (unsigned long long)n, i, j);
        const T* v = vr + b * n * n;
        const T imag = w[2 * (b * n + j) + 1];
        T re, im;
        // (A NaN eigenvalue, from a matrix whose outputs become NaN, reads
        // its own column.)
        if (imag > (T)0 && j + 1 < (unsigned long long)n) {
            re = v[j * n + i];
            im = v[(j + 1) * n + i];
        } else if (imag < (T)0 && j > 0) {
            re = v[(j - 1) * n + i];
            im = -v[j * n + i];
        } else {
            re = v[j * n + i];
            im = (T)0;
        }
        out[2 * idx] = (float)re;
        out[2 * idx + 1] = (float)im;
    }
}
#endif
