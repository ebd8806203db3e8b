# selmix — see README.md. `make help` lists the targets.

GO      ?= go
# OpenBLAS speeds up gorgonia's matrix products; the build tag is on only
# when the library is installed, so a plain `go build` always works.
BLAS_TAG := $(if $(wildcard /usr/lib/*/libopenblas.so /usr/lib/libopenblas.so),openblas,)
TAGS    ?= $(BLAS_TAG)
GOFLAGS_TAGS := $(if $(TAGS),-tags $(TAGS),)
# The PyTorch worker's interpreter (Debian's, with python3-torch), for mypy.
PYTHON  ?= /usr/bin/python3
FUZZTIME ?= 20s
# Minimizing each new input costs up to 60 s by default, which in a short
# run (and in packages whose instrumented binary is large, such as core/model)
# leaves no time to fuzz.
FUZZMINTIME ?= 10x

# The packages whose tests take longest, first: go test runs two at a
# time in the order named (./... names each once), so the rest fill the
# other slot beside them instead of one of them starting last.
LONG_TESTS := ./cmd/selmix/internal/lifecycle ./cmd/selmix ./cmd/selmix/internal/cli ./core/model ./viz ./workers/torch

.PHONY: help build run test bench fuzz lint lint-py fmt assets assets-check repro repro-smoke

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/selmix
	@$(if $(BLAS_TAG),,echo "note: OpenBLAS not found, building with pure-Go BLAS (about 8x slower); apt install libopenblas-dev and rebuild")
	$(GO) build $(GOFLAGS_TAGS) -o bin/selmix ./cmd/selmix

run: build ## run the workbench on the built-in default experiment
	./bin/selmix

test: ## check go.mod is tidy, vet and run every test with the race detector (what CI runs)
	@$(GO) mod tidy -diff || (echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1)
	$(GO) vet $(GOFLAGS_TAGS) ./...
	$(GO) test $(GOFLAGS_TAGS) -race -count=1 -timeout 40m $(LONG_TESTS) ./...

bench: ## run the benchmarks
	$(GO) test $(GOFLAGS_TAGS) -run '^$$' -bench . -benchmem ./...

fuzz: ## run every fuzz target for FUZZTIME (default 20s), one at a time on one core; list all failures at the end
	@failed=""; \
	for p in $$($(GO) list ./...); do \
	  fs=$$($(GO) test $(GOFLAGS_TAGS) -list '^Fuzz' $$p) || { failed="$$failed $$p(build)"; continue; }; \
	  for f in $$(echo "$$fs" | grep '^Fuzz'); do \
	    echo "fuzz $$p $$f"; \
	    $(GO) test $(GOFLAGS_TAGS) $$p -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1 || failed="$$failed $$p.$$f"; \
	  done; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz failures:"; for f in $$failed; do echo "  $$f"; done; exit 1; fi; \
	echo "every fuzz target passed"

# The worker's Python: its settings are workers/torch/pyproject.toml (black,
# mypy) and workers/torch/.flake8; not part of make test.
lint: lint-py ## gofmt, go mod tidy and go vet; then lint-py
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	@$(GO) mod tidy -diff || (echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1)
	$(GO) vet $(GOFLAGS_TAGS) ./...

lint-py: ## gofmt and black, flake8 and mypy over workers/torch, each when installed (what CI adds to make test)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	@if command -v black >/dev/null 2>&1; then echo "black --check workers/torch"; \
	  cd workers/torch && black --check -q . || { black --diff -q . | head -60; echo "run make fmt"; exit 1; }; \
	else echo "lint: black not installed (apt install black): skipped"; fi
	@if command -v flake8 >/dev/null 2>&1; then echo "flake8 workers/torch"; cd workers/torch && flake8 .; \
	else echo "lint: flake8 not installed (apt install flake8): skipped"; fi
	@if $(PYTHON) -c 'import mypy' >/dev/null 2>&1; then echo "mypy workers/torch"; cd workers/torch && $(PYTHON) -m mypy; \
	else echo "lint: $(PYTHON) has no mypy (apt install python3-mypy): skipped"; fi

fmt: ## gofmt the tree, and black workers/torch when installed
	gofmt -w $$(git ls-files '*.go')
	@if command -v black >/dev/null 2>&1; then cd workers/torch && black -q .; \
	else echo "fmt: black not installed (apt install black): workers/torch left as it is"; fi

assets: ## regenerate assets/default (split + checkpoint) from dataset-fashion-mnist and check them against SHA256SUMS (UPDATE=1 records new sums)
	@mkdir -p bin/assets
	$(GO) run $(GOFLAGS_TAGS) ./cmd/selmix pretrain --config assets/pretrain.toml \
		--out bin/assets/model.npz --split-out bin/assets/split.bin
	@if [ -n "$(UPDATE)" ]; then \
	  cp bin/assets/model.npz bin/assets/split.bin assets/default/ && \
	  (cd assets/default && sha256sum model.npz split.bin > SHA256SUMS) && echo "recorded new checksums"; \
	else \
	  (cd bin/assets && sha256sum -c ../../assets/default/SHA256SUMS) || \
	  { echo "regenerated assets differ from assets/default/SHA256SUMS (the checkpoint's sum holds for the OpenBLAS build and the kernel it was made on: pre-training turns another kernel's last bits into another model, OPENBLAS_CORETYPE names it; UPDATE=1 to accept)"; exit 1; }; \
	fi
	@du -ch assets/default/model.npz assets/default/split.bin | tail -1

assets-check: ## verify the embedded assets against assets/default/SHA256SUMS
	cd assets/default && sha256sum -c SHA256SUMS

repro: build ## the paper-reproduction suite, bench/paper-sweep.toml (3 seeds, 147 runs, 2 at a time) into docs/paper-suite.md
	./bin/selmix bench paper --parallel 2 --out docs/paper-suite.md --runs runs/bench-paper

repro-smoke: build ## the suite with 1 seed and a few steps (checks it runs end to end)
	./bin/selmix bench paper --smoke --out bin/results-smoke.md --runs bin/bench-smoke
