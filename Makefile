# cni-announcer — see README.md. Targets set themselves up on a fresh Debian machine.
SHELL := /bin/bash
DESTDIR ?=
CNI_BIN_DIR ?= /opt/cni/bin
SOURCES := $(shell find src scripts/build -name '*.ts') scripts/build.mjs package.json package-lock.json
# x64: baseline x86-64 (no AVX2 needed); arm64: cross-built from the npm registry's packages.
ARCH ?= x64
ANNOUNCER := bin/announcer$(if $(filter-out x64,$(ARCH)),-$(ARCH))

.PHONY: all build install deps system-deps typecheck lint format test test-unit test-integration demo bench bench-mass bench-cri soak mutation clean image image-archive

all: build

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

deps: node_modules/.package-lock.json

system-deps:
	bash scripts/ensure-system-deps.sh

bin/announcer: node_modules/.package-lock.json $(SOURCES)
	node_modules/.bin/bun scripts/build.mjs --arch=x64 --out=$@

bin/announcer-arm64: node_modules/.package-lock.json $(SOURCES)
	node_modules/.bin/bun scripts/build.mjs --arch=arm64 --out=$@

bin/THIRD_PARTY_NOTICES: node_modules/.package-lock.json scripts/third-party-notices.mjs
	node scripts/third-party-notices.mjs $@

## build: compile the plugin into one self-contained executable, bin/announcer (ARCH=arm64: bin/announcer-arm64), and its bin/THIRD_PARTY_NOTICES
build: $(ANNOUNCER) bin/THIRD_PARTY_NOTICES

## install: copy the self-contained plugin to $(DESTDIR)$(CNI_BIN_DIR)/announcer
install: $(ANNOUNCER)
	install -D -m 0755 $(ANNOUNCER) $(DESTDIR)$(CNI_BIN_DIR)/announcer

typecheck: deps
	npx tsc --noEmit -p .

## lint: Biome (pinned in devDependencies) checks formatting and lint rules; `make format` rewrites.
## Then no line over 120 characters (scripts/check-widths.mjs)
lint: deps
	npx biome ci --reporter=summary .
	node scripts/check-widths.mjs src scripts test

format: deps
	npx biome check --write .

## test: type check, unit tests, integration tests (real namespaces and plugins, the arm64 build under qemu-user; needs root)
test: deps system-deps build bin/announcer-arm64 typecheck lint
	@mkdir -p .test-results
	npx vitest run --reporter=default --reporter=json --outputFile.json=.test-results/vitest.json; \
	  status=$$?; node scripts/test-summary.mjs .test-results/vitest.json || true; exit $$status

test-unit: deps
	npx vitest run test/unit

test-integration: deps system-deps build bin/announcer-arm64
	npx vitest run test/integration

## demo: the stale-neighbour bug and its fix on a throwaway bridge and netns (needs root)
demo: deps system-deps build
	npx vite-node scripts/demo/main.ts

## bench: each command's start-up cost (warm, cold) next to `node`, the Go peer and the runtime floor, one table with the start-up budgets (needs root; BENCH_ROUNDS=N)
bench: deps system-deps build
	npx vite-node scripts/bench/main.ts

## bench-mass: many pods at once: the announcer's processes and PSS, CPU per pod cycle against the bridge alone and the runtime floor (needs root; BENCH_PODS=N BENCH_CYCLES=N)
bench-mass: deps system-deps build
	npx vite-node scripts/bench/mass-start.ts

## bench-cri: 40 pod sandboxes at once through a private containerd's CRI, bridge alone vs. bridge + announcer cold and warm; median RunPodSandbox and the ratio (needs root; 2 to 4 minutes; BENCH_PODS=N BENCH_CRI_RUNS=N)
bench-cri: deps system-deps build
	npx vite-node -c scripts/bench/vite-node.config.ts scripts/bench/cri.ts

## soak: the fault soak: pods churn through the announcer while a seeded chaos schedule SIGTERMs, SIGKILLs, SIGSTOPs, idles, upgrades and replaces it; tshark and the CNI results are the oracle, printed as tables (needs root; SOAK_S=N seconds, default 90; SOAK_SEED=N repeats a run's choices; SOAK_WORKERS=N)
soak: deps system-deps build
	npx vite-node scripts/soak/main.ts

## mutation: StrykerJS over the unit tests (all of src but the Bun transports), then the score per folder; MUTATE='src/announce/**/*.ts' for one folder (comma-separated globs), INCREMENTAL=1 to reuse the last run's results. Slow: minutes per folder
mutation: deps
	MUTATE='$(MUTATE)' INCREMENTAL='$(INCREMENTAL)' nice -n 10 npx stryker run stryker.config.mjs
	npx vite-node scripts/mutation/main.ts reports/mutation/mutation.json

## image: the installer image, built offline FROM scratch with podman (IMAGE=name:tag to rename)
image: deps system-deps build
	bash scripts/image.sh $(if $(IMAGE),--tag $(IMAGE))

## image-archive: the image, also saved as an OCI archive, bin/cni-announcer-<version>.oci.tar, for air-gapped registries
image-archive: deps system-deps build
	bash scripts/image.sh $(if $(IMAGE),--tag $(IMAGE)) --archive bin

clean:
	rm -rf bin
