// copy.cu: casting copies from the module dtype T (the SOURCE type), a
// same-type tiled transpose, and byte ranges moved in batches
// (copy_segments, at the end).
//
// Kernels (blockDim 256, any gridDim.x >= 1; n may be 0; y contiguous):
//   to_<dst>_contig (const T* x, DST* y, long long n)              x contiguous
//   to_<dst>_strided(const T* x, DST* y, long long n, Strided1 s)  x at offsets of s
// for <dst> in bool u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64 c64, with
// DST the C type of that dtype (fx_bool ... fx_c64). Casts follow
// Element::from_scalar: wrapping between integers, float -> int truncates and
// saturates (NaN -> 0), int -> float through f64, complex -> real takes the
// real part, anything -> bool is != 0, real -> complex is (x as f32, 0).
// Same-dtype copies move the bits unchanged.
//
//   transpose(const T* x, T* y, long long batch, long long rows, long long cols,
//             long long sb, long long sr, long long sc)
//       y[(b*rows + i)*cols + j] = x[b*sb + i*sr + j*sc]
//   blockDim (32, 8). Any grid works: blocks take the tiles in turn by their
//   linear block number. The nominal grid is (ceil(cols/32), ceil(rows/32),
//   batch); a grid with y capped at about 64 is faster (fewer, longer-lived
//   blocks: on an H200, 16384 x 16384 f32 moves ~94% of memcpy bandwidth
//   with grid (512, 64) against ~74% with (512, 512)).
//   Meant for sr == 1: tiles are read along i and written along j through
//   shared memory, so both sides are coalesced. With sr == 1 and rows, cols,
//   sb, sc and both pointers aligned to runs of VW elements (VW = 4 for
//   1-byte, 2 for 2- and 4-byte types) each lane moves VW elements at once
//   over (32 VW)^2 tiles; otherwise 32 x 32 tiles of single elements.

template <class D>
struct FxCastTo {
    __device__ __forceinline__ typename D::type operator()(T v) const { return fx_cast<D>(v); }
};

#define FX_COPY_TO(NAME, D)                                                                                 \
    extern "C" __global__ void to_##NAME##_contig(const T* x, D::type* y, long long n) {                   \
        fx_map1(x, y, n, FxCastTo<D>());                                                                    \
    }                                                                                                       \
    extern "C" __global__ void to_##NAME##_strided(const T* x, D::type* y, long long n, Strided1 s) {      \
        fx_map1_strided(x, y, n, s, FxCastTo<D>());                                                         \
    }

FX_COPY_TO(bool, DtBool)
FX_COPY_TO(u8, DtU8)
FX_COPY_TO(u16, DtU16)
FX_COPY_TO(u32, DtU32)
FX_COPY_TO(u64, DtU64)
FX_COPY_TO(i8, DtI8)
FX_COPY_TO(i16, DtI16)
FX_COPY_TO(i32, DtI32)
FX_COPY_TO(i64, DtI64)
FX_COPY_TO(f16, DtF16)
FX_COPY_TO(bf16, DtBF16)
FX_COPY_TO(f32, DtF32)
FX_COPY_TO(f64, DtF64)
FX_COPY_TO(c64, DtC64)

#define FX_TILE_ROWS 8  // blockDim.y; blockDim.x is 32

// Blocks take the tiles in turn by their linear block number (any grid
// works); loop bounds are uniform over a block, so the barriers are safe.
__device__ __forceinline__ long long fx_block_id() {
    return blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
}
__device__ __forceinline__ long long fx_block_count() { return (long long)gridDim.x * gridDim.y * gridDim.z; }

// General transpose: 32 x 32 tiles, one element per thread and row pass.
__device__ __forceinline__ void fx_transpose_scalar(const T* x, T* y, long long batch, long long rows, long long cols,
                                                    long long sb, long long sr, long long sc) {
    constexpr int TW = 32, NJ = TW / FX_TILE_ROWS;
    // +1 column of padding keeps the column-wise accesses free of bank conflicts.
    __shared__ T tile[TW][TW + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long tiles_r = (rows + TW - 1) / TW, tiles_c = (cols + TW - 1) / TW;
    const long long per_batch = tiles_r * tiles_c, total = per_batch * batch;
#pragma unroll 1
    for (long long tt = fx_block_id(); tt < total; tt += fx_block_count()) {
        unsigned long long b, rem, ti, tj;
        fx_divmod((unsigned long long)tt, (unsigned long long)per_batch, b, rem);
        fx_divmod(rem, (unsigned long long)tiles_c, ti, tj);
        const long long i0 = (long long)ti * TW, j0 = (long long)tj * TW;
        const T* xb = x + (long long)b * sb + i0 * sr + j0 * sc;
        T* yb = y + ((long long)b * rows + i0) * cols + j0;
        // Read: consecutive threads take consecutive i; all loads before the shared stores.
        const bool i_ok = i0 + tx < rows;
        T v[NJ];
#pragma unroll
        for (int k = 0; k < NJ; ++k) {
            const int jj = ty + FX_TILE_ROWS * k;
            if (i_ok && j0 + jj < cols) v[k] = xb[tx * sr + jj * sc];
        }
#pragma unroll
        for (int k = 0; k < NJ; ++k) {
            const int jj = ty + FX_TILE_ROWS * k;
            if (i_ok && j0 + jj < cols) tile[jj][tx] = v[k];
        }
        __syncthreads();
        // Write: consecutive threads take consecutive j of row i.
        const bool j_ok = j0 + tx < cols;
#pragma unroll
        for (int k = 0; k < NJ; ++k) {
            const int ii = ty + FX_TILE_ROWS * k;
            if (j_ok && i0 + ii < rows) yb[(long long)ii * cols + tx] = tile[tx][ii];
        }
        __syncthreads();
    }
}

// Fast path for sr == 1 with everything aligned to runs of VW elements:
// TW x TW tiles (TW = 32 VW); a warp reads a row of TW elements of x (one
// VW-element vector per lane) and writes a row of TW elements of y, so each
// access is a long contiguous segment, and every thread keeps TW/8 vector
// loads in flight.
template <int VW>
__device__ __forceinline__ void fx_transpose_vec(const T* x, T* y, long long batch, long long rows, long long cols,
                                                 long long sb, long long sc) {
    constexpr int TW = 32 * VW, NJ = TW / FX_TILE_ROWS;
    __shared__ T tile[TW][TW + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long tiles_r = (rows + TW - 1) / TW, tiles_c = (cols + TW - 1) / TW;
    const long long per_batch = tiles_r * tiles_c, total = per_batch * batch;
#pragma unroll 1
    for (long long tt = fx_block_id(); tt < total; tt += fx_block_count()) {
        unsigned long long b, rem, ti, tj;
        fx_divmod((unsigned long long)tt, (unsigned long long)per_batch, b, rem);
        fx_divmod(rem, (unsigned long long)tiles_c, ti, tj);
        const long long i0 = (long long)ti * TW, j0 = (long long)tj * TW;
        const T* xb = x + (long long)b * sb + i0 + j0 * sc;
        T* yb = y + ((long long)b * rows + i0) * cols + j0;
        // rows and cols are multiples of VW: a vector is wholly inside or outside.
        const bool i_ok = i0 + VW * tx < rows;
        FxPack<T, VW> v[NJ];
#pragma unroll
        for (int k = 0; k < NJ; ++k) {
            const int jj = ty + FX_TILE_ROWS * k;
            if (i_ok && j0 + jj < cols) v[k].load(xb + jj * sc + VW * tx);
        }
#pragma unroll
        for (int k = 0; k < NJ; ++k) {
            const int jj = ty + FX_TILE_ROWS * k;
            if (i_ok && j0 + jj < cols) {
#pragma unroll
                for (int e = 0; e < VW; ++e) tile[jj][VW * tx + e] = v[k].v[e];
            }
        }
        __syncthreads();
        const bool j_ok = j0 + VW * tx < cols;
#pragma unroll
        for (int k = 0; k < NJ; ++k) {
            const int ii = ty + FX_TILE_ROWS * k;
            if (j_ok && i0 + ii < rows) {
                FxPack<T, VW> w;
#pragma unroll
                for (int e = 0; e < VW; ++e) w.v[e] = tile[VW * tx + e][ii];
                w.store(yb + (long long)ii * cols + VW * tx);
            }
        }
        __syncthreads();
    }
}

// Vector width of the fast path (1: none; 8-byte types are fast as scalars).
#define FX_TR_VW ((int)sizeof(T) == 1 ? 4 : ((int)sizeof(T) <= 4 ? 2 : 1))

// Resident blocks per SM the register allocation allows for: the most
// that compile without spills (measured with ptxas for each element size).
#define FX_TR_MIN_BLOCKS ((int)sizeof(T) == 1 ? 4 : ((int)sizeof(T) == 4 ? 6 : 8))

extern "C" __global__ void __launch_bounds__(256, FX_TR_MIN_BLOCKS)
    transpose(const T* x, T* y, long long batch, long long rows, long long cols, long long sb, long long sr,
              long long sc) {
    constexpr int VW = FX_TR_VW;
    if constexpr (VW > 1) {
        if (sr == 1 && rows % VW == 0 && cols % VW == 0 && sc % VW == 0 && sb % VW == 0 &&
            fx_aligned(x, VW * sizeof(T)) && fx_aligned(y, VW * sizeof(T))) {
            fx_transpose_vec<VW>(x, y, batch, rows, cols, sb, sc);
            return;
        }
    }
    fx_transpose_scalar(x, y, batch, rows, cols, sb, sr, sc);
}

// Many byte ranges moved by one launch (the inputs and outputs of a
// replayed CUDA graph; graph.rs):
//   copy_segments(FxSegments segs)
//       moves segs.bytes[i] bytes from segs.src[i] to segs.dst[i] for
//       i < segs.count; blockDim 256, one block per FX_SEGMENT_CHUNK bytes of
//       a segment: block b copies chunk b - first_chunk[i] of the segment i
//       with first_chunk[i] <= b < first_chunk[i + 1] (gridDim.x is
//       first_chunk[count]). 16-byte packs where both ends are aligned.
#define FX_SEGMENTS 96
#define FX_SEGMENT_CHUNK 32768

struct FxSegments {
    unsigned long long src[FX_SEGMENTS];
    unsigned long long dst[FX_SEGMENTS];
    unsigned long long bytes[FX_SEGMENTS];
    unsigned int first_chunk[FX_SEGMENTS + 1];
    int count;
};

extern "C" __global__ void copy_segments(const FxSegments segs) {
    const unsigned int b = blockIdx.x;
    int lo = 0, hi = segs.count - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (segs.first_chunk[mid] <= b) lo = mid;
        else hi = mid - 1;
    }
    const unsigned long long begin = (unsigned long long)(b - segs.first_chunk[lo]) * FX_SEGMENT_CHUNK;
    const unsigned long long left = segs.bytes[lo] - begin;
    const unsigned long long n = left < FX_SEGMENT_CHUNK ? left : FX_SEGMENT_CHUNK;
    const unsigned char* src = reinterpret_cast<const unsigned char*>(segs.src[lo]) + begin;
    unsigned char* dst = reinterpret_cast<unsigned char*>(segs.dst[lo]) + begin;
    unsigned long long done = 0;
    if (((reinterpret_cast<unsigned long long>(src) | reinterpret_cast<unsigned long long>(dst)) & 15) == 0) {
        const unsigned long long packs = n / 16;
        for (unsigned long long i = threadIdx.x; i < packs; i += blockDim.x)
            reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
        done = packs * 16;
    }
    for (unsigned long long i = done + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}
