// matmul.cu: exact batched matrix product for the module dtype T (used for
// the integer and bool dtypes cuBLAS lacks, and as a fallback).
//
// Kernel: blockDim (16, 16); grid (ceil(N/16), ceil(M/16), batch), where the
// host may cap grid y and z (blocks loop over the remaining tiles/batches).
//   matmul(const T* a, const T* b, T* c, long long batch, long long M, long long N, long long K,
//          long long sab, long long sam, long long sak, long long sbb, long long sbk, long long sbn)
//   c[(p*M + i)*N + j] = sum over k < K of a[p*sab + i*sam + k*sak] * b[p*sbb + k*sbk + j*sbn]
// with element.rs add/mul: wrapping integers, bool or/and, f16/bf16
// accumulate in f32 (one rounding at the end), complex arithmetic for c64.
// c is contiguous; K == 0 gives zeros.

#define FX_MM_TILE 16

extern "C" __global__ void matmul(const T* a, const T* b, T* c, long long batch, long long M, long long N, long long K,
                                  long long sab, long long sam, long long sak, long long sbb, long long sbk,
                                  long long sbn) {
    __shared__ TC as[FX_MM_TILE][FX_MM_TILE];  // as[i][k]
    __shared__ TC bs[FX_MM_TILE][FX_MM_TILE];  // bs[k][j]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long tiles_m = (M + FX_MM_TILE - 1) / FX_MM_TILE;
    const long long tiles_n = (N + FX_MM_TILE - 1) / FX_MM_TILE;
    // All loop bounds are uniform over the block, so the barriers are safe.
#pragma unroll 1
    for (long long p = blockIdx.z; p < batch; p += gridDim.z) {
        const T* ap = a + p * sab;
        const T* bp = b + p * sbb;
#pragma unroll 1
        for (long long ti = blockIdx.y; ti < tiles_m; ti += gridDim.y) {
#pragma unroll 1
            for (long long tj = blockIdx.x; tj < tiles_n; tj += gridDim.x) {
                const long long i = ti * FX_MM_TILE + ty, j = tj * FX_MM_TILE + tx;
                TC acc = fx_zero();
#pragma unroll 1
                for (long long k0 = 0; k0 < K; k0 += FX_MM_TILE) {
                    // Thread (tx, ty) loads a[i, k0 + tx] and b[k0 + ty, j].
                    const long long ka = k0 + tx, kb = k0 + ty;
                    as[ty][tx] = (i < M && ka < K) ? fx_to_c(ap[i * sam + ka * sak]) : fx_zero();
                    bs[ty][tx] = (kb < K && j < N) ? fx_to_c(bp[kb * sbk + j * sbn]) : fx_zero();
                    __syncthreads();
                    // Only the k < K part of the tile: padding never enters the sum.
                    const int kmax = K - k0 < FX_MM_TILE ? (int)(K - k0) : FX_MM_TILE;
                    if (kmax == FX_MM_TILE) {
#pragma unroll
                        for (int kk = 0; kk < FX_MM_TILE; ++kk) acc = fx_add(acc, fx_mul(as[ty][kk], bs[kk][tx]));
                    } else {
#pragma unroll 1
                        for (int kk = 0; kk < kmax; ++kk) acc = fx_add(acc, fx_mul(as[ty][kk], bs[kk][tx]));
                    }
                    __syncthreads();
                }
                if (i < M && j < N) c[(p * M + i) * N + j] = fx_from_c(acc);
            }
        }
    }
}
