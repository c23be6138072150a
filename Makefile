# edgeconform: make test is what CI runs (.ci/run) and what the README tells
# you to run. Everything here works on a fresh clone with Go installed.

GO       ?= go
PKGS     ?= ./...
BENCHTIME ?= 1s

.PHONY: all test vet fmt-check build bench emulate clean

all: build test

build:
	$(GO) build ./...

# vet + every test, race detector on.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 12m $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Benchmarks: synthetic generation, the wire servers, the emulator end to end,
# routing, and requests proxied through the reference.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) \
		./emulators/synth/ ./emulators/wire/... ./emulators/originemu/ \
		./reference/routing/ ./reference/edge/

# The main job until the conformance suites exist: start the origin emulator
# with its default set of listeners (see the README). Ctrl-C stops it.
emulate:
	$(GO) run ./emulators/cmd/originemu --defaults

clean:
	$(GO) clean -testcache
