// conv_igemm.cu: convolutions as implicit matrix products on the tensor
// cores (backend/cuda/conv_igemm.rs), for the half module dtypes T
// (float16, bfloat16; float32 accumulators). mma.cuh comes first.
//
// One kernel template computes any convolution node (the forward pass,
// and the input and filter gradients the Convolution vjp builds, which
// are convolutions too): with the input x (N, in..., C_in), filters w
// (C_out, k..., Cg) and output y (N, out..., C_out), per group gi it is the
// product C[M, og] = A[M, K] B[K, og] with
//   M = N * prod(out) rows (output positions), K = taps * Cg (filter taps
//   times channels, channels fastest),
//   A[m, (t, c)] = x[b, pos(o, t), gi * Cg + c] (zero in padding and in
//   the holes of input dilation; tap t meets input tap k - 1 - t when
//   flipped), B[(t, c), n] = w[gi * og + n, t, c].
// No window matrix is stored: each 128 x BN x 32 tile of the product is
// gathered straight into shared memory (cp.async, FX_IG_STAGES stages, so
// loads overlap the products), XOR-swizzled by 16-byte chunks so that
// ldmatrix reads hit distinct banks, and 8 warps multiply it with
// mma.sync m16n8k16.
//
// Each operand has a loader mode (the host picks it from the layouts):
//   k: 8-element vectors along the contiguous channel axis (A: x's channel
//      stride 1; B: w's last stride 1), tile stored [rows][32];
//   m / n: vectors along the other contiguous axis, tile stored [32][cols]
//      and read transposed: A with x's batch stride 1 (rows then run batch
//      fastest, m = pos * N + b: the filter gradient's swapped input),
//      B with w's first stride 1 (the input gradient's swapped filters);
//   s: single elements through any strides (no vector condition), stored
//      as k.
// Vector modes need the vector axis's extent (Cg, N or og) and every
// other stride a multiple of 8 and 16-byte aligned bases.
//
//   conv_igemm_<BN>_<a><b>(const T* x, const T* w, T* y, float* part, FxIgGeom g)
//       BN in {128, 64, 32} (output channels per tile), a in {k, m, s},
//       b in {k, n, s}; grid (ceil(M / 128), ceil(og / BN), groups *
//       g.splits), block 256, dynamic shared memory FX_IG_STAGES * (128 +
//       BN) * 32 * 2 bytes. x and w point at element (0, ...) of the
//       operands (strides g.xs, g.ws). y: (N, out..., C_out) through the
//       strides g.ys, channels contiguous (the host writes one phase of a
//       transposed convolution's output through strides). With g.splits >
//       1 (y row-contiguous then), split z % splits sums K tiles [split *
//       g.k_tiles_per_split, ...) and writes float partials to
//       part[split * M * C_out + output index] instead of y.
//   conv_igemm_reduce(const float* part, T* y, long long total, int splits)
//       y[i] = sum over splits of part[s * total + i]; any grid, blockDim 256.

#if FX_IS_HALF

#define FX_IG_STAGES 4
#define FX_IG_BK 32
#define FX_IG_THREADS 256

// Loader modes.
#define FX_IG_K 0
#define FX_IG_MN 1
#define FX_IG_S 2

// The geometry the host packs (IgGeom in conv_igemm.rs), with 1-D and 2-D
// convolutions padded to 3 spatial axes by leading unit axes.
struct FxIgGeom {
    long long xs[5];  // x strides: batch, spatial 0..2, channel
    long long ws[5];  // w strides: output channel, spatial 0..2, input channel
    long long ys[4];  // y strides: batch, spatial 0..2 (channels contiguous)
    int in[3], out[3], k[3], stride[3], lo[3], kdil[3], idil[3];
    int batch, opos, cg, og, c_out, m, kk, flip, groups, splits, k_tiles_per_split, pad_;
};

// Element offset of (row, col) in a tile of rows of W 16-bit elements:
// 16-byte chunks XOR-swizzled by the row so that the 8 rows one ldmatrix
// phase reads (8 consecutive rows, one chunk) fall in distinct banks.
template <int W>
__device__ __forceinline__ int fx_swz(int row, int col) {
    const int s = W == 32 ? ((row >> 1) & 3) : (row & 7);
    return row * W + ((((col >> 3) ^ s)) << 3) + (col & 7);
}

// The per-axis origin o * stride - lo of output position `pos` (row-major
// over g.out).
__device__ __forceinline__ void fx_ig_origin(const FxIgGeom& g, int pos, int (&u0)[3]) {
    const int o2 = pos % g.out[2];
    pos /= g.out[2];
    const int o1 = pos % g.out[1];
    const int o0 = pos / g.out[1];
    u0[0] = o0 * g.stride[0] - g.lo[0];
    u0[1] = o1 * g.stride[1] - g.lo[1];
    u0[2] = o2 * g.stride[2] - g.lo[2];
}

// Column k of the product as filter tap (per axis, t) and channel ci.
__device__ __forceinline__ void fx_ig_tap(const FxIgGeom& g, int k, int (&t)[3], int& ci) {
    ci = k % g.cg;
    int tap = k / g.cg;
    t[2] = tap % g.k[2];
    tap /= g.k[2];
    t[1] = tap % g.k[1];
    t[0] = tap / g.k[1];
}

// The input taps filter taps t meet (mirrored when flipped).
__device__ __forceinline__ void fx_ig_flip(const FxIgGeom& g, const int (&t)[3], int (&f)[3]) {
#pragma unroll
    for (int a = 0; a < 3; ++a) f[a] = g.flip ? g.k[a] - 1 - t[a] : t[a];
}

// The spatial offset in x of the window origin u0 at input taps f, or -1
// in padding or a hole of the input dilation.
__device__ __forceinline__ long long fx_ig_x_offset(const FxIgGeom& g, const int (&u0)[3], const int (&f)[3]) {
    long long off = 0;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        int u = u0[a] + f[a] * g.kdil[a];
        if (u < 0) return -1;
        if (g.idil[a] != 1) {
            if (u % g.idil[a] != 0) return -1;
            u /= g.idil[a];
        }
        if (u >= g.in[a]) return -1;
        off += (long long)u * g.xs[a + 1];
    }
    return off;
}

// The offset in w of filter taps t and channel ci (output channel 0).
__device__ __forceinline__ long long fx_ig_w_offset(const FxIgGeom& g, const int (&t)[3], int ci) {
    return t[0] * g.ws[1] + t[1] * g.ws[2] + t[2] * g.ws[3] + ci * g.ws[4];
}

// ---- A loaders: rows m0 .. m0 + BM of A into a stage ----

template <int MODE, int BM>
struct FxIgA;

// k vectors: thread t loads rows t / 4 + 64 i at chunk t % 4.
template <int BM>
struct FxIgA<FX_IG_K, BM> {
    static constexpr int R = BM * 4 / FX_IG_THREADS;
    long long base[R];
    int u0[R][3];
    bool ok[R];
    __device__ __forceinline__ FxIgA(const FxIgGeom& g, int m0) {
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int m = m0 + (threadIdx.x >> 2) + 64 * i;
            ok[i] = m < g.m;
            const int mm = ok[i] ? m : 0;
            base[i] = (long long)(mm / g.opos) * g.xs[0];
            fx_ig_origin(g, mm % g.opos, u0[i]);
        }
    }
    __device__ __forceinline__ void load(unsigned short* s, const T* x, const FxIgGeom& g, int kt) const {
        const int col = (threadIdx.x & 3) * 8, k = kt * FX_IG_BK + col;
        const bool kok = k < g.kk;
        int t[3], f[3], ci;
        fx_ig_tap(g, kok ? k : 0, t, ci);
        fx_ig_flip(g, t, f);
        const long long coff = ci * g.xs[4];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int row = (threadIdx.x >> 2) + 64 * i;
            const long long off = fx_ig_x_offset(g, u0[i], f);
            const bool v = ok[i] && kok && off >= 0;
            fx_cp_async<16>(&s[fx_swz<FX_IG_BK>(row, col)], x + (v ? base[i] + off + coff : 0), v);
        }
    }
};

// m vectors (x's batch stride 1; m = pos * N + b): thread t loads 8 rows
// from m0 + 8 (t % (BM / 8)) for k rows t / (BM / 8) + (256 / (BM / 8)) i.
template <int BM>
struct FxIgA<FX_IG_MN, BM> {
    static constexpr int CH = BM / 8, R = FX_IG_BK * CH / FX_IG_THREADS;
    long long base;
    int u0[3];
    bool ok;
    __device__ __forceinline__ FxIgA(const FxIgGeom& g, int m0) {
        const int m = m0 + (threadIdx.x % CH) * 8;
        ok = m < g.m;
        const int mm = ok ? m : 0;
        base = (long long)(mm % g.batch) * g.xs[0];
        fx_ig_origin(g, mm / g.batch, u0);
    }
    __device__ __forceinline__ void load(unsigned short* s, const T* x, const FxIgGeom& g, int kt) const {
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int krow = threadIdx.x / CH + (FX_IG_THREADS / CH) * i;
            const int k = kt * FX_IG_BK + krow;
            const bool kok = k < g.kk;
            int t[3], f[3], ci;
            fx_ig_tap(g, kok ? k : 0, t, ci);
            fx_ig_flip(g, t, f);
            const long long off = fx_ig_x_offset(g, u0, f);
            const bool v = ok && kok && off >= 0;
            fx_cp_async<16>(&s[fx_swz<BM>(krow, (threadIdx.x % CH) * 8)], x + (v ? base + off + ci * g.xs[4] : 0),
                            v);
        }
    }
};

// Single elements: thread t loads column t % 32 of rows t / 32 + 8 i.
template <int BM>
struct FxIgA<FX_IG_S, BM> {
    static constexpr int R = BM * FX_IG_BK / FX_IG_THREADS;
    int m0;
    __device__ __forceinline__ FxIgA(const FxIgGeom&, int m0_) : m0(m0_) {}
    __device__ __forceinline__ void load(unsigned short* s, const T* x, const FxIgGeom& g, int kt) const {
        const int col = threadIdx.x & 31, k = kt * FX_IG_BK + col;
        const bool kok = k < g.kk;
        int t[3], f[3], ci;
        fx_ig_tap(g, kok ? k : 0, t, ci);
        fx_ig_flip(g, t, f);
#pragma unroll 4
        for (int i = 0; i < R; ++i) {
            const int row = (threadIdx.x >> 5) + 8 * i, m = m0 + row;
            unsigned short v = 0;
            if (kok && m < g.m) {
                int u0[3];
                fx_ig_origin(g, m % g.opos, u0);
                const long long off = fx_ig_x_offset(g, u0, f);
                if (off >= 0) v = x[(long long)(m / g.opos) * g.xs[0] + off + ci * g.xs[4]].bits;
            }
            s[fx_swz<FX_IG_BK>(row, col)] = v;
        }
    }
};

// ---- B loaders: columns n0 .. n0 + BN of B (this group's filters) ----

template <int MODE, int BN>
struct FxIgB;

// k vectors (w's last stride 1): tile [BN][32], thread t loads rows
// t / 4 + 64 i at chunk t % 4.
template <int BN>
struct FxIgB<FX_IG_K, BN> {
    int n0;
    __device__ __forceinline__ FxIgB(const FxIgGeom&, int n0_) : n0(n0_) {}
    __device__ __forceinline__ void load(unsigned short* s, const T* w, const FxIgGeom& g, int kt) const {
        const int col = (threadIdx.x & 3) * 8, k = kt * FX_IG_BK + col;
        const bool kok = k < g.kk;
        int t[3], ci;
        fx_ig_tap(g, kok ? k : 0, t, ci);
        const long long toff = fx_ig_w_offset(g, t, ci);
#pragma unroll
        for (int v = threadIdx.x; v < BN * 4; v += FX_IG_THREADS) {
            const int row = v >> 2, n = n0 + row;
            const bool ok = kok && n < g.og;
            fx_cp_async<16>(&s[fx_swz<FX_IG_BK>(row, col)], w + (ok ? n * g.ws[0] + toff : 0), ok);
        }
    }
};

// n vectors (w's first stride 1): tile [32][BN], thread t loads columns
// n0 + 8 (t % (BN / 8)) of k rows t / (BN / 8) + (256 / (BN / 8)) i.
template <int BN>
struct FxIgB<FX_IG_MN, BN> {
    static constexpr int CH = BN / 8;
    int n0;
    __device__ __forceinline__ FxIgB(const FxIgGeom&, int n0_) : n0(n0_) {}
    __device__ __forceinline__ void load(unsigned short* s, const T* w, const FxIgGeom& g, int kt) const {
        const int n = n0 + (threadIdx.x % CH) * 8;
#pragma unroll
        for (int v = threadIdx.x; v < FX_IG_BK * CH; v += FX_IG_THREADS) {
            const int krow = v / CH, k = kt * FX_IG_BK + krow;
            const bool ok = k < g.kk && n < g.og;
            int t[3], ci;
            fx_ig_tap(g, ok ? k : 0, t, ci);
            fx_cp_async<16>(&s[fx_swz<BN>(krow, (threadIdx.x % CH) * 8)],
                            w + (ok ? n * g.ws[0] + fx_ig_w_offset(g, t, ci) : 0), ok);
        }
    }
};

// Single elements: tile [BN][32], thread t loads column t % 32 of rows
// t / 32 + 8 i.
template <int BN>
struct FxIgB<FX_IG_S, BN> {
    int n0;
    __device__ __forceinline__ FxIgB(const FxIgGeom&, int n0_) : n0(n0_) {}
    __device__ __forceinline__ void load(unsigned short* s, const T* w, const FxIgGeom& g, int kt) const {
        const int col = threadIdx.x & 31, k = kt * FX_IG_BK + col;
        const bool kok = k < g.kk;
        int t[3], ci;
        fx_ig_tap(g, kok ? k : 0, t, ci);
        const long long toff = fx_ig_w_offset(g, t, ci);
#pragma unroll
        for (int e = threadIdx.x; e < BN * FX_IG_BK; e += FX_IG_THREADS) {
            const int row = e >> 5, n = n0 + row;
            s[fx_swz<FX_IG_BK>(row, col)] = kok && n < g.og ? w[n * g.ws[0] + toff].bits : (unsigned short)0;
        }
    }
};

// One 128 x BN output tile of group blockIdx.z / g.splits (see the header).
// WM x WN warps, each owning a (128 / WM) x (BN / WN) piece.
template <int BN, int WM, int WN, int AM, int BMODE>
__device__ __forceinline__ void fx_conv_igemm(const T* x, const T* w, T* y, float* part, const FxIgGeom& g) {
    constexpr int BM = 128, BK = FX_IG_BK, ST = FX_IG_STAGES;
    constexpr int TM = BM / WM, TN = BN / WN, MI = TM / 16, NI = TN / 8;
    static_assert(WM * WN * 32 == FX_IG_THREADS && NI % 2 == 0 && MI >= 1, "tile");
    extern __shared__ __align__(16) unsigned short fx_ig_smem[];
    unsigned short* as = fx_ig_smem;
    unsigned short* bs = fx_ig_smem + ST * BM * BK;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm0 = (warp % WM) * TM, wn0 = (warp / WM) * TN;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int gi = blockIdx.z / g.splits, split = blockIdx.z % g.splits;
    const int k_tiles = (g.kk + BK - 1) / BK;
    const int kt0 = split * g.k_tiles_per_split;
    const int nk = min(k_tiles, kt0 + g.k_tiles_per_split) - kt0;
    const T* xg = x + (long long)gi * g.cg * g.xs[4];
    const T* wg = w + (long long)gi * g.og * g.ws[0];
    const FxIgA<AM, BM> la(g, m0);
    const FxIgB<BMODE, BN> lb(g, n0);

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

#pragma unroll
    for (int s = 0; s < ST - 1; ++s) {
        if (s < nk) {
            la.load(as + s * BM * BK, xg, g, kt0 + s);
            lb.load(bs + s * BN * BK, wg, g, kt0 + s);
        }
        fx_cp_async_commit();
    }
    for (int i = 0; i < nk; ++i) {
        fx_cp_async_wait<ST - 2>();
        __syncthreads();
        // Tile i + ST - 1 goes into the stage tile i - 1 used (every warp
        // is past it: the barrier above).
        const int next = i + ST - 1;
        if (next < nk) {
            la.load(as + (next % ST) * BM * BK, xg, g, kt0 + next);
            lb.load(bs + (next % ST) * BN * BK, wg, g, kt0 + next);
        }
        fx_cp_async_commit();
        const unsigned short* a = as + (i % ST) * BM * BK;
        const unsigned short* b = bs + (i % ST) * BN * BK;
#pragma unroll
        for (int ks = 0; ks < BK; ks += 16) {
            unsigned af[MI][4], bf[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                const int mr = wm0 + mi * 16;
                if (AM == FX_IG_MN) {
                    fx_ldmatrix_x4_trans(af[mi], &a[fx_swz<BM>(ks + (lane & 7) + ((lane >> 4) & 1) * 8,
                                                               mr + ((lane >> 3) & 1) * 8)]);
                } else {
                    fx_ldmatrix_x4(af[mi], &a[fx_swz<BK>(mr + (lane & 15), ks + (lane >> 4) * 8)]);
                }
            }
#pragma unroll
            for (int ni = 0; ni < NI; ni += 2) {
                const int nc = wn0 + ni * 8;
                unsigned r[4];
                if (BMODE == FX_IG_MN) {
                    fx_ldmatrix_x4_trans(r, &b[fx_swz<BN>(ks + (lane & 7) + ((lane >> 3) & 1) * 8,
                                                          nc + ((lane >> 4) & 1) * 8)]);
                } else {
                    fx_ldmatrix_x4(r, &b[fx_swz<BK>(nc + (lane & 7) + ((lane >> 4) & 1) * 8, ks + ((lane >> 3) & 1) * 8)]);
                }
                bf[ni][0] = r[0];
                bf[ni][1] = r[1];
                bf[ni + 1][0] = r[2];
                bf[ni + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) fx_mma(acc[mi][ni], af[mi], bf[ni]);
        }
    }
    fx_cp_async_wait<0>();

    // Accumulator (mi, ni) holds rows l / 4 (+ 8) and columns 2 (l % 4) (+ 1).
    const long long total = (long long)g.m * g.c_out;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = m0 + wm0 + mi * 16 + (lane >> 2) + h * 8;
            if (m >= g.m) continue;
            const int b = AM == FX_IG_MN ? m % g.batch : m / g.opos;
            int pos = AM == FX_IG_MN ? m / g.batch : m % g.opos;
            const int o2 = pos % g.out[2];
            pos /= g.out[2];
            const long long at = b * g.ys[0] + (long long)(pos / g.out[1]) * g.ys[1] +
                                 (long long)(pos % g.out[1]) * g.ys[2] + (long long)o2 * g.ys[3] +
                                 (long long)gi * g.og;
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int n = n0 + wn0 + ni * 8 + (lane & 3) * 2 + e;
                    if (n >= g.og) continue;
                    const float v = acc[mi][ni][h * 2 + e];
                    if (g.splits > 1) {
                        part[split * total + at + n] = v;
                    } else {
                        y[at + n] = fx_from_c(v);
                    }
                }
            }
        }
    }
}

#define FX_IG_KERNEL(BN, WM, WN, a, AM, b, BMODE)                                                              \
    extern "C" __global__ void __launch_bounds__(FX_IG_THREADS)                                                  \
        conv_igemm_##BN##_##a##b(const T* x, const T* w, T* y, float* part, FxIgGeom g) {                        \
        fx_conv_igemm<BN, WM, WN, AM, BMODE>(x, w, y, part, g);                                                  \
    }
#define FX_IG_KERNELS(BN, WM, WN)                    \
    FX_IG_KERNEL(BN, WM, WN, k, FX_IG_K, k, FX_IG_K)   \
    FX_IG_KERNEL(BN, WM, WN, k, FX_IG_K, n, FX_IG_MN)  \
    FX_IG_KERNEL(BN, WM, WN, k, FX_IG_K, s, FX_IG_S)   \
    FX_IG_KERNEL(BN, WM, WN, m, FX_IG_MN, k, FX_IG_K)  \
    FX_IG_KERNEL(BN, WM, WN, m, FX_IG_MN, n, FX_IG_MN) \
    FX_IG_KERNEL(BN, WM, WN, m, FX_IG_MN, s, FX_IG_S)  \
    FX_IG_KERNEL(BN, WM, WN, s, FX_IG_S, k, FX_IG_K)   \
    FX_IG_KERNEL(BN, WM, WN, s, FX_IG_S, n, FX_IG_MN)  \
    FX_IG_KERNEL(BN, WM, WN, s, FX_IG_S, s, FX_IG_S)

// Warps: 2 x 4 of 64 x 32 for 128-wide tiles, 4 x 2 of 32 x 32 and 32 x 16
// for the narrower ones.
FX_IG_KERNELS(128, 2, 4)
FX_IG_KERNELS(64, 4, 2)
FX_IG_KERNELS(32, 4, 2)

extern "C" __global__ void conv_igemm_reduce(const float* part, T* y, long long total, int splits) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        float s = 0.f;
        for (int j = 0; j < splits; ++j) s += part[j * total + i];
        y[i] = fx_from_c(s);
    }
}

#endif
