// creation.cu: kernels that make data from nothing, for the module dtype T.
//
// Kernels (blockDim 256, any gridDim.x >= 1; out contiguous; n may be 0):
//   fill(T* out, long long n, FillValue v)
//       out[i] = v for i < n; the element's bytes are the first sizeof(T)
//       bytes of v (little endian).
//   arange(T* out, long long n, double start, double step)
//       out[i] = cast(start + (double)i * step), rounded as f64 multiply then
//       add, cast with from_scalar(Scalar::Float) semantics.
//   arange_int(T* out, long long n, long long first, long long step)
//       integer T only: out[i] = the low bits of first + i * step in
//       wrapping 64-bit arithmetic (MLX's terms: backend/integer_range.rs).
//   eye(T* out, long long n, long long m, long long k)
//       the n x m matrix with ones where j - i == k, zeros elsewhere.

extern "C" __global__ void fill(T* out, long long n, FillValue v) {
    const T val = fx_value_of<T>(v);
    constexpr int P = 16 / (int)sizeof(T);
    const long long tid = fx_thread_id(), nth = fx_thread_count();
    long long done = 0;
    if (fx_aligned(out, 16)) {
        FxPack<T, P> pack;
#pragma unroll
        for (int e = 0; e < P; ++e) pack.v[e] = val;
        const long long npk = n / P;
#pragma unroll 1
        for (long long p = tid; p < npk; p += nth) pack.store(out + p * P);
        done = npk * P;
    }
#pragma unroll 1
    for (long long i = done + tid; i < n; i += nth) out[i] = val;
}

extern "C" __global__ void arange(T* out, long long n, double start, double step) {
    const long long nth = fx_thread_count();
#pragma unroll 1
    for (long long i = fx_thread_id(); i < n; i += nth) {
        // No FMA: the CPU rounds the product and the sum separately.
        out[i] = TDt::from_f64(__dadd_rn(start, __dmul_rn((double)i, step)));
    }
}

#if FX_IS_INT
extern "C" __global__ void arange_int(T* out, long long n, long long first, long long step) {
    const long long nth = fx_thread_count();
#pragma unroll 1
    for (long long i = fx_thread_id(); i < n; i += nth) {
        out[i] = (T)((unsigned long long)first + (unsigned long long)i * (unsigned long long)step);
    }
}
#endif

extern "C" __global__ void eye(T* out, long long n, long long m, long long k) {
    const T one = fx_from_c(fx_one()), zero = fx_from_c(fx_zero());
    const long long total = n * m, nth = fx_thread_count();
#pragma unroll 1
    for (long long idx = fx_thread_id(); idx < total; idx += nth) {
        unsigned long long i, j;
        fx_divmod((unsigned long long)idx, (unsigned long long)m, i, j);
        out[idx] = ((long long)j - (long long)i == k) ? one : zero;
    }
}
