#!/usr/bin/env bash
# Re-verifies the CUDA backend on a GPU machine: installs the ferrox wheel
# built on the development machine, runs the whole Python test suite (each
# test once per device, the GPU as default in the GPU runs), the GPU tests of
# the fused kernels under compute-sanitizer's memcheck, then the GPU
# benchmarks. Logs go to $OUT (or ./gpu-check-logs); a summary prints last.
#
# Build first, on a machine with Rust:   maturin build --release
# Then on the GPU machine, from the repository root:
#   bash scripts/gpu-check.sh [path/to/ferrox-*.whl]
#
# No LD_LIBRARY_PATH is set: ferrox finds the driver, NVRTC, cuBLASLt and
# cuDNN itself (in the nvidia-* wheels beside the machine's PyTorch, which are
# what `pip install 'ferrox[cuda]'` brings, else /usr/local/cuda), and the
# script stops when NVRTC or cuBLASLt is missing. `python -m ferrox` prints
# what was found. FERROX_CUDNN=0 runs convolutions on ferrox's own kernels.
#
# To try kernel edits without rebuilding the wheel, point
# FERROX_KERNEL_SOURCE_DIR at a folder holding edited family sources
# (e.g. attention.cu): they replace the embedded ones (kernels.rs).
#
# With an empty kernel cache the whole suite takes longer than one
# 10-minute device call (about 9% of it ran in 585 s on an H100, 2026-12-06,
# NVRTC compiling each module on first use): split it with PYTEST_ARGS
# (e.g. "-k gpu", the GPU runs only, or -k with a few test modules' names) across calls, or keep
# FERROX_KERNEL_CACHE on a disk that survives between runs.
#
# GPU_CHECK_JOBS=N runs the test files in N pytest processes at once (the
# GPU machine's cores compile the cold cache's kernels in parallel).
#
# Set GPU_CHECK_SKIP_TESTS=1, GPU_CHECK_SKIP_MEMCHECK=1 or GPU_CHECK_SKIP_BENCH=1
# to leave a part out,
# PYTEST_ARGS to pass extra pytest arguments and GPU_BENCH_ARGS to pass
# arguments to benches/gpu_ops.py (e.g. "--only sort,take") and IO_BENCH_ARGS
# to benches/io.py (e.g. "--gb 1"), FAST_BENCH_ARGS to benches/fast_ops.py
# (e.g. "--only norm"), TRAIN_BENCH_ARGS to benches/train_step.py
# (e.g. "--no-compile --ferrox-compile"), COMPILE_BENCH_ARGS to benches/compile.py
# (e.g. "--only gelu"). Wheels in target/wheels/deps/ are
# installed beside ferrox: the file-format tests need the gguf package and
# the MLX comparisons need MLX, and a machine without network gets them that
# way (pip download --no-deps -d target/wheels/deps gguf, and for MLX
# "mlx==0.32.4" "mlx-cpu==0.32.4" --python-version 3.12 --only-binary=:all:
# --platform manylinux_2_35_x86_64).
set -uo pipefail

OUT=${OUT:-$PWD/gpu-check-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export FERROX_KERNEL_CACHE=${FERROX_KERNEL_CACHE:-/tmp/ferrox-kernels}

wheel=${1:-$(ls -t target/wheels/ferrox-*.whl 2>/dev/null | head -1)}
if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
    echo "no ferrox wheel found: build one with 'maturin build --release'" >&2
    exit 2
fi
site=/tmp/ferrox-site
rm -rf "$site"
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$wheel" target/wheels/deps/*.whl 2>/dev/null \
    || python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$wheel" || exit 2
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}

python3 - <<'PY' | tee "$OUT/device.log"
import runpy
import ferrox as fx
runpy.run_module("ferrox", run_name="__main__")
assert fx.cuda.is_available(), "ferrox found no GPU"
libs = fx.cuda.libraries()
for name in ("nvrtc", "cublaslt", "cublas"):
    assert libs[name]["path"], f"{name} is missing: {libs[name]['error']}"
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 3

status=0
if [ "${GPU_CHECK_SKIP_TESTS:-0}" != 1 ]; then
    t0=$(date +%s)
    jobs=${GPU_CHECK_JOBS:-1}
    if [ "$jobs" -le 1 ]; then
        python3 -m pytest python/tests -q -p no:cacheprovider ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.log"
        status=${PIPESTATUS[0]}
    else
        # The test files dealt round-robin to $jobs pytest processes sharing
        # the GPU and the kernel cache (NVRTC's compiles, the cold suite's
        # cost, then run on that many cores).
        files=(python/tests/test_*.py)
        pids=()
        for ((j = 0; j < jobs; j++)); do
            part=()
            for ((i = j; i < ${#files[@]}; i += jobs)); do part+=("${files[$i]}"); done
            [ ${#part[@]} -gt 0 ] || continue
            python3 -m pytest "${part[@]}" -q -p no:cacheprovider ${PYTEST_ARGS:-} >"$OUT/pytest.$j.log" 2>&1 &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do
            wait "$pid" || status=1
        done
        for log in "$OUT"/pytest.*.log; do
            grep -E "^(FAILED|ERROR)" "$log"
            tail -n 1 "$log"
        done | tee "$OUT/pytest.log"
    fi
    echo "pytest: exit $status in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.log"
fi
# compute-sanitizer's memcheck over the GPU runs of the fused-kernel tests:
# out-of-bounds reads that land inside a pool block do not fault, so the
# plain run can pass while a kernel reads past its input (about 100 s).
if [ "${GPU_CHECK_SKIP_MEMCHECK:-0}" != 1 ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 5 --error-exitcode 1 \
        python3 -m pytest python/tests/test_fast.py -q -p no:cacheprovider -k gpu 2>&1 | tee "$OUT/memcheck.log"
    mstatus=${PIPESTATUS[0]}
    echo "memcheck: exit $mstatus" | tee -a "$OUT/summary.log"
    [ "$mstatus" -eq 0 ] || status=$mstatus
fi
if [ "${GPU_CHECK_SKIP_BENCH:-0}" != 1 ]; then
    python3 benches/gpu_ops.py ${GPU_BENCH_ARGS:-} 2>&1 | tee "$OUT/gpu_ops.log"
    python3 benches/autodiff.py 2>&1 | tee "$OUT/autodiff.log"
    python3 benches/io.py ${IO_BENCH_ARGS:-} 2>&1 | tee "$OUT/io.log"
    python3 benches/gpu_random_floor.py 2>&1 | tee "$OUT/random_floor.log"
    python3 benches/fast_ops.py ${FAST_BENCH_ARGS:-} 2>&1 | tee "$OUT/fast_ops.log"
    # The convolution fallback (ferrox's own kernels), pass by pass.
    FERROX_CUDNN=0 python3 benches/conv_passes.py 2>&1 | tee "$OUT/conv_fallback.log"
    python3 benches/train_step.py ${TRAIN_BENCH_ARGS:-} 2>&1 | tee "$OUT/train_step.log"
    python3 benches/compile.py ${COMPILE_BENCH_ARGS:-} 2>&1 | tee "$OUT/compile.log"
    python3 benches/fft.py --device gpu 2>&1 | tee "$OUT/fft.log"
    python3 benches/linalg.py --device gpu 2>&1 | tee "$OUT/linalg.log"
fi

echo "==== summary ===="
tail -n 3 "$OUT/pytest.log" 2>/dev/null
cat "$OUT/summary.log" 2>/dev/null
cat "$OUT/gpu_ops.log" "$OUT/autodiff.log" "$OUT/io.log" "$OUT/random_floor.log" "$OUT/fast_ops.log" "$OUT/conv_fallback.log" "$OUT/train_step.log" "$OUT/compile.log" "$OUT/fft.log" 2>/dev/null | grep -v "^$"
exit "$status"
