// linalg.cu: the element-wise steps around cuSOLVER's factorizations, for
// the module dtype T.
//
// Kernels (blockDim 256, any gridDim.x >= 1; a contiguous; total may be 0):
//   keep_triangle(T* a, long long total, long long rows, long long cols, int upper)
//       a holds row-major rows x cols matrices (total elements in all);
//       zeroes the elements outside the upper (j >= i) or lower (j <= i)
//       triangle, in place.

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
