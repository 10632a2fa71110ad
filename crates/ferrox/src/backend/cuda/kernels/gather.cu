// gather.cu: MLX's gather and scatter for the module dtype T (see
// backend/cpu/gather.rs for the semantics).
//
// The host passes each index array as a contiguous int64 buffer over the
// index shape I (n_idx elements), with the stride, extent and last valid
// slice start of the axis it indexes (FxIndices); the slice of extents
// slice_n elements is walked through the Strided1 `s` (its strides those of
// the indexed buffer). Element (i, j), i < n_idx, j < slice_n, sits at
// fx_index_base(g, i) + fx_offset(j, s).
//
// Kernels (blockDim 256, any gridDim.x >= 1; n_idx * slice_n may be 0):
//   gather(const T* x, T* out, long long n_idx, long long slice_n, FxIndices g, Strided1 s)
//       out[i * slice_n + j] = x[element (i, j)], or zero for an index out of range.
//   scatter_<op>(const T* upd, T* out, long long n_idx, long long slice_n, FxIndices g, Strided1 s)
//       out[element (i, j)] = op(out[...], upd[i * slice_n + j]) atomically, for
//       op in assign (plain store: one of several updates wins), sum, prod,
//       max, min; updates with an index out of range are dropped.

struct FxIndices {
    long long count;
    const long long* idx[FX_MAX_DIMS];
    long long stride[FX_MAX_DIMS];
    long long size[FX_MAX_DIMS];
    long long last[FX_MAX_DIMS];
};

// Offset of the start of slice i, or -1 when one of its indices is out of range.
__device__ __forceinline__ long long fx_index_base(const FxIndices& g, long long i) {
    long long base = 0;
    const int k_end = g.count < FX_MAX_DIMS ? (int)g.count : FX_MAX_DIMS;
    for (int k = 0; k < k_end; ++k) {
        long long v = g.idx[k][i];
        if (v < 0) v += g.size[k];
        if (v < 0 || v > g.last[k]) return -1;
        base += v * g.stride[k];
    }
    return base;
}

// Element t = (i, j) of the n_idx x slice_n updates or outputs: slice i and
// the offset of element j inside a slice (single-element slices, the
// common case, skip the division and the walk).
__device__ __forceinline__ long long fx_slice_element(long long t, long long slice_n, const Strided1& s,
                                                      long long& offset) {
    if (slice_n == 1) {
        offset = 0;
        return t;
    }
    unsigned long long i, j;
    fx_divmod((unsigned long long)t, (unsigned long long)slice_n, i, j);
    offset = fx_offset((long long)j, s);
    return (long long)i;
}

extern "C" __global__ void gather(const T* x, T* out, long long n_idx, long long slice_n, FxIndices g, Strided1 s) {
    const long long n = n_idx * slice_n;
    for (long long t = fx_thread_id(); t < n; t += fx_thread_count()) {
        long long offset;
        const long long b = fx_index_base(g, fx_slice_element(t, slice_n, s, offset));
        out[t] = b < 0 ? fx_from_c(fx_zero()) : x[b + offset];
    }
}

// Replaces *addr by f(*addr) atomically: a compare-and-swap loop on the
// element's bytes, or on the aligned 32-bit word holding a 1- or 2-byte
// element (the other bytes of the word are written back unchanged).
// Slices that are contiguous runs of x (whole rows): one block per index
// position at a time, its threads copying the run with coalesced accesses
// and no per-element index arithmetic.
extern "C" __global__ void gather_rows(const T* x, T* out, long long n_idx, long long slice_n, FxIndices g) {
    for (long long i = blockIdx.x; i < n_idx; i += gridDim.x) {
        const long long b = fx_index_base(g, i);
        T* o = out + i * slice_n;
        if (b < 0) {
            for (long long j = threadIdx.x; j < slice_n; j += blockDim.x) o[j] = fx_from_c(fx_zero());
        } else if (fx_aligned(x + b, 16) && fx_aligned(o, 16) && (slice_n * sizeof(T)) % 16 == 0) {
            // 16-byte accesses where both runs allow them.
            const uint4* r = reinterpret_cast<const uint4*>(x + b);
            uint4* o4 = reinterpret_cast<uint4*>(o);
            const long long n4 = slice_n * (long long)sizeof(T) / 16;
#pragma unroll 4
            for (long long j = threadIdx.x; j < n4; j += blockDim.x) o4[j] = r[j];
        } else {
            const T* r = x + b;
#pragma unroll 4
            for (long long j = threadIdx.x; j < slice_n; j += blockDim.x) o[j] = r[j];
        }
    }
}

template <class F>
__device__ __forceinline__ void fx_atomic_apply(T* addr, F f) {
    if constexpr (sizeof(T) == 8) {
        unsigned long long* w = (unsigned long long*)addr;
        unsigned long long old = *w, assumed;
        do {
            assumed = old;
            T cur, next;
            memcpy(&cur, &assumed, 8);
            next = f(cur);
            unsigned long long bits;
            memcpy(&bits, &next, 8);
            old = atomicCAS(w, assumed, bits);
        } while (assumed != old);
    } else if constexpr (sizeof(T) == 4) {
        unsigned int* w = (unsigned int*)addr;
        unsigned int old = *w, assumed;
        do {
            assumed = old;
            T cur, next;
            memcpy(&cur, &assumed, 4);
            next = f(cur);
            unsigned int bits;
            memcpy(&bits, &next, 4);
            old = atomicCAS(w, assumed, bits);
        } while (assumed != old);
    } else {
        const unsigned long long at = (unsigned long long)addr;
        unsigned int* w = (unsigned int*)(at & ~3ull);
        const unsigned int shift = (unsigned int)(at & 3ull) * 8u;
        const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
        unsigned int old = *w, assumed;
        do {
            assumed = old;
            unsigned int part = (assumed & mask) >> shift;
            T cur, next;
            memcpy(&cur, &part, sizeof(T));
            next = f(cur);
            unsigned int bits = 0;
            memcpy(&bits, &next, sizeof(T));
            old = atomicCAS(w, assumed, (assumed & ~mask) | ((bits << shift) & mask));
        } while (assumed != old);
    }
}

// The scatter loop: apply(pointer into out, update) for every update in range.
template <class Apply>
__device__ __forceinline__ void fx_scatter(const T* upd, T* out, long long n_idx, long long slice_n,
                                           const FxIndices& g, const Strided1& s, Apply apply) {
    const long long n = n_idx * slice_n;
    for (long long t = fx_thread_id(); t < n; t += fx_thread_count()) {
        long long offset;
        const long long b = fx_index_base(g, fx_slice_element(t, slice_n, s, offset));
        if (b >= 0) apply(out + b + offset, upd[t]);
    }
}

// Updates combined by an arithmetic function of TC through the CAS loop.
#define FX_SCATTER_CAS(name, fn)                                                                         \
    extern "C" __global__ void scatter_##name(const T* upd, T* out, long long n_idx, long long slice_n, \
                                              FxIndices g, Strided1 s) {                                \
        fx_scatter(upd, out, n_idx, slice_n, g, s, [](T* p, T u) {                                       \
            fx_atomic_apply(p, [u](T cur) { return fx_from_c(fn(fx_to_c(cur), fx_to_c(u))); });        \
        });                                                                                              \
    }

extern "C" __global__ void scatter_assign(const T* upd, T* out, long long n_idx, long long slice_n, FxIndices g,
                                          Strided1 s) {
    fx_scatter(upd, out, n_idx, slice_n, g, s, [](T* p, T u) { *p = u; });
}

#if defined(FX_DTYPE_F32) || defined(FX_DTYPE_F64) || defined(FX_DTYPE_I32) || defined(FX_DTYPE_U32) || \
    defined(FX_DTYPE_U64)
// Native atomic additions.
extern "C" __global__ void scatter_sum(const T* upd, T* out, long long n_idx, long long slice_n, FxIndices g,
                                       Strided1 s) {
    fx_scatter(upd, out, n_idx, slice_n, g, s, [](T* p, T u) { atomicAdd(p, u); });
}
#elif defined(FX_DTYPE_I64)
// Two's-complement addition is the same on the unsigned bits.
extern "C" __global__ void scatter_sum(const T* upd, T* out, long long n_idx, long long slice_n, FxIndices g,
                                       Strided1 s) {
    fx_scatter(upd, out, n_idx, slice_n, g, s,
               [](T* p, T u) { atomicAdd((unsigned long long*)p, (unsigned long long)u); });
}
#else
FX_SCATTER_CAS(sum, fx_add)
#endif
FX_SCATTER_CAS(prod, fx_mul)
FX_SCATTER_CAS(max, fx_max)
FX_SCATTER_CAS(min, fx_min)
