# edgeconform: make test is what CI runs (.ci/run) and what the README tells
# you to run. Everything here works on a fresh clone with Go installed.

GO       ?= go
PKGS     ?= ./...
BENCHTIME ?= 1s

.PHONY: all test vet fmt-check build bench emulate clean conformance

all: build test

build:
	$(GO) build ./...

# vet + every test, race detector on; then the memory test (a 1 GiB object
# through a cold disk cache), which skips itself under -race.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 12m $(PKGS)
	$(GO) test -count=1 -run 'PeakRSS' ./reference/edge/

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The bucket emulators' peak RSS (VmHWM of an originemu process) for a
# 1 GiB aws CLI multipart upload and a 1 GiB Go client resumable upload to
# disk-backed backends; fails at 128 MiB (emulators/bucketclients).
.PHONY: bucket-rss
bucket-rss:
	EDGECONFORM_BUCKET_RSS=1 $(GO) test -count=1 -v -timeout 30m -run 'PeakRSS' ./emulators/bucketclients/

# Benchmarks: synthetic generation, the wire servers, the emulator end to end,
# routing, and requests proxied through the reference. The fault-load soak is
# `make soak` (below).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) \
		./emulators/synth/ ./emulators/wire/... ./emulators/originemu/ \
		./reference/routing/ ./reference/edge/

# Side by side with nginx (bench/cmd/bench-peers): hits and uncached
# proxying, alternating wrk rounds, ratio of medians; installs nginx and wrk
# from Debian when missing (as root). BENCH_PEERS_FLAGS: -runs N (N whole runs,
# then the median of their ratios against issue #14's goal), -rounds, -duration, -rows,
# -workers N (nginx worker_processes and edgecache's GOMAXPROCS, default 2),
# -epoll-probe (a minimal raw-epoll Go proxy on the /pass/ rows, informational),
# -goroutine-probe (the same proxy on goroutines and net.Conn, caching /hit/
# responses whole in memory, on every row, informational).
.PHONY: bench-peers
bench-peers:
	$(GO) run ./bench/cmd/bench-peers $(BENCH_PEERS_FLAGS)

# Start the origin emulator
# with its default set of listeners (docs/emulators.md). Ctrl-C stops it.
emulate:
	$(GO) run ./emulators/cmd/originemu --defaults

# Conformance suites (suites/README.md): every spec against the in-process
# reference, nothing to set up; PROFILE=strict for Media CDN's timeouts.
# Ginkgo JSON/JUnit reports, the results file, and the Markdown (printed)
# and HTML summaries go to CONFORMANCE_OUT. Specs the reference is known to
# fail run too (make test skips them).
PROFILE ?= lab
CONFORMANCE_OUT ?= conformance.out
CONFORMANCE_PROCS ?= 4
conformance:
	@mkdir -p $(CONFORMANCE_OUT)
	@mkdir -p $(CONFORMANCE_OUT)/bin
	@# The test binary goes to CONFORMANCE_OUT, not into the source tree (a read-only checkout works).
	$(GO) test -c -o $(abspath $(CONFORMANCE_OUT))/bin/conformance.test ./suites/conformance
	@status=0; EDGECONFORM_PROFILE=$(PROFILE) EDGECONFORM_RUN_KNOWN_BUGS=$(or $(KNOWN_BUGS),1) \
	EDGECONFORM_RESULTS=$(abspath $(CONFORMANCE_OUT))/results-$(PROFILE).json \
	$(GO) run github.com/onsi/ginkgo/v2/ginkgo -p --procs=$(CONFORMANCE_PROCS) --silence-skips --timeout=20m \
		--output-dir=$(CONFORMANCE_OUT) --json-report=ginkgo-$(PROFILE).json --junit-report=junit-$(PROFILE).xml \
		$(abspath $(CONFORMANCE_OUT))/bin/conformance.test || status=$$?; \
	$(GO) run ./suites/cmd/conformance-report -html $(CONFORMANCE_OUT)/results-$(PROFILE).html \
		$(CONFORMANCE_OUT)/results-$(PROFILE).json || status=1; \
	echo "reports: $(CONFORMANCE_OUT)/"; exit $$status

# The suites against the reference and real third-party edge caches
# (suites/peers/README.md): each peer (PEERS=nginx,varnish,...; default all)
# is installed if missing (apt-get, as root), configured from the neutral
# topology in a temporary directory, run in the foreground on loopback
# against one emulator set; results are compared with
# suites/peers/expectations/<peer>.json. Reports: PEERS_OUT/report.{md,html,png}.
PEERS ?=
PEERS_PROFILE ?= strict
PEERS_OUT ?= conformance.out/peers
.PHONY: conformance-peers
conformance-peers:
	$(GO) run ./suites/cmd/conformance-peers -peers "$(PEERS)" -profile $(PEERS_PROFILE) -out $(PEERS_OUT) -procs $(CONFORMANCE_PROCS)

clean:
	$(GO) clean -testcache

# Containers (docs/deploy.md). images: edgeconform/originemu and
# edgeconform/edgecache, static binaries FROM scratch, nothing pulled.
# conformance-docker: the suites against edgecache in Docker, edge → shield →
# emulated origins (TIERS=1: a single edge). compose-up/down: the demo.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
.PHONY: images conformance-docker compose-up compose-down

images:
	$(GO) run ./deploy/cmd/buildimages

conformance-docker:
	$(GO) run ./deploy/cmd/edgetopo conformance -tiers $(or $(TIERS),2)

compose-up: images
	$(COMPOSE) -f deploy/compose.yaml up -d

compose-down:
	$(COMPOSE) -f deploy/compose.yaml down

# The fault-load soak (reference/soak, issue #12): edgecache serve as a child
# process, 64 clients, faults on a share of fills, version changes, every
# body verified; prints the counts, the edge's peak RSS and origin bytes.
# SOAK_DURATION=10m runs it longer. Not part of make test or make bench.
SOAK_DURATION ?= 60s
.PHONY: soak
soak:
	$(GO) test -tags soak -run '^TestSoak$$' -count=1 -v -timeout 0 ./reference/soak/ -soak.duration $(SOAK_DURATION)
