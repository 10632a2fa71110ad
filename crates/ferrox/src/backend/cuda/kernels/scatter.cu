// scatter.cu: strided copies into an existing buffer of the module dtype T
// (slice updates, concatenate).
//
// Kernel (blockDim 256, any gridDim.x >= 1; n may be 0):
//   copy_into(const T* src, T* dst, long long n, Strided2 s)
//       for i < n: dst[off1(i)] = src[off0(i)], where off0 uses s.s0 (source
//       strides) and off1 uses s.s1 (destination strides) over s.shape.

extern "C" __global__ void copy_into(const T* src, T* dst, long long n, Strided2 s) {
    fx_strided_runs<2>(
        s, n,
        [&](long long, const long long(&offs)[FX_RUN][2]) {
            T v[FX_RUN];
#pragma unroll
            for (int c = 0; c < FX_RUN; ++c) v[c] = src[offs[c][0]];
#pragma unroll
            for (int c = 0; c < FX_RUN; ++c) dst[offs[c][1]] = v[c];
        },
        [&](long long, const long long(&off)[2]) { dst[off[1]] = src[off[0]]; });
}
