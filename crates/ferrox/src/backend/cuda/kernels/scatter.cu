// scatter.cu: strided copies into an existing buffer of the module dtype T
// (slice updates, concatenate).
//
// Kernels (blockDim 256):
//   copy_into(const T* src, T* dst, long long n, Strided2 s)
//       any gridDim.x >= 1; n may be 0. For i < n: dst[off1(i)] =
//       src[off0(i)], where off0 uses s.s0 (source strides) and off1 uses
//       s.s1 (destination strides) over s.shape.
//   slice_update_fill(const T* src, const T* fill, T* dst, long long rows, long long cols, FxBox box)
//       grid (ceil(cols / FX_FILL_CHUNK), any); dst is row-contiguous of
//       shape box.shape (box.ndim >= 1 axes; rows x cols, cols the last
//       axis). Inside the box (box.start <= index < box.start + box.len on
//       every axis) it takes src, read through box.src_stride from the
//       box's first element; elsewhere *fill. A slice update of a constant
//       (a slice's cotangent, a constant pad) in one pass.

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

// Elements of a row each block of slice_update_fill writes: 16 per thread,
// in 16-byte steps.
#define FX_FILL_CHUNK 4096

// A box of a row-contiguous array: its shape, and per axis the box's first
// index, extent and the source's element stride.
struct FxBox {
    int ndim;
    long long shape[8];
    long long start[8];
    long long len[8];
    long long src_stride[8];
};

extern "C" __global__ void __launch_bounds__(256) slice_update_fill(const T* __restrict__ src, const T* fill,
                                                                    T* __restrict__ dst, long long rows,
                                                                    long long cols, FxBox box) {
    // V elements (16 bytes where T allows) per step: V independent loads in
    // flight, one 16-byte store where the rows keep dst aligned.
    constexpr int V = sizeof(T) >= 16 ? 1 : 16 / (int)sizeof(T);
    constexpr int STEPS = FX_FILL_CHUNK / 256 / V;
    const T value = *fill;
    const int last = box.ndim - 1;
    const long long lo = box.start[last], hi = lo + box.len[last], step = box.src_stride[last];
    const long long j0 = (long long)blockIdx.x * FX_FILL_CHUNK, j1 = min(cols, j0 + FX_FILL_CHUNK);
    const bool packed = V > 1 && (cols * (long long)sizeof(T)) % 16 == 0 && fx_aligned(dst, 16);
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        // The row's index along the other axes, innermost first: inside the
        // box on all of them, and where its source row starts.
        bool inside = true;
        long long from = 0, rest = r;
        for (int d = last - 1; d >= 0; --d) {
            const long long c = rest % box.shape[d];
            rest /= box.shape[d];
            inside = inside && c >= box.start[d] && c < box.start[d] + box.len[d];
            from += (c - box.start[d]) * box.src_stride[d];
        }
        T* out = dst + r * cols;
        // Element i of the box's row is srow[i * step] (for lo <= i < hi).
        const T* srow = src + (from - lo * step);
#pragma unroll 1
        for (int u = 0; u < STEPS; ++u) {
            const long long j = j0 + ((long long)u * 256 + threadIdx.x) * V;
            if (j >= j1) break;
            FxPack<T, V> pk;
            if (inside && j >= lo && j + V <= hi && step == 1) {
#pragma unroll
                for (int e = 0; e < V; ++e) pk.v[e] = srow[j + e];
            } else {
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const long long i = j + e;
                    pk.v[e] = inside && i >= lo && i < hi ? srow[i * step] : value;
                }
            }
            if (packed && j + V <= j1) {
                pk.store(out + j);
            } else {
                for (int e = 0; e < V && j + e < j1; ++e) out[j + e] = pk.v[e];
            }
        }
    }
}
