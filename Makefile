# ferrox: `make demo` trains a character-level GPT (examples/char_lm.py), `make test` runs every test,
# `make fuzz` runs the long fuzz pass (fuzz/).
# Both create .venv (with maturin, numpy, pytest, NVRTC) on first use and
# build the extension into it. On a GPU machine, scripts/gpu-check.sh runs the
# suite with the GPU as default device, then the GPU benchmarks.

VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
CARGO_JOBS ?= 2

.PHONY: test demo build bench docs fuzz fuzz-parsers rust-test py-test clean

$(PY): requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(PY)

# The optimized extension (pyproject.toml selects the release profile), for
# the demo, the benchmarks and the Python tests.
build: $(PY)
	VIRTUAL_ENV=$(VENV) CARGO_BUILD_JOBS=$(CARGO_JOBS) $(VENV)/bin/maturin develop --release -q

# NVRTC from the venv's nvidia-cuda-nvrtc wheel lets the tests compile every
# CUDA kernel without a GPU. ferrox finds it the way it finds every CUDA
# library (in the site-packages of $$VIRTUAL_ENV here; of sys.path in Python),
# with no LD_LIBRARY_PATH; FERROX_REQUIRE_NVRTC makes a missing NVRTC a failure.
# The Python extension's crates have no Rust tests (the Python suite tests
# them) and are not compiled twice.
rust-test: $(PY)
	VIRTUAL_ENV=$(VENV) FERROX_REQUIRE_NVRTC=1 cargo test -j$(CARGO_JOBS) --workspace --exclude ferrox-python --exclude ferrox-python-macros

py-test: build
	$(PY) -m pytest python/tests -q

test: rust-test py-test

demo: build
	$(PY) examples/char_lm.py

# The HTML API reference (Sphinx autodoc + napoleon over the built module's
# MLX-style docstrings; docs/api/conf.py writes the module pages): open
# docs/_build/html/index.html. Warnings are errors.
docs: build
	PYTHONPATH=$(CURDIR)/python $(PY) -m sphinx -W --keep-going -q -b html -d docs/_build/doctrees docs/api docs/_build/html

# The long fuzz pass: FUZZ_CALLS random calls with a random seed (the test
# suite runs a short fixed-seed pass); prints the counts and writes findings
# to fuzz/found.txt. FUZZ_ARGS adds options (e.g. --seed 7, --verbose).
FUZZ_CALLS ?= 1000000
fuzz: build
	$(PY) -m fuzz --calls $(FUZZ_CALLS) $(FUZZ_ARGS)

# The file parsers' cargo-fuzz targets (crates/ferrox/fuzz): coverage-guided
# libFuzzer with AddressSanitizer, each target for FUZZ_SECONDS; installs the
# nightly toolchain and cargo-fuzz when missing. CI does not run it (nightly
# and the sanitizer build would not fit its time): `make test` replays the
# targets' corpora (crates/ferrox/tests/io.rs) and runs a brief stable-Rust
# mutation fuzz of the same entry point (crates/ferrox/tests/parser_fuzz.rs).
FUZZ_SECONDS ?= 20
FUZZ_TARGETS = npy npz safetensors gguf
fuzz-parsers:
	rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked -j$(CARGO_JOBS)
	cd crates/ferrox && export CARGO_BUILD_JOBS=$(CARGO_JOBS) && for t in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/scratch/$$t; \
		cargo +nightly fuzz run $$t fuzz/scratch/$$t fuzz/corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096 || exit 1; \
	done

bench: build
	$(PY) benches/cpu_ops.py
	$(PY) benches/autodiff.py

clean:
	cargo clean
	rm -rf $(VENV)
