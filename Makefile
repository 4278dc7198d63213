# splitbrain: the README's commands. `make test` is what CI runs.
GO      ?= go
BIN     := bin/splitbrain
RUNARGS ?= --target raft --nodes 5 --time-limit 60s --nemesis partition,pause,kill,clock --resource strict

# vet, the binary and the programs `splitbrain images` compiles into
# images share one set of compile flags (harness/kind_go.go's goGCFlags:
# no DWARF, no inlining), and so the Go build cache: on a new machine
# vet's compile of the packages the targets' programs import (client-go,
# etcd's client) is the images' too, not a second one of minutes. The
# race-detecting tests need cgo and compile their own.
# TestMakeCompilesAsImagesDo keeps the flags in step.
STATIC := CGO_ENABLED=0
STATICFLAGS := -trimpath -gcflags=all="-dwarf=false -l"

.PHONY: build rundeps deps orphans images testimages test nocontainer vet unit run conform catalogue bugs swarm bench fuzz clean

build:
	$(STATIC) $(GO) build $(STATICFLAGS) -o $(BIN) ./cmd/splitbrain

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(STATIC) $(GO) vet $(STATICFLAGS) ./...

# From Debian, installed only when missing. A run needs libfaketime (clock
# faults on targets not written in Go) and debootstrap, which makes the
# Debian base of the real systems' images (once per machine), with
# debian-archive-keyring to check what it fetches on a host that is not
# Debian (an Ubuntu CI runner). The tests also need Chromium, to open a
# report in a browser, and xmllint, to check JUnit reports against the
# schema.
FAKETIME_LIB := /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
DEBIAN_KEYRING := /usr/share/keyrings/debian-archive-keyring.gpg
rundeps:
	@test -e $(FAKETIME_LIB) && command -v debootstrap >/dev/null && test -e $(DEBIAN_KEYRING) || \
		(apt-get update && apt-get install -y --no-install-recommends libfaketime debootstrap debian-archive-keyring)
deps: rundeps
	@command -v chromium >/dev/null && command -v xmllint >/dev/null || \
		(apt-get update && apt-get install -y --no-install-recommends chromium libxml2-utils)

# Every image the tests and runs build: the heavy bases (the Debian base
# and packages, an etcd and a kube-apiserver compiled from their modules),
# made once per machine and cached, and every target's, fixture's and the
# harness's own program, compiled (which fills the Go build cache), several
# at once: many minutes on a new machine, seconds after. Made before
# the tests, so that no test's timeout pays for them.
images: build rundeps
	./$(BIN) images

# The targets the container tests run, whose images make test makes
# ahead with the tests' own; the catalogue runs the others. Leaving out
# the rest (those on a kube-apiserver, whose compile was 12 to 20 of a new
# machine's 31 minutes; those on Debian trixie, a second debootstrap and
# second Java, Patroni and Redis package sets) keeps a new machine's make
# test to the builds its tests need. targets/ keeps the
# list in step with the tests (TestMakeTestMakesItsTargets).
TEST_TARGETS := bully curator-latch etcd etcd-election etcd-election-naive \
	hashicorp-raft lease patroni raft raft-forgetful-vote raft-no-checkquorum \
	raft-unsynced-state redis-cluster redis-lease redis-lease-volatile \
	redis-sentinel ring zk-election zk-election-naive zookeeper
comma := ,
empty :=
space := $(empty) $(empty)
testimages: build rundeps
	./$(BIN) images --tests --target $(subst $(space),$(comma),$(strip $(TEST_TARGETS)))

# The containers and networks that killed runs left behind (their process
# is gone), removed before the tests start beside them.
orphans: build
	./$(BIN) clean --orphans

# Unit tests and the integration tests, which start real containers.
# Three of a package's parallel tests at once (go test's default is one per
# core): most of a test that starts a cluster is waiting on its timers.
# Such tests are parallel unless they time a bound of the target's or set
# the environment (docs/figures.md has the times). The harness's own
# tests took 21.4 minutes in a CI run on a loaded machine whose Engine
# stores on fuse-overlayfs, where a container starts slowly: the timeout
# leaves them room (a test's own deadline ends its run before it).
# What the tests need is made side by side: vet's compile is CPU, the
# Debian base and the packages are mostly the network, and on a new
# machine each takes minutes. The tests of the packages that start no
# container need no image: they run beside the images' making, and only
# the packages that start containers wait for it (on a new machine, the
# small packages' links and runs had been two minutes at the end). The
# harness's, the longest (nine minutes), are listed first to start first.
# Packages at go test's default, one per core: three at once slowed the
# harness's tests as much as it saved (docs/figures.md). No inlining, as
# for the images' programs: on an empty build cache the test binaries
# compile in 202 s instead of 244 s.
CONTAINER_PKGS := ./harness/... ./e2e/... ./cmd/...
TESTFLAGS := -race -gcflags=all=-l -count=1
test:
	$(MAKE) -j4 vet orphans testimages nocontainer
	$(GO) test $(TESTFLAGS) -timeout 40m -parallel 3 $(CONTAINER_PKGS)

# The tests of every package but CONTAINER_PKGS.
nocontainer: deps
	$(GO) test $(TESTFLAGS) $$($(GO) list ./... | grep -vxF "$$($(GO) list $(CONTAINER_PKGS))")

# Unit tests only: no Docker needed.
unit:
	$(GO) test -race -count=1 -short ./...

run: build
	./$(BIN) run $(RUNARGS)

# The node API's rules (splitbrain conform) over every target under
# targets/, one after another, a few seconds each once its images are
# made. Fails if any target breaks a rule, naming each that did.
conform: build
	@broke=""; for manifest in targets/*/target.yaml; do \
		dir=$$(dirname $$manifest); echo "== $$dir"; \
		./$(BIN) conform --target-dir $$dir || broke="$$broke $$dir"; \
	done; test -z "$$broke" || { echo "conform: broken by$$broke"; exit 1; }

# The expected verdicts of targets/catalogue.yaml, a suite: every row once,
# each run stopped at the violation it must find, PARALLEL runs at once
# (TARGET=bully for one target's rows). Fails when a verdict differs;
# leaves results/suite.json and the JUnit report results/catalogue.xml.
# auto starts another run only while the machine has CPU to spare for it
# (harness/suite's Gate): about four on an idle 2-core machine, fewer on
# a busy one, at least one, at most two per core.
PARALLEL ?= auto
catalogue: build
	./$(BIN) suite targets/catalogue.yaml --stop-on-violation --parallel $(PARALLEL) --junit results/catalogue.xml $(if $(TARGET),--target $(TARGET))

# The track record (docs/bugs.md): each documented bug's rows, before
# and after its fix; BUG=<id> runs one bug's.
bugs: build
	./$(BIN) suite targets/bugs.yaml --stop-on-violation --parallel $(PARALLEL) --junit results/bugs.xml $(if $(BUG),--bug '$(BUG)')

# Raft, a Raft with a flaw and etcd, each cluster spread over three
# Docker Engines (targets/swarm.yaml, docs/engines.md): engines started in
# containers of this machine for it, and removed after with whatever the
# runs left on them; or ENGINES=FILE's, left as they are.
ENGINES ?=
SWARM_ENGINES := results/swarm-engines.yaml
swarm: build
ifeq ($(ENGINES),)
	@mkdir -p results; rc=0; \
	./$(BIN) engines $(SWARM_ENGINES) --start 3 && \
	./$(BIN) suite targets/swarm.yaml --engines $(SWARM_ENGINES) --junit results/swarm.xml || rc=$$?; \
	test ! -e $(SWARM_ENGINES) || ./$(BIN) clean --engines $(SWARM_ENGINES) >/dev/null; \
	./$(BIN) clean --orphans >/dev/null; exit $$rc
else
	./$(BIN) suite targets/swarm.yaml --engines $(ENGINES) --junit results/swarm.xml
endif

# The checkers over synthetic runs of 10k, 100k and 1M events, one pass each:
# time, events/s, heap (input-MB, peak-MB) and allocations.
# Then the HTML report of 10k, 100k and 1M events: render time, report-MB and
# paint-ms and ready-ms (from navigation to first paint, and to the page's script
# done, in Chromium when installed).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -benchmem ./checkers/...
	$(GO) test -run '^$$' -bench . -benchtime 1x -benchmem ./results/

# Each fuzz target for FUZZTIME: random correct runs pass every checker, and a
# violation injected into one is found by its checker.
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCorrect$$' -fuzztime $(FUZZTIME) ./checkers/
	$(GO) test -run '^$$' -fuzz '^FuzzInject$$' -fuzztime $(FUZZTIME) ./checkers/

clean: build
	./$(BIN) clean
