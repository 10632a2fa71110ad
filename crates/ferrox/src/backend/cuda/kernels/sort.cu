// sort.cu: sorting contiguous rows of the module dtype T (sort, argsort;
// partitions run as sorts) and binary search in a sorted sequence
// (searchsorted).
//
// Order (MLX's): every element maps to an unsigned key whose integer order
// is the sort order: NaN (either part NaN, for complex64) to the largest
// key, so NaNs come last and equal each other; -0.0 to the key of 0.0;
// floats by their sign-folded bits; signed integers with the sign bit
// flipped; complex64 as (key of the real part, key of the imaginary part);
// false before true. Sorts are stable: a bitonic network sorts (key,
// position) items, which are all distinct; radix passes are stable. The
// values written are the input elements at the sorted positions (bit for
// bit, -0.0 and NaN payloads kept).
//
// Bitonic items: for 1-, 2- and 4-byte dtypes a 32-bit key and the
// position packed in one 64-bit word (key high); for 8-byte dtypes
// (uint64, int64, float64, complex64) a 16-byte struct. The sentinel item
// (largest key and position) pads rows to a power of two and sorts after
// every real item (rows have fewer than 2^32 - 1 elements). FX_SORT_TILE
// items (32 KiB of shared memory) are sorted per block.
//
// Short rows go through a bitonic network in shared memory, with the
// "flip" first step of every merge stage (pairs (i, i ^ (k - 1)) in each
// block of k items, then half cleaners (i, i + h) for h = k/4 .. 1), all
// ascending, so every aligned segment of k items is sorted ascending after
// stage k. Longer rows are radix sorted.
//
// Kernels (rows: x is [lines, n] contiguous, 1 <= n < 2^32 - 1, lines >= 1;
// out is [lines, n] contiguous: T values, or unsigned int positions when
// arg != 0):
//   sort_block(const T* x, void* out, long long lines, long long n,
//              int log_p, int log_span, int arg)
//       short rows, by a bitonic network: p = 2^log_p >= n items, p <=
//       FX_SORT_TILE; a block sorts span = 2^log_span items (log_p <=
//       log_span <= log2 FX_SORT_TILE): span / p consecutive rows, each
//       padded to p; blocks grid-stride over the groups of rows.
//       blockDim.x = 512.
//   radix_block, radix_hist, radix_scan, radix_scan_lines, radix_scatter:
//       longer rows, by radix sort (see "Radix sorts" below).
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

// ---------------------------------------------------------------------------
// Radix sorts
// ---------------------------------------------------------------------------
//
// Least-significant-digit radix sorts over 8-bit digits of the radix key
// (fx_radix_key: fx_sort_key's order in exactly sizeof(T) bytes, so
// sizeof(T) passes), carrying the positions. Every pass is stable, so
// equal keys keep their input order: the result is the stable sort. A
// tile is FX_RADIX_TILE items (4096; 2048 for 8-byte keys), ranked by one
// block of FX_RADIX_THREADS threads: each warp ranks its run of items 32
// at a time with __match_any_sync, then the items are reordered by digit
// in shared memory, so writes to global memory are runs of one digit.
//
//   radix_block(const T* x, void* out, long long lines, long long n, int arg)
//       rows of n <= FX_RADIX_TILE items: one block sorts a row through
//       every pass in shared memory. Grid-stride over lines.
// Longer rows are cut into bpl = ceil(n / tile) tiles; one pass is three
// launches:
//   radix_hist(const T* x, const FxKey* keys, unsigned int* counts,
//              long long lines, long long n, int bpl, int shift, int first)
//       counts[line][digit][tile] = the tile's items with that digit
//       ((key >> shift) & 255); first != 0 reads the keys from x.
//       Grid-stride over lines * bpl tiles.
//   radix_scan(unsigned int* counts, unsigned int* totals, long long lines, int bpl)
//       per (line, digit): its counts over the tiles scanned exclusively
//       in place, their sum in totals[line][digit]. Grid (256, any): one
//       digit per block, grid-stride over lines in y.
//   radix_scan_lines(unsigned int* counts, unsigned int* totals, long long lines, int bpl)
//       the same for few tiles a line: one line per block, one digit per
//       thread, grid-stride over lines.
//   radix_scatter(const T* x, const FxKey* keys_in, const unsigned int* pos_in,
//                 FxKey* keys_out, unsigned int* pos_out, void* out,
//                 const unsigned int* counts, const unsigned int* totals,
//                 long long lines, long long n, int bpl, int shift,
//                 int first, int last, int arg)
//       moves each item to its place in the line after this digit: the
//       digit's start in the line (exclusive scan of totals), plus the
//       earlier tiles' items with that digit, plus its stable rank in the
//       tile. first != 0 takes keys from x and positions 0..n-1; last != 0
//       writes `out` (positions, or x at the positions) instead of
//       keys_out/pos_out. Grid-stride over lines * bpl tiles.
// All radix kernels run with blockDim.x = FX_RADIX_THREADS.

#define FX_RADIX_THREADS 256
#define FX_RADIX_WARPS (FX_RADIX_THREADS / 32)
#if FX_SORT_WIDE
#define FX_RADIX_ITEMS 8
#else
#define FX_RADIX_ITEMS 16
#endif
#define FX_RADIX_TILE (FX_RADIX_THREADS * FX_RADIX_ITEMS)
#define FX_RADIX_WARP_ITEMS (32 * FX_RADIX_ITEMS)

// The order-preserving key of a 16-bit float's bits: NaN largest, -0.0 as 0.0.
__device__ __forceinline__ unsigned int fx_h16_key(unsigned int u, bool nan) {
    if (nan) return 0xffffu;
    if ((u & 0x7fffu) == 0u) u = 0u;
    return (u & 0x8000u) ? (~u & 0xffffu) : (u | 0x8000u);
}

// fx_sort_key's order, in sizeof(T) bytes.
__device__ __forceinline__ FxKey fx_radix_key(T v) {
#if defined(FX_DTYPE_F16)
    return fx_h16_key(v.bits, (v.bits & 0x7fffu) > 0x7c00u);
#elif defined(FX_DTYPE_BF16)
    return fx_h16_key(v.bits, (v.bits & 0x7fffu) > 0x7f80u);
#elif defined(FX_DTYPE_I8)
    return (unsigned int)(unsigned char)v ^ 0x80u;
#elif defined(FX_DTYPE_I16)
    return (unsigned int)(unsigned short)v ^ 0x8000u;
#else
    return fx_sort_key(v);
#endif
}

__device__ __forceinline__ unsigned int fx_radix_digit(FxKey key, int shift) {
    return (unsigned int)(key >> shift) & 255u;
}

// Exclusive scan of one value per thread over the block (FX_RADIX_THREADS
// threads); *total gets the sum. Synchronizes.
__device__ __forceinline__ unsigned int fx_radix_block_scan(unsigned int v, unsigned int* warp_sums,
                                                            unsigned int* total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned int inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        unsigned int y = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o) inc += y;
    }
    if (lane == 31) warp_sums[warp] = inc;
    __syncthreads();
    unsigned int before = 0u, all = 0u;
    for (int w = 0; w < FX_RADIX_WARPS; ++w) {
        unsigned int s = warp_sums[w];
        if (w < warp) before += s;
        all += s;
    }
    __syncthreads();
    *total = all;
    return before + inc - v;
}

// Shared memory of one tile's ranking and reordering.
struct FxRadixShared {
    unsigned int warp_count[FX_RADIX_WARPS][256];  // per warp and digit: count, then start in the tile
    unsigned int tile_start[256];                  // per digit: its start in the tile
    unsigned int digit_base[256];                  // per digit: where its run goes in the line
    unsigned int warp_sums[FX_RADIX_WARPS];
    FxKey keys[FX_RADIX_TILE];
    unsigned int pos[FX_RADIX_TILE];
};

// The stable place of each of the tile's items ordered by digit: item r of
// this thread is the tile's item warp * FX_RADIX_WARP_ITEMS + r * 32 + lane,
// valid when below `count`. Leaves sh.tile_start; synchronizes.
__device__ __forceinline__ void fx_radix_rank(FxRadixShared& sh, const FxKey (&key)[FX_RADIX_ITEMS], int count,
                                              int shift, unsigned int (&place)[FX_RADIX_ITEMS]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned int lanes_below = (1u << lane) - 1u;
    for (int i = threadIdx.x; i < FX_RADIX_WARPS * 256; i += FX_RADIX_THREADS) (&sh.warp_count[0][0])[i] = 0u;
    __syncthreads();
    const int warp_start = warp * FX_RADIX_WARP_ITEMS;
#pragma unroll
    for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
        const bool valid = warp_start + r * 32 + lane < count;
        const unsigned int digit = valid ? fx_radix_digit(key[r], shift) : 256u;
        // The lanes holding the same digit (valid lanes only): 9 ballots.
        unsigned int peers = __ballot_sync(0xffffffffu, valid);
        if (!valid) peers = ~peers;
#pragma unroll
        for (int b = 0; b < 8; ++b) {
            const bool bit = (digit >> b) & 1u;
            const unsigned int ones = __ballot_sync(0xffffffffu, bit);
            peers &= bit ? ones : ~ones;
        }
        if (valid) place[r] = sh.warp_count[warp][digit] + __popc(peers & lanes_below);
        __syncwarp();
        if (valid && (__ffs(peers) - 1) == lane) sh.warp_count[warp][digit] += __popc(peers);
        __syncwarp();
    }
    __syncthreads();
    {
        const int d = threadIdx.x;
        unsigned int run = 0u;
        for (int w = 0; w < FX_RADIX_WARPS; ++w) {
            const unsigned int k = sh.warp_count[w][d];
            sh.warp_count[w][d] = run;
            run += k;
        }
        unsigned int all;
        sh.tile_start[d] = fx_radix_block_scan(run, sh.warp_sums, &all);
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
        if (warp_start + r * 32 + lane < count) {
            const unsigned int digit = fx_radix_digit(key[r], shift);
            place[r] += sh.tile_start[digit] + sh.warp_count[warp][digit];
        }
    }
}

extern "C" __global__ void __launch_bounds__(FX_RADIX_THREADS)
    radix_block(const T* x, void* out, long long lines, long long n, int arg) {
    __shared__ FxRadixShared sh;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warp_start = warp * FX_RADIX_WARP_ITEMS;
    const int count = (int)n;
    for (long long line = blockIdx.x; line < lines; line += gridDim.x) {
        const long long base = line * n;
        FxKey key[FX_RADIX_ITEMS];
        unsigned int pos[FX_RADIX_ITEMS], place[FX_RADIX_ITEMS];
#pragma unroll
        for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
            const int i = warp_start + r * 32 + lane;
            pos[r] = (unsigned int)i;
            if (i < count) key[r] = fx_radix_key(x[base + i]);
        }
        for (int shift = 0; shift < 8 * (int)sizeof(T); shift += 8) {
            fx_radix_rank(sh, key, count, shift, place);
#pragma unroll
            for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
                if (warp_start + r * 32 + lane < count) {
                    sh.keys[place[r]] = key[r];
                    sh.pos[place[r]] = pos[r];
                }
            }
            __syncthreads();
#pragma unroll
            for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
                const int i = warp_start + r * 32 + lane;
                if (i < count) {
                    key[r] = sh.keys[i];
                    pos[r] = sh.pos[i];
                }
            }
            __syncthreads();
        }
        // Coalesced writes in row order (each thread's items are strided by 32).
#pragma unroll
        for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
            const int i = warp_start + r * 32 + lane;
            if (i < count) {
                if (arg) {
                    ((unsigned int*)out)[base + i] = pos[r];
                } else {
                    ((T*)out)[base + i] = x[base + pos[r]];
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(FX_RADIX_THREADS)
    radix_hist(const T* x, const FxKey* keys, unsigned int* counts, long long lines, long long n, int bpl, int shift,
               int first) {
    __shared__ unsigned int hist[FX_RADIX_WARPS][256];
    const int warp = threadIdx.x >> 5;
    const long long tiles = lines * bpl;
    for (long long c = blockIdx.x; c < tiles; c += gridDim.x) {
        for (int i = threadIdx.x; i < FX_RADIX_WARPS * 256; i += blockDim.x) (&hist[0][0])[i] = 0u;
        __syncthreads();
        const long long line = c / bpl, tile = c - line * bpl;
        const long long start = tile * FX_RADIX_TILE;
        const long long end = min(n, start + FX_RADIX_TILE);
        const long long base = line * n;
        for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
            FxKey key = first ? fx_radix_key(x[base + i]) : keys[base + i];
            atomicAdd(&hist[warp][fx_radix_digit(key, shift)], 1u);
        }
        __syncthreads();
        {
            const int d = threadIdx.x;
            unsigned int sum = 0u;
            for (int w = 0; w < FX_RADIX_WARPS; ++w) sum += hist[w][d];
            counts[(line * 256 + d) * bpl + tile] = sum;
        }
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(FX_RADIX_THREADS)
    radix_scan(unsigned int* counts, unsigned int* totals, long long lines, int bpl) {
    __shared__ unsigned int warp_sums[FX_RADIX_WARPS];
    const int d = blockIdx.x;
    for (long long line = blockIdx.y; line < lines; line += gridDim.y) {
        unsigned int* row = counts + (line * 256 + d) * bpl;
        unsigned int carry = 0u;
        for (int start = 0; start < bpl; start += FX_RADIX_THREADS) {
            const int i = start + threadIdx.x;
            const unsigned int v = i < bpl ? row[i] : 0u;
            unsigned int sum;
            const unsigned int ex = fx_radix_block_scan(v, warp_sums, &sum);
            if (i < bpl) row[i] = carry + ex;
            carry += sum;
        }
        if (threadIdx.x == 0) totals[line * 256 + d] = carry;
    }
}

extern "C" __global__ void __launch_bounds__(FX_RADIX_THREADS)
    radix_scan_lines(unsigned int* counts, unsigned int* totals, long long lines, int bpl) {
    const int d = threadIdx.x;
    for (long long line = blockIdx.x; line < lines; line += gridDim.x) {
        unsigned int* row = counts + (line * 256 + d) * bpl;
        unsigned int carry = 0u;
        for (int i = 0; i < bpl; ++i) {
            const unsigned int v = row[i];
            row[i] = carry;
            carry += v;
        }
        totals[line * 256 + d] = carry;
    }
}

// Sorting values (not positions) of dtypes up to 4 bytes, the passes carry
// each element's bits rather than its position, so the last pass writes
// them without a gather.
#define FX_RADIX_CARRIES_BITS (!FX_SORT_WIDE)

__device__ __forceinline__ unsigned int fx_radix_bits(T v) {
    unsigned int u = 0u;
    memcpy(&u, &v, sizeof(T));
    return u;
}

__device__ __forceinline__ T fx_radix_from_bits(unsigned int u) {
    T v;
    memcpy(&v, &u, sizeof(T));
    return v;
}

extern "C" __global__ void __launch_bounds__(FX_RADIX_THREADS)
    radix_scatter(const T* x, const FxKey* keys_in, const unsigned int* pos_in, FxKey* keys_out,
                  unsigned int* pos_out, void* out, const unsigned int* counts, const unsigned int* totals,
                  long long lines, long long n, int bpl, int shift, int first, int last, int arg) {
    __shared__ FxRadixShared sh;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long tiles = lines * bpl;
    for (long long c = blockIdx.x; c < tiles; c += gridDim.x) {
        const long long line = c / bpl, tile = c - line * bpl;
        const long long base = line * n, start = tile * FX_RADIX_TILE;
        const int count = (int)min((long long)FX_RADIX_TILE, n - start);
        const int warp_start = warp * FX_RADIX_WARP_ITEMS;
        FxKey key[FX_RADIX_ITEMS];
        unsigned int pos[FX_RADIX_ITEMS], place[FX_RADIX_ITEMS];
#pragma unroll
        for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
            const int i = warp_start + r * 32 + lane;
            if (i < count) {
                key[r] = first ? fx_radix_key(x[base + start + i]) : keys_in[base + start + i];
                if (first) {
#if FX_RADIX_CARRIES_BITS
                    pos[r] = arg ? (unsigned int)(start + i) : fx_radix_bits(x[base + start + i]);
#else
                    pos[r] = (unsigned int)(start + i);
#endif
                } else {
                    pos[r] = pos_in[base + start + i];
                }
            }
        }
        fx_radix_rank(sh, key, count, shift, place);
#pragma unroll
        for (int r = 0; r < FX_RADIX_ITEMS; ++r) {
            if (warp_start + r * 32 + lane < count) {
                sh.keys[place[r]] = key[r];
                sh.pos[place[r]] = pos[r];
            }
        }
        {
            const int d = threadIdx.x;
            unsigned int all;
            const unsigned int line_start = fx_radix_block_scan(totals[line * 256 + d], sh.warp_sums, &all);
            // The digit's run starts at tile_start[d] in the tile and lands here.
            sh.digit_base[d] = line_start + counts[(line * 256 + d) * bpl + tile] - sh.tile_start[d];
        }
        __syncthreads();
        for (int i = threadIdx.x; i < count; i += FX_RADIX_THREADS) {
            const FxKey k = sh.keys[i];
            const unsigned int p = sh.pos[i];
            const long long dest = base + sh.digit_base[fx_radix_digit(k, shift)] + i;
            if (!last) {
                keys_out[dest] = k;
                pos_out[dest] = p;
            } else if (arg) {
                ((unsigned int*)out)[dest] = p;
            } else {
#if FX_RADIX_CARRIES_BITS
                ((T*)out)[dest] = fx_radix_from_bits(p);
#else
                ((T*)out)[dest] = x[base + p];
#endif
            }
        }
        __syncthreads();
    }
}
