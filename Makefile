# Each target is a one-liner over cargo or hack/. See README.md.
CARGO_TARGET_DIR ?= $(HOME)/.cache/versa-target
export CARGO_TARGET_DIR

.PHONY: build test lint bench fmt

build:
	cargo build --release -p versa

test:
	bash hack/test.sh

lint:
	cargo clippy --workspace --all-targets -- -D warnings

fmt:
	cargo fmt --all

bench:
	cargo bench -p versa-schema
	bash hack/bench-storage.sh
