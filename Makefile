# ferrox: `make demo` runs the quickstart tour, `make test` runs every test.
# Both create .venv (with maturin, numpy, pytest) on first use and build the
# extension into it.

VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
CARGO_JOBS ?= 2

.PHONY: test demo build bench rust-test py-test clean

$(PY): requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(PY)

build: $(PY)
	VIRTUAL_ENV=$(VENV) CARGO_BUILD_JOBS=$(CARGO_JOBS) $(VENV)/bin/maturin develop --release -q

rust-test:
	cargo test -j$(CARGO_JOBS) --workspace

py-test: build
	$(PY) -m pytest python/tests -q

test: rust-test py-test

demo: build
	$(PY) examples/quickstart.py

bench: build
	$(PY) benches/cpu_ops.py

clean:
	cargo clean
	rm -rf $(VENV)
