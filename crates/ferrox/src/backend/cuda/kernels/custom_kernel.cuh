// custom_kernel.cuh: the prelude of every kernel written with
// ferrox.fast.cuda_kernel (ops/custom_kernel.rs writes the rest: the user's
// header, then the kernel's signature, template constants and body inside
// namespace ferrox::cu). It stands in for MLX's default header of custom
// CUDA kernels (mlx/backend/cuda/device/utils.cuh with cuda_fp16.h,
// cuda_bf16.h and cooperative_groups.h) and includes no CUDA toolkit
// header, so NVRTC alone compiles it. It defines the names MLX's custom
// kernels use:
//   - int8_t ... uint64_t, uintptr_t;
//   - __half and __nv_bfloat16 (the element types of float16 and bfloat16
//     arrays): they convert implicitly to and from float and compute through
//     float (`exp(h)`, `h * 2`, `h < g` are the float functions and
//     operators); __float2half, __half2float, __float2bfloat16,
//     __bfloat162float;
//   - ferrox::cu::complex64_t (complex64 elements) with real(), imag() and
//     the arithmetic operators;
//   - MAX_NDIM, WARP_SIZE, Shape and Strides (the types of the
//     `<input>_shape` and `<input>_strides` parameters: .data(), [i]),
//     elem_to_loc and elem_to_loc_nd;
//   - cooperative_groups (cg inside the kernel): this_grid() and
//     this_thread_block() (thread_rank, num_threads/size, indices, sync for
//     blocks), tiled_partition<N>() giving a thread_block_tile<N> (N a power
//     of two up to 32: thread_rank, meta_group_rank, sync, shfl, shfl_up,
//     shfl_down, shfl_xor, ballot, any, all), sync(group) and
//     reduce(tile, value, op) with cg::plus, cg::less (minimum) and
//     cg::greater (maximum).

#define MAX_NDIM 10
#define WARP_SIZE 32

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef unsigned long uintptr_t;

// ---------------------------------------------------------------------------
// float16 and bfloat16 elements
// ---------------------------------------------------------------------------

// IEEE binary16, converted with the PTX instructions (round to nearest even).
struct alignas(2) __half {
    unsigned short __x;

    __half() = default;
    __device__ __half(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(__x) : "f"(f)); }
    __device__ operator float() const {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(__x));
        return f;
    }
    __device__ __half& operator+=(float v) { return *this = float(*this) + v; }
    __device__ __half& operator-=(float v) { return *this = float(*this) - v; }
    __device__ __half& operator*=(float v) { return *this = float(*this) * v; }
    __device__ __half& operator/=(float v) { return *this = float(*this) / v; }
};

// The upper half of a float32, rounded to nearest even; NaN stays NaN.
struct alignas(2) __nv_bfloat16 {
    unsigned short __x;

    __nv_bfloat16() = default;
    __device__ __nv_bfloat16(float f) {
#if __CUDA_ARCH__ >= 800
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(__x) : "f"(f));
#else
        unsigned int x = __float_as_uint(f);
        if ((x & 0x7fffffffu) > 0x7f800000u) {
            __x = (unsigned short)((x >> 16) | 0x0040u);
        } else {
            __x = (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
        }
#endif
    }
    __device__ operator float() const { return __uint_as_float((unsigned int)__x << 16); }
    __device__ __nv_bfloat16& operator+=(float v) { return *this = float(*this) + v; }
    __device__ __nv_bfloat16& operator-=(float v) { return *this = float(*this) - v; }
    __device__ __nv_bfloat16& operator*=(float v) { return *this = float(*this) * v; }
    __device__ __nv_bfloat16& operator/=(float v) { return *this = float(*this) / v; }
};

__device__ inline __half __float2half(float f) { return __half(f); }
__device__ inline float __half2float(__half h) { return float(h); }
__device__ inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
__device__ inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }

namespace ferrox::cu {

// ---------------------------------------------------------------------------
// complex64 elements
// ---------------------------------------------------------------------------

struct alignas(8) complex64_t {
    float re, im;

    complex64_t() = default;
    __device__ complex64_t(float r, float i = 0.0f) : re(r), im(i) {}
    __device__ float real() const { return re; }
    __device__ float imag() const { return im; }
    __device__ complex64_t& operator+=(complex64_t b) {
        re += b.re;
        im += b.im;
        return *this;
    }
    __device__ complex64_t& operator-=(complex64_t b) {
        re -= b.re;
        im -= b.im;
        return *this;
    }
    __device__ complex64_t& operator*=(complex64_t b) {
        float r = re * b.re - im * b.im;
        im = re * b.im + im * b.re;
        re = r;
        return *this;
    }
    __device__ complex64_t& operator/=(complex64_t b) {
        float d = b.re * b.re + b.im * b.im;
        float r = (re * b.re + im * b.im) / d;
        im = (im * b.re - re * b.im) / d;
        re = r;
        return *this;
    }
};

__device__ inline complex64_t operator+(complex64_t a, complex64_t b) { return a += b; }
__device__ inline complex64_t operator-(complex64_t a, complex64_t b) { return a -= b; }
__device__ inline complex64_t operator*(complex64_t a, complex64_t b) { return a *= b; }
__device__ inline complex64_t operator/(complex64_t a, complex64_t b) { return a /= b; }
__device__ inline complex64_t operator-(complex64_t a) { return complex64_t(-a.re, -a.im); }
__device__ inline bool operator==(complex64_t a, complex64_t b) { return a.re == b.re && a.im == b.im; }
__device__ inline bool operator!=(complex64_t a, complex64_t b) { return !(a == b); }

// ---------------------------------------------------------------------------
// Shapes, strides and indexing
// ---------------------------------------------------------------------------

// A fixed-size array passed by value (laid out as cuda::std::array).
template <typename T, int N>
struct FixedArray {
    T elems[N];

    __device__ T* data() { return elems; }
    __device__ const T* data() const { return elems; }
    __device__ T& operator[](int i) { return elems[i]; }
    __device__ const T& operator[](int i) const { return elems[i]; }
    __device__ static constexpr int size() { return N; }
};

// An input's extents and strides (in elements), zero past its ndim.
using Shape = FixedArray<int32_t, MAX_NDIM>;
using Strides = FixedArray<int64_t, MAX_NDIM>;

// The position in memory of element `elem` (row-major order) of an array of
// `ndim` dimensions with `shape` and `strides`.
template <typename IdxT = int64_t>
__device__ IdxT elem_to_loc(IdxT elem, const int* shape, const int64_t* strides, int ndim) {
    IdxT loc = 0;
    for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
        loc += (elem % shape[i]) * IdxT(strides[i]);
        elem /= shape[i];
    }
    return loc;
}

// elem_to_loc for a number of dimensions known at compile time.
template <int NDIM, typename IdxT = int64_t>
__device__ IdxT elem_to_loc_nd(IdxT elem, const int* shape, const int64_t* strides) {
    IdxT loc = 0;
#pragma unroll
    for (int i = NDIM - 1; i >= 0; --i) {
        loc += (elem % shape[i]) * IdxT(strides[i]);
        elem /= shape[i];
    }
    return loc;
}

} // namespace ferrox::cu

// ---------------------------------------------------------------------------
// Cooperative groups (the subset above)
// ---------------------------------------------------------------------------

namespace cooperative_groups {

// The threads of this block.
struct thread_block {
    __device__ static void sync() { __syncthreads(); }
    __device__ static unsigned int thread_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
    __device__ static unsigned int num_threads() { return blockDim.x * blockDim.y * blockDim.z; }
    __device__ static unsigned int size() { return num_threads(); }
    __device__ static dim3 group_index() { return blockIdx; }
    __device__ static dim3 thread_index() { return threadIdx; }
    __device__ static dim3 dim_threads() { return blockDim; }
    __device__ static dim3 group_dim() { return blockDim; }
};

__device__ inline thread_block this_thread_block() { return thread_block(); }

// Every thread of the launch; blocks are ranked x first, then y, then z.
struct grid_group {
    __device__ static unsigned long long block_rank() {
        return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    __device__ static unsigned long long num_blocks() {
        return (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
    }
    __device__ static unsigned long long thread_rank() {
        return block_rank() * thread_block::num_threads() + thread_block::thread_rank();
    }
    __device__ static unsigned long long num_threads() { return num_blocks() * thread_block::num_threads(); }
    __device__ static unsigned long long size() { return num_threads(); }
    __device__ static dim3 block_index() { return blockIdx; }
    __device__ static dim3 dim_blocks() { return gridDim; }
};

__device__ inline grid_group this_grid() { return grid_group(); }

namespace detail {

enum class Shuffle { Index, Up, Down, Xor };

__device__ inline unsigned int shuffle_word(Shuffle kind, unsigned int mask, unsigned int x, int arg, int width) {
    switch (kind) {
        case Shuffle::Index:
            return __shfl_sync(mask, x, arg, width);
        case Shuffle::Up:
            return __shfl_up_sync(mask, x, (unsigned int)arg, width);
        case Shuffle::Down:
            return __shfl_down_sync(mask, x, (unsigned int)arg, width);
        default:
            return __shfl_xor_sync(mask, x, arg, width);
    }
}

// Shuffles a value of up to 8 bytes as one or two 32-bit words.
template <typename T>
__device__ T shuffle(Shuffle kind, unsigned int mask, T v, int arg, int width) {
    static_assert(sizeof(T) <= 8, "tile shuffles move values of at most 8 bytes");
    unsigned int words[2] = {0u, 0u};
    memcpy(words, &v, sizeof(T));
    words[0] = shuffle_word(kind, mask, words[0], arg, width);
    if (sizeof(T) > 4) {
        words[1] = shuffle_word(kind, mask, words[1], arg, width);
    }
    T out;
    memcpy(&out, words, sizeof(T));
    return out;
}

} // namespace detail

// N consecutive threads of a warp (by block thread rank).
template <unsigned int N>
struct thread_block_tile {
    static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16 || N == 32,
                  "tiles hold a power of two of threads, at most 32");

    __device__ static unsigned int lane() { return thread_block::thread_rank() % 32u; }
    // The tile's threads within its warp.
    __device__ static unsigned int mask() {
        return N == 32 ? 0xffffffffu : ((1u << N) - 1u) << (lane() & ~(N - 1u));
    }
    __device__ static unsigned int thread_rank() { return thread_block::thread_rank() & (N - 1u); }
    __device__ static unsigned int meta_group_rank() { return thread_block::thread_rank() / N; }
    __device__ static unsigned int meta_group_size() { return (thread_block::num_threads() + N - 1u) / N; }
    __device__ static constexpr unsigned int num_threads() { return N; }
    __device__ static constexpr unsigned int size() { return N; }
    __device__ static void sync() { __syncwarp(mask()); }

    template <typename T>
    __device__ T shfl(T v, int src) const { return detail::shuffle(detail::Shuffle::Index, mask(), v, src, N); }
    template <typename T>
    __device__ T shfl_up(T v, unsigned int delta) const { return detail::shuffle(detail::Shuffle::Up, mask(), v, (int)delta, N); }
    template <typename T>
    __device__ T shfl_down(T v, unsigned int delta) const {
        return detail::shuffle(detail::Shuffle::Down, mask(), v, (int)delta, N);
    }
    template <typename T>
    __device__ T shfl_xor(T v, unsigned int lane_mask) const {
        return detail::shuffle(detail::Shuffle::Xor, mask(), v, (int)lane_mask, N);
    }

    // Bit i is set when the tile's thread i has a nonzero predicate.
    __device__ static unsigned int ballot(int predicate) {
        return (__ballot_sync(mask(), predicate) & mask()) >> (lane() & ~(N - 1u));
    }
    __device__ static bool any(int predicate) { return ballot(predicate) != 0u; }
    __device__ static bool all(int predicate) { return ballot(predicate) == (N == 32 ? 0xffffffffu : (1u << N) - 1u); }
};

template <unsigned int N, typename Parent>
__device__ thread_block_tile<N> tiled_partition(const Parent&) {
    return thread_block_tile<N>();
}

// Synchronizes a block or a tile.
template <typename Group>
__device__ void sync(const Group& group) {
    group.sync();
}

template <typename T>
struct plus {
    __device__ T operator()(T a, T b) const { return a + b; }
};

template <typename T>
struct less {
    __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};

template <typename T>
struct greater {
    __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};

// `op` folded over the tile's values; every thread of the tile gets it.
template <unsigned int N, typename T, typename Op>
__device__ T reduce(const thread_block_tile<N>& tile, T value, Op op) {
#pragma unroll
    for (unsigned int offset = N / 2; offset > 0; offset /= 2) {
        value = op(value, tile.shfl_xor(value, offset));
    }
    return value;
}

} // namespace cooperative_groups
