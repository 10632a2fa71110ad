// reduce.cuh: reductions across a warp and a block.

// ---------------------------------------------------------------------------
// Reductions across a warp / block
// ---------------------------------------------------------------------------

// __shfl_xor_sync for any trivially copyable V (moved as 32-bit words).
template <class V>
__device__ __forceinline__ V fx_shfl_xor(V v, int lane_mask) {
    constexpr int W = ((int)sizeof(V) + 3) / 4;
    unsigned int w[W] = {};
    memcpy(w, &v, sizeof(V));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_xor_sync(0xffffffffu, w[k], lane_mask);
    memcpy(&v, w, sizeof(V));
    return v;
}

// Butterfly reduction over the first `width` lanes (a power of two <= 32);
// every lane of those ends with the result. All 32 lanes must call it.
template <class V, class Op>
__device__ __forceinline__ V fx_warp_reduce(V v, Op op, int width = 32) {
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) {
        if (m < width) v = op(v, fx_shfl_xor(v, m));
    }
    return v;
}

// Reduces v over a 1-D block whose blockDim.x is a power of two >= 32 (up to
// 1024); the result is valid in thread 0. `smem` holds 32 values. Must be
// reached by every thread of the block.
template <class V, class Op>
__device__ __forceinline__ V fx_block_reduce(V v, Op op, V* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    v = fx_warp_reduce(v, op);
    if (nwarps == 1) return v;
    __syncthreads();  // smem may still be read by a previous call
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = smem[lane < nwarps ? lane : 0];
        v = fx_warp_reduce(v, op, nwarps);
    }
    return v;
}

