// sort.cu: sorting contiguous rows of the module dtype T (sort, argsort;
// partitions run as sorts) and binary search in a sorted sequence
// (searchsorted).
//
// Order (MLX's): every element maps to an unsigned key whose integer order
// is the sort order: NaN (either part NaN, for complex64) to the largest
// key, so NaNs come last and equal each other; -0.0 to the key of 0.0;
// floats by their sign-folded bits; signed integers with the sign bit
// flipped; complex64 as (key of the real part, key of the imaginary part);
// false before true. A row is sorted as (key, position) items, so items
// are all distinct and any sorting network gives the stable order. The
// values written are the input elements at the sorted positions (bit for
// bit, -0.0 and NaN payloads kept).
//
// Items: for 1-, 2- and 4-byte dtypes a 32-bit key and the position packed
// in one 64-bit word (key high); for 8-byte dtypes (uint64, int64, float64,
// complex64) a 16-byte struct. The sentinel item (largest key and
// position) pads rows to a power of two and sorts after every real item
// (rows have fewer than 2^32 - 1 elements). FX_SORT_TILE items (32 KiB of
// shared memory) are sorted per block.
//
// Sorting network: bitonic sort with the "flip" first step of every merge
// stage (pairs (i, i ^ (k - 1)) in each block of k items, then half
// cleaners (i, i + h) for h = k/4 .. 1), all ascending, so every aligned
// segment of k items is sorted ascending after stage k.
//
// Kernels (rows: x is [lines, n] contiguous, 1 <= n < 2^32 - 1, lines >= 1;
// out is [lines, n] contiguous: T values, or unsigned int positions when
// arg != 0):
//   sort_block(const T* x, void* out, long long lines, long long n,
//              int log_p, int log_span, int arg)
//       rows with p = 2^log_p >= n items, p <= FX_SORT_TILE; a block sorts
//       span = 2^log_span items (log_p <= log_span <= log2 FX_SORT_TILE):
//       span / p consecutive rows, each padded to p; blocks grid-stride over
//       the groups of rows. blockDim.x = 512.
//   sort_init(const T* x, FxItem* items, long long lines, long long n, int log_p)
//       items: [lines, p] with p = 2^log_p > FX_SORT_TILE: row r's item i
//       is (key(x[r, i]), i) for i < n, the sentinel after. Any 1-D launch.
//   sort_tiles(FxItem* items, long long tiles)
//       sorts each consecutive FX_SORT_TILE items ascending (merge stages up
//       to FX_SORT_TILE). blockDim.x = 512, grid-stride over tiles.
//   sort_step(FxItem* items, long long pairs, int log_k, int log_h, int flip)
//       one global step of merge stage k = 2^log_k over `pairs` = half the
//       items: flip != 0 compares (i, i ^ (k - 1)) with log_h = log_k - 1,
//       otherwise the half cleaner (i, i + 2^log_h). Any 1-D launch.
//   sort_merge(FxItem* items, long long tiles)
//       the half cleaners h = FX_SORT_TILE / 2 .. 1 inside each tile (the
//       end of a merge stage k > FX_SORT_TILE). blockDim.x = 512.
//   sort_write(const T* x, const FxItem* items, void* out, long long lines,
//              long long n, int log_p, int arg)
//       out[r, i] = position of item (r, i), or x[r, position]. Any 1-D launch.
//   searchsorted(const T* seq, long long n, const T* v, unsigned int* out,
//                long long count, int right)
//       seq: n contiguous elements sorted in the order above; v: count
//       contiguous values. out[g] = the number of elements of seq whose key
//       is below v[g]'s (right != 0: not above it). Any 1-D launch.

#define FX_SORT_THREADS 512

#if defined(FX_DTYPE_U64) || defined(FX_DTYPE_I64) || defined(FX_DTYPE_F64) || FX_IS_COMPLEX
#define FX_SORT_WIDE 1
#define FX_SORT_TILE 2048
#define FX_SORT_LOG_TILE 11
typedef unsigned long long FxKey;
struct alignas(16) FxItem {
    unsigned long long key;
    unsigned int idx;
    unsigned int pad;
};
__device__ __forceinline__ FxItem fx_item(FxKey key, unsigned int idx) {
    FxItem it;
    it.key = key;
    it.idx = idx;
    it.pad = 0u;
    return it;
}
__device__ __forceinline__ FxItem fx_item_sentinel() { return fx_item(~0ull, 0xffffffffu); }
__device__ __forceinline__ bool fx_item_less(const FxItem& a, const FxItem& b) {
    return a.key < b.key || (a.key == b.key && a.idx < b.idx);
}
__device__ __forceinline__ unsigned int fx_item_idx(const FxItem& a) { return a.idx; }
#else
#define FX_SORT_WIDE 0
#define FX_SORT_TILE 4096
#define FX_SORT_LOG_TILE 12
typedef unsigned int FxKey;
typedef unsigned long long FxItem;
__device__ __forceinline__ FxItem fx_item(FxKey key, unsigned int idx) {
    return ((unsigned long long)key << 32) | (unsigned long long)idx;
}
__device__ __forceinline__ FxItem fx_item_sentinel() { return ~0ull; }
__device__ __forceinline__ bool fx_item_less(FxItem a, FxItem b) { return a < b; }
__device__ __forceinline__ unsigned int fx_item_idx(FxItem a) { return (unsigned int)a; }
#endif

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

// Order-preserving key of a float: NaN largest, -0.0 as 0.0.
__device__ __forceinline__ unsigned int fx_f32_key(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
    if ((u << 1) == 0u) u = 0u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ unsigned long long fx_f64_key(double d) {
    unsigned long long u = (unsigned long long)__double_as_longlong(d);
    if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return ~0ull;
    if ((u << 1) == 0ull) u = 0ull;
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}

__device__ __forceinline__ FxKey fx_sort_key(T v) {
#if FX_IS_COMPLEX
    if (fx_cisnan(v)) return ~0ull;
    return ((unsigned long long)fx_f32_key(v.re) << 32) | (unsigned long long)fx_f32_key(v.im);
#elif defined(FX_DTYPE_F64)
    return fx_f64_key(v);
#elif FX_IS_FLOAT
    return fx_f32_key(fx_to_c(v));
#elif defined(FX_DTYPE_I64)
    return (unsigned long long)v ^ 0x8000000000000000ull;
#elif FX_IS_SIGNED
    return (unsigned int)(int)v ^ 0x80000000u;
#elif FX_IS_BOOL
    return v != 0 ? 1u : 0u;
#else
    return (FxKey)v;
#endif
}

// ---------------------------------------------------------------------------
// The bitonic network in shared memory
// ---------------------------------------------------------------------------

__device__ __forceinline__ void fx_sort_cas(FxItem* s, int i, int j) {
    FxItem a = s[i], b = s[j];
    if (fx_item_less(b, a)) {
        s[i] = b;
        s[j] = a;
    }
}

// Half cleaners h = 2^log_h .. 1 over the first 2^log_len items of s.
__device__ __forceinline__ void fx_sort_half_cleaners(FxItem* s, int log_len, int log_h) {
    const int pairs = 1 << (log_len - 1);
    for (int lh = log_h; lh >= 0; --lh) {
        for (int t = threadIdx.x; t < pairs; t += blockDim.x) {
            int i = ((t >> lh) << (lh + 1)) | (t & ((1 << lh) - 1));
            fx_sort_cas(s, i, i + (1 << lh));
        }
        __syncthreads();
    }
}

// Sorts every aligned segment of 2^log_p items among the first 2^log_len
// items of s ascending (merge stages k = 2 .. 2^log_p). The caller has
// synchronized after filling s; returns synchronized.
__device__ __forceinline__ void fx_sort_segments(FxItem* s, int log_len, int log_p) {
    const int pairs = 1 << (log_len - 1);
    for (int lk = 1; lk <= log_p; ++lk) {
        const int k = 1 << lk;
        for (int t = threadIdx.x; t < pairs; t += blockDim.x) {
            int i = ((t >> (lk - 1)) << lk) | (t & ((k >> 1) - 1));
            fx_sort_cas(s, i, i ^ (k - 1));
        }
        __syncthreads();
        if (lk >= 2) fx_sort_half_cleaners(s, log_len, lk - 2);
    }
}

// ---------------------------------------------------------------------------
// Rows that fit in a block
// ---------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(FX_SORT_THREADS)
    sort_block(const T* x, void* out, long long lines, long long n, int log_p, int log_span, int arg) {
    __shared__ FxItem s[FX_SORT_TILE];
    const int span = 1 << log_span;
    const int p_mask = (1 << log_p) - 1;
    const long long per = (long long)(span >> log_p);
    const long long groups = (lines + per - 1) / per;
    for (long long g = blockIdx.x; g < groups; g += gridDim.x) {
        const long long first = g * per;
        for (int t = threadIdx.x; t < span; t += blockDim.x) {
            long long line = first + (t >> log_p);
            long long pos = t & p_mask;
            FxItem it = fx_item_sentinel();
            if (line < lines && pos < n) it = fx_item(fx_sort_key(x[line * n + pos]), (unsigned int)pos);
            s[t] = it;
        }
        __syncthreads();
        if (log_span > 0) fx_sort_segments(s, log_span, log_p);
        for (int t = threadIdx.x; t < span; t += blockDim.x) {
            long long line = first + (t >> log_p);
            long long pos = t & p_mask;
            if (line < lines && pos < n) {
                unsigned int idx = fx_item_idx(s[t]);
                if (arg) {
                    ((unsigned int*)out)[line * n + pos] = idx;
                } else {
                    ((T*)out)[line * n + pos] = x[line * n + idx];
                }
            }
        }
        __syncthreads();
    }
}

// ---------------------------------------------------------------------------
// Longer rows: padded item arrays, tiles sorted in shared memory, global
// merge steps
// ---------------------------------------------------------------------------

extern "C" __global__ void sort_init(const T* x, FxItem* items, long long lines, long long n, int log_p) {
    const long long total = lines << log_p;
    const long long p_mask = (1ll << log_p) - 1;
    for (long long g = fx_thread_id(); g < total; g += fx_thread_count()) {
        long long line = g >> log_p;
        long long pos = g & p_mask;
        items[g] = pos < n ? fx_item(fx_sort_key(x[line * n + pos]), (unsigned int)pos) : fx_item_sentinel();
    }
}

extern "C" __global__ void __launch_bounds__(FX_SORT_THREADS) sort_tiles(FxItem* items, long long tiles) {
    __shared__ FxItem s[FX_SORT_TILE];
    for (long long c = blockIdx.x; c < tiles; c += gridDim.x) {
        FxItem* tile = items + c * FX_SORT_TILE;
        for (int t = threadIdx.x; t < FX_SORT_TILE; t += blockDim.x) s[t] = tile[t];
        __syncthreads();
        fx_sort_segments(s, FX_SORT_LOG_TILE, FX_SORT_LOG_TILE);
        for (int t = threadIdx.x; t < FX_SORT_TILE; t += blockDim.x) tile[t] = s[t];
        __syncthreads();
    }
}

extern "C" __global__ void sort_step(FxItem* items, long long pairs, int log_k, int log_h, int flip) {
    const long long h_mask = (1ll << log_h) - 1;
    const long long k_mask = (1ll << log_k) - 1;
    for (long long t = fx_thread_id(); t < pairs; t += fx_thread_count()) {
        long long i = ((t >> log_h) << (log_h + 1)) | (t & h_mask);
        long long j = flip ? (i ^ k_mask) : (i + (1ll << log_h));
        FxItem a = items[i], b = items[j];
        if (fx_item_less(b, a)) {
            items[i] = b;
            items[j] = a;
        }
    }
}

extern "C" __global__ void __launch_bounds__(FX_SORT_THREADS) sort_merge(FxItem* items, long long tiles) {
    __shared__ FxItem s[FX_SORT_TILE];
    for (long long c = blockIdx.x; c < tiles; c += gridDim.x) {
        FxItem* tile = items + c * FX_SORT_TILE;
        for (int t = threadIdx.x; t < FX_SORT_TILE; t += blockDim.x) s[t] = tile[t];
        __syncthreads();
        fx_sort_half_cleaners(s, FX_SORT_LOG_TILE, FX_SORT_LOG_TILE - 1);
        for (int t = threadIdx.x; t < FX_SORT_TILE; t += blockDim.x) tile[t] = s[t];
        __syncthreads();
    }
}

extern "C" __global__ void sort_write(const T* x, const FxItem* items, void* out, long long lines, long long n,
                                      int log_p, int arg) {
    const long long total = lines * n;
    for (long long g = fx_thread_id(); g < total; g += fx_thread_count()) {
        unsigned long long line, pos;
        fx_divmod((unsigned long long)g, (unsigned long long)n, line, pos);
        unsigned int idx = fx_item_idx(items[((long long)line << log_p) + (long long)pos]);
        if (arg) {
            ((unsigned int*)out)[g] = idx;
        } else {
            ((T*)out)[g] = x[(long long)line * n + idx];
        }
    }
}

// ---------------------------------------------------------------------------
// searchsorted
// ---------------------------------------------------------------------------

extern "C" __global__ void searchsorted(const T* seq, long long n, const T* v, unsigned int* out, long long count,
                                        int right) {
    for (long long g = fx_thread_id(); g < count; g += fx_thread_count()) {
        const FxKey key = fx_sort_key(v[g]);
        unsigned long long lo = 0, hi = (unsigned long long)n;
        while (lo < hi) {
            unsigned long long mid = lo + ((hi - lo) >> 1);
            FxKey m = fx_sort_key(seq[mid]);
            bool below = right ? (m <= key) : (m < key);
            if (below) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        out[g] = (unsigned int)lo;
    }
}
