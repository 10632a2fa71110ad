// conv.cu: the copies around a convolution's matrix product
// (backend/cuda/conv.rs; parameters as in backend/conv_params.rs), for the
// real float module dtypes T. Any grid; blockDim 256; grid-stride loops.
//
//   conv_im2col(const T* x, T* cols, long long row0, long long rows, FxConvGeom g)
//     x: the input (N, in..., C_in) from its first element, strides g.xs
//     (batch, spatial..., channel; any signs). cols: row-major
//     [rows, groups, taps, cg], row r holding the windows of output position
//     row0 + r (row-major over (N, out...)); tap t is the filter's t-th tap
//     (row-major over k...), which meets input tap k - 1 - t per axis when
//     g.flip. Padding and the holes of input dilation read as zero.
//   conv_regroup(const T* y, T* out, long long row0, long long rows,
//                long long groups, long long og)
//     y: [groups, rows, og] (one product per group); out: row-contiguous
//     (R, groups * og); writes rows row0 .. row0 + rows of out.

#if FX_IS_FLOAT

// The geometry the host packs (ConvGeom in conv.rs): per spatial axis (up
// to 3) the input, output and filter sizes, stride, low padding (negative:
// cropped), kernel and input dilation; the input's strides; groups,
// channels per group and the flip flag.
struct FxConvGeom {
    long long dims;
    long long in[3];
    long long out[3];
    long long k[3];
    long long stride[3];
    long long lo[3];
    long long kdil[3];
    long long idil[3];
    long long xs[5];
    long long groups;
    long long cg;
    long long flip;
};

extern "C" __global__ void conv_im2col(const T* x, T* cols, long long row0, long long rows, FxConvGeom g) {
    long long taps = 1;
    for (int a = 0; a < g.dims; ++a) taps *= g.k[a];
    const long long total = rows * g.groups * taps * g.cg;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        const long long ci = i % g.cg;
        long long rest = i / g.cg;
        long long t = rest % taps;
        rest /= taps;
        const long long gi = rest % g.groups;
        long long r = rest / g.groups + row0;
        long long off = 0;
        bool inside = true;
        for (int a = (int)g.dims - 1; a >= 0; --a) {
            const long long o = r % g.out[a];
            r /= g.out[a];
            const long long kt = t % g.k[a];
            t /= g.k[a];
            const long long tap = g.flip ? g.k[a] - 1 - kt : kt;
            // Position in the dilated input, then the input element.
            const long long u = o * g.stride[a] + tap * g.kdil[a] - g.lo[a];
            if (u < 0 || u % g.idil[a] != 0 || u / g.idil[a] >= g.in[a]) {
                inside = false;
            } else {
                off += (u / g.idil[a]) * g.xs[a + 1];
            }
        }
        T v = T();
        if (inside) {
            v = x[r * g.xs[0] + off + (gi * g.cg + ci) * g.xs[g.dims + 1]];
        }
        cols[i] = v;
    }
}

extern "C" __global__ void conv_regroup(const T* y, T* out, long long row0, long long rows, long long groups,
                                        long long og) {
    const long long total = rows * groups * og;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        const long long oo = i % og;
        const long long rest = i / og;
        const long long gi = rest % groups;
        const long long r = rest / groups;
        out[(row0 + r) * groups * og + gi * og + oo] = y[(gi * rows + r) * og + oo];
    }
}

#endif
