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

# Benchmarks: synthetic generation, the wire servers, the emulator end to end,
# routing, and requests proxied through the reference.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) \
		./emulators/synth/ ./emulators/wire/... ./emulators/originemu/ \
		./reference/routing/ ./reference/edge/

# Start the origin emulator
# with its default set of listeners (see the README). Ctrl-C stops it.
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

# Containers (deploy/README.md). images: edgeconform/originemu and
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
