// mma.cuh: tensor-core and asynchronous-copy helpers shared by the
// float16/bfloat16 kernels (attention.cu, conv_igemm.cu): the m16n8k16
// product with float32 accumulators, ldmatrix loads of 8x8 tiles of 16-bit
// elements, and cp.async copies into shared memory (sm_80 and later).
// Everything here is defined for the half module dtypes only.

#if FX_IS_HALF

// c += a b for one m16n8k16 tile (a: 4 registers of 2 elements, b: 2).
__device__ __forceinline__ void fx_mma(float* c, const unsigned* a, const unsigned* b) {
#if defined(FX_DTYPE_BF16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Four 8x8 tiles of 16-bit elements from shared memory: lanes 8m .. 8m + 7
// address the rows of tile m; register m holds, in each lane l, elements
// (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of tile m (with `.trans`,
// of its transpose).
__device__ __forceinline__ void fx_ldmatrix_x4(unsigned* r, const unsigned short* row) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void fx_ldmatrix_x4_trans(unsigned* r, const unsigned short* row) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// Asynchronous copy of 16 (or `N`) bytes to shared memory; zeros when
// `valid` is false (`src` must still be a mapped address).
template <int N>
__device__ __forceinline__ void fx_cp_async(void* dst, const void* src, bool valid) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(dst);
    if (N == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(src), "r"(valid ? 16 : 0));
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(addr), "l"(src), "n"(N),
                     "r"(valid ? N : 0));
    }
}

__device__ __forceinline__ void fx_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits for every copy this thread issued.
__device__ __forceinline__ void fx_cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

// Waits until at most N of this thread's committed cp.async groups are
// still in flight.
template <int N>
__device__ __forceinline__ void fx_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#endif
