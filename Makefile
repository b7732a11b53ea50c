# cni-announcer — see README.md. Targets set themselves up on a fresh Debian machine.
SHELL := /bin/bash
DESTDIR ?=
CNI_BIN_DIR ?= /opt/cni/bin
SOURCES := $(shell find src -name '*.ts') scripts/build.mjs package-lock.json

.PHONY: all build install deps system-deps typecheck test test-unit test-integration demo bench clean image image-archive

all: build

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

deps: node_modules/.package-lock.json

system-deps:
	bash scripts/ensure-system-deps.sh

bin/announcer: node_modules/.package-lock.json $(SOURCES)
	node scripts/build.mjs

bin/THIRD_PARTY_NOTICES: node_modules/.package-lock.json scripts/third-party-notices.mjs
	node scripts/third-party-notices.mjs $@

## build: bundle the plugin into bin/announcer (one executable file) and its bin/THIRD_PARTY_NOTICES
build: bin/announcer bin/THIRD_PARTY_NOTICES

## install: copy the self-contained plugin to $(DESTDIR)$(CNI_BIN_DIR)/announcer
install: bin/announcer
	install -D -m 0755 bin/announcer $(DESTDIR)$(CNI_BIN_DIR)/announcer

typecheck: deps
	npx tsc --noEmit -p .

## test: type check, unit tests, integration tests (real namespaces and plugins; needs root)
test: deps system-deps build typecheck
	@mkdir -p .test-results
	npx vitest run --reporter=default --reporter=json --outputFile.json=.test-results/vitest.json; \
	  status=$$?; node scripts/test-summary.mjs .test-results/vitest.json || true; exit $$status

test-unit: deps
	npx vitest run test/unit

test-integration: deps system-deps build
	npx vitest run test/integration

## demo: the stale-neighbour bug and its fix on a throwaway bridge and netns (needs root)
demo: deps system-deps build
	bash scripts/demo.sh bin

## bench: each command's start-up cost next to `node` and the Go peer, one table with budgets (needs root; BENCH_ROUNDS=N)
bench: deps system-deps build
	npx vite-node scripts/bench/main.ts

## image: the installer image, built offline FROM scratch with podman (IMAGE=name:tag to rename)
image: deps system-deps build
	bash scripts/image.sh $(if $(IMAGE),--tag $(IMAGE))

## image-archive: the image, also saved as an OCI archive, bin/cni-announcer-<version>.oci.tar, for air-gapped registries
image-archive: deps system-deps build
	bash scripts/image.sh $(if $(IMAGE),--tag $(IMAGE)) --archive bin

clean:
	rm -rf bin
