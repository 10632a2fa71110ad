"""How fast can MLX's random bits be on this GPU? Floors for random.normal.

ferrox's random.normal gives MLX's bits: threefry2x32 with 20 rounds, one
32-bit word per float32, then MLX's erfinv (glibc's logf, evaluated in
double as glibc does) of a uniform. This script measures, with CuPy, what
that costs at the size of benches/gpu_ops.py's random rows (256M float32):

  * fill        write 1 GiB with a trivial kernel: the write bandwidth;
  * threefry    the 128M threefry blocks alone, results xor-folded and not
                stored, with the adds on the integer pipe (plain) and moved
                to the FMA pipe (imad, what kernels/random.cu does);
  * threefry+st the same, storing the 256M words (random.bits).

If threefry alone takes longer than 80% of the write bandwidth allows,
no kernel giving MLX's bits can write normals at that bandwidth.

    python3 benches/gpu_random_floor.py          # needs CuPy and a GPU
"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define ROUND(r) x += y; y = __funnelshift_l(y, y, r) ^ x;
#define ROUND_IMAD(r) x = y * one + x; y = __funnelshift_l(y, y, r) ^ x;
#define THREEFRY(RR)                                                        \
    x += k0; y += k1; RR(13) RR(15) RR(26) RR(6) x += k1; y += k2 + 1u;      \
    RR(17) RR(29) RR(16) RR(24) x += k2; y += k0 + 2u;                        \
    RR(13) RR(15) RR(26) RR(6) x += k0; y += k1 + 3u;                         \
    RR(17) RR(29) RR(16) RR(24) x += k1; y += k2 + 4u;                        \
    RR(13) RR(15) RR(26) RR(6) x += k2; y += k0 + 5u;
#define FOLD_KERNEL(name, RR)                                               \
extern "C" __global__ void name(unsigned* out, unsigned n, unsigned k0,    \
                                unsigned k1, unsigned one) {                \
    const unsigned k2 = k0 ^ k1 ^ 0x1BD11BDAu;                              \
    unsigned acc = 0;                                                       \
    for (unsigned b = blockIdx.x * blockDim.x + threadIdx.x; b < n;         \
         b += gridDim.x * blockDim.x) {                                     \
        unsigned x = b, y = b + n;                                          \
        THREEFRY(RR)                                                        \
        acc ^= x ^ y;                                                       \
    }                                                                       \
    if (acc == 0x12345678u) out[0] = acc;                                   \
}
FOLD_KERNEL(threefry_plain, ROUND)
FOLD_KERNEL(threefry_imad, ROUND_IMAD)
extern "C" __global__ void threefry_store(unsigned* out, unsigned n, unsigned k0, unsigned k1, unsigned one) {
    const unsigned k2 = k0 ^ k1 ^ 0x1BD11BDAu;
    for (unsigned b = blockIdx.x * blockDim.x + threadIdx.x; b < n; b += gridDim.x * blockDim.x) {
        unsigned x = b, y = b + n;
        THREEFRY(ROUND_IMAD)
        out[b] = x;
        out[b + n] = y;
    }
}
extern "C" __global__ void fill(unsigned* out, unsigned n, unsigned k0, unsigned k1, unsigned one) {
    for (unsigned b = blockIdx.x * blockDim.x + threadIdx.x; b < n; b += gridDim.x * blockDim.x) {
        out[b] = b;
        out[b + n] = k0;
    }
}
"""

BLOCKS = 128 << 20  # threefry blocks: 256M words, one per float32


def median_ms(kernel, out, repeats=20):
    """Median time of one launch over `repeats`, after a warm-up."""
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    args = (out, np.uint32(BLOCKS), np.uint32(0), np.uint32(42), np.uint32(1))
    for _ in range(3):
        kernel((sms * 64,), (256,), args)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record()
        kernel((sms * 64,), (256,), args)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def main():
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    out = cp.zeros(2 * BLOCKS, dtype=cp.uint32)
    fill = median_ms(module.get_function("fill"), out)
    budget = fill / 0.8
    print(f"{'case (256M float32 = 1 GiB)':34s} {'ms':>7s}  vs the 80%-of-write-bandwidth budget")
    print(f"{'fill (write bandwidth)':34s} {fill:7.3f}  {8 * BLOCKS / fill / 1e9:.0f} GB/s")
    print(f"{'80% of write bandwidth':34s} {budget:7.3f}")
    for name in ["threefry_plain", "threefry_imad", "threefry_store"]:
        ms = median_ms(module.get_function(name), out)
        print(f"{name:34s} {ms:7.3f}  {ms / budget:.2f}x the budget")


if __name__ == "__main__":
    main()
