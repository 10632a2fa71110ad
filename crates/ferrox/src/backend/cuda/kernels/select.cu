// select.cu: out = cond ? x : y (`where`) on the module dtype T.
//
// Kernels (blockDim 256, any gridDim.x >= 1; n may be 0; out contiguous):
//   select_contig (const fx_bool* c, const T* x, const T* y, T* out, long long n)
//       c, x, y contiguous
//   select_strided(const fx_bool* c, const T* x, const T* y, T* out, long long n, Strided3 s)
//       c at s.s0, x at s.s1, y at s.s2
// A condition byte is true when it is non-zero.

extern "C" __global__ void select_contig(const fx_bool* c, const T* x, const T* y, T* out, long long n) {
    const long long nth = fx_thread_count();
    // Packs of P elements (16 bytes of T) when every pointer allows it.
    constexpr int P = 16 / (int)sizeof(T);
    long long done = 0;
    if (fx_aligned(c, P) && fx_aligned(x, 16) && fx_aligned(y, 16) && fx_aligned(out, 16)) {
        const long long npk = n / P;
#pragma unroll 1
        for (long long p = fx_thread_id(); p < npk; p += nth) {
            FxPack<fx_bool, P> pc;
            FxPack<T, P> px, py, po;
            pc.load(c + p * P);
            px.load(x + p * P);
            py.load(y + p * P);
#pragma unroll
            for (int e = 0; e < P; ++e) po.v[e] = pc.v[e] != 0 ? px.v[e] : py.v[e];
            po.store(out + p * P);
        }
        done = npk * P;
    }
#pragma unroll 1
    for (long long i = done + fx_thread_id(); i < n; i += nth) out[i] = c[i] != 0 ? x[i] : y[i];
}

extern "C" __global__ void select_strided(const fx_bool* c, const T* x, const T* y, T* out, long long n,
                                          Strided3 s) {
    fx_strided_runs<3>(
        s, n,
        [&](long long i0, const long long(&offs)[FX_RUN][3]) {
            fx_bool vc[FX_RUN];
#pragma unroll
            for (int e = 0; e < FX_RUN; ++e) vc[e] = c[offs[e][0]];
#pragma unroll
            for (int e = 0; e < FX_RUN; ++e) out[i0 + 32 * e] = vc[e] != 0 ? x[offs[e][1]] : y[offs[e][2]];
        },
        [&](long long i, const long long(&off)[3]) { out[i] = c[off[0]] != 0 ? x[off[1]] : y[off[2]]; });
}
