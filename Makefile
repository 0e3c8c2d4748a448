# Build, lint and test userns-hostnet. The end-to-end tests run real
# containers: they need root and the Debian packages listed in DEB_PACKAGES.

SHELL := /bin/bash
CARGO ?= cargo
TEST_THREADS ?= 2
DEB_PACKAGES := runc crun containerd conmon podman busybox-static jq lintian rpm time xz-utils python3-yaml acl libseccomp-dev libsystemd-dev pkg-config perl file openssl containernetworking-plugins logrotate gcc-aarch64-linux-gnu libc6-dev-arm64-cross rpmlint musl-tools uidmap

.PHONY: all build bins release release-arm64 package-arm64 package-tools qemu arm64-check check test unit hermetic e2e e2e-runtimes e2e-kubernetes e2e-kubernetes-bins youki fmt-check clippy demo deps clean man package package-check cri-tools image image-previous deb-previous kubernetes helm

all: build

build:
	$(CARGO) build

fmt-check:
	$(CARGO) fmt --all -- --check

# The fuzz targets are a workspace of their own (cargo-fuzz): checked
# here so that they keep building against the engine.
# In a target directory of its own: clippy's artifacts are its own anyway,
# and builds beside it (make test) need not wait for its cargo lock.
CLIPPY_TARGET := CARGO_TARGET_DIR=$(CURDIR)/target/clippy
clippy:
	$(CLIPPY_TARGET) $(CARGO) clippy --all-targets -- -D warnings
	$(CLIPPY_TARGET) $(CARGO) clippy --all-targets --features test-hooks -- -D warnings
	$(CARGO) clippy --manifest-path fuzz/Cargo.toml --bins -- -D warnings

# containerd 1.7.24 (Debian trixie, unpacked, never installed), containerd
# 2.3.4 and runc 1.4.3, containerd 2.4.2 and runc 1.5.3, crun 1.27.1
# (../shared/tools, unpacked) and crictl for tests/e2e_cri.rs, CRI-O 1.36.3
# with pinns and copyimg for tests/e2e_crio.rs, cached in target/ (runc
# 1.5.3 and crun 1.27.1 also serve the direct-runtime e2e tests).
cri-tools:
	./scripts/cri-tools.sh

# kubelet, kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl 1.37.2 and the kubelet 1.35.4, and etcd 3.5.16 (Debian trixie,
# unpacked), for tests/e2e_kubernetes*.rs, cached in
# /var/cache/userns-hostnet/kubernetes (outside the checkout: a machine
# gets them once). The Kubernetes binaries are unpacked from the prebuilt
# copies in ../shared/tools/kubernetes-1.37.2 when that folder is beside
# the checkout (seconds), else built from the Go module proxy (about 18
# minutes of a new machine's run).
kubernetes:
	./scripts/kubernetes.sh

# helm 4.3.2 built from the Go module proxy, for
# crates/admin/tests/helm_chart.rs (lint and render of
# deploy/helm/userns-hostnet) and scripts/helm-manifests.sh (deploy/'s
# manifests, rendered from that chart), cached in
# /var/cache/userns-hostnet/helm (outside the checkout: a machine builds it
# once).
helm:
	./scripts/helm.sh

# The installer image (Containerfile): static release binaries, checked,
# staged in target/image and built with podman; tests/e2e_deploy.rs and
# tests/e2e_deploy_node.rs build it again from that stage.
image:
	./scripts/image.sh

# The previous version's installer image (PREVIOUS_VERSION: the commit of
# main that landed before this work, moved on at each landing; built from
# a git worktree of it, so it needs the git history), for the upgrade of
# the Kubernetes tier's two-node cluster:
# localhost/userns-hostnet-installer:previous. Built once per commit
# (the dependencies are shared with this checkout's build). The same
# commit's .deb is what package-check upgrades from (deb-previous).
PREVIOUS_VERSION ?= ab54b78
image-previous:
	./scripts/image-previous.sh $(PREVIOUS_VERSION)

# The previous version's .deb, for package-check's upgrade (this
# checkout's .deb installed over it with a container of the handler
# running): target/previous/deb/, its Debian version below this
# checkout's. Built once per commit, in the same git worktree as
# image-previous (scripts/previous-tree.sh).
deb-previous:
	./scripts/deb-previous.sh $(PREVIOUS_VERSION)

# youki 0.7.0 for the e2e tier, built once from crates.io into target/youki
# (Debian has no package; about 4 minutes on 2 cores the first time).
youki:
	./scripts/youki.sh

# Both tiers build with test-hooks (the crash tests' pause switch in the
# wrapper, see e2e_crash), so they share one build; release builds, make
# package and make demo never enable it.
TEST_FEATURES := --features test-hooks

# Two tiers of tests, sharing one build.
# unit: no root, no container runtime, no daemon: the libraries' own tests
# (every crate of the workspace), their doc tests and these test binaries (pure logic, fixtures, proptest;
# docs.rs parses the snippets with `containerd config dump` and python3-yaml,
# helm_chart lints and renders the Helm chart with helm (`make helm`);
# none needs root).
UNIT_TESTS := admin_docs admin_doctor admin_doctor_daemons deploy_manifests docs helm_chart hook_definitions layers prop_engine prop_strict writers_agree
# e2e: every other tests/*.rs and crates/*/tests/*.rs (`cargo test --test
# NAME` here finds a test of any default member of the workspace, and no
# two crates have a test of the same name, so each name runs once). They run real containers under runc, crun,
# containerd and podman, or the wrapper's create (which records converted
# containers under /run), as root; a missing prerequisite fails them, never
# skips them. The Kubernetes tier (its clusters side by side,
# scripts/kubernetes-tier.sh) runs beside the others.
KUBERNETES_TESTS := e2e_kubernetes e2e_kubernetes_fleet e2e_kubernetes_upgrade
E2E_TESTS := $(filter-out $(UNIT_TESTS) $(KUBERNETES_TESTS),$(sort $(basename $(notdir $(wildcard tests/*.rs crates/*/tests/*.rs)))))

# The totals of the `test result:` lines of the logs in $(1), after $(2).
totals = awk -v label='$(2)' '/^test result:/ { p += $$4; f += $$6; i += $$8 } END { printf "%s%d passed, %d failed, %d skipped\n", label, p, f, i }' $(1)

# `make check`: the contributor's inner loop, no root-only tier and no
# runtime: fmt, clippy, the unit tier and the libraries' tests as nobody
# (hermetic needs root to hide the runtimes). Minutes on a warm tree.
check: fmt-check clippy helm unit hermetic

# `make test`: every check and both tiers, in three lanes so that the
# Kubernetes tier's waiting overlaps the CPU-bound stages
# (scripts/test.sh); the last line is the total over every test binary.
test: deps
	./scripts/test.sh

# Every crate's binaries first, with the tests' features: the admin tool
# is the admin crate's binary, which a root crate's test finds beside the
# wrapper but which cargo builds only for the admin crate's own tests.
bins:
	$(CARGO) build $(TEST_FEATURES)

unit: bins
	@mkdir -p target; set -o pipefail; status=0; \
	( s=0; \
	  $(CARGO) test $(TEST_FEATURES) --no-fail-fast --lib $(addprefix --test ,$(UNIT_TESTS)) -- --test-threads=$(TEST_THREADS) || s=1; \
	  $(CARGO) test $(TEST_FEATURES) --no-fail-fast --doc -- --test-threads=$(TEST_THREADS) || s=1; \
	  exit $$s ) 2>&1 | tee target/test-unit.log || status=1; \
	$(call totals,target/test-unit.log,unit: ); \
	exit $$status

# The libraries' tests again (every crate's), as nobody and with every
# runtime hidden (needs root to set that up): `cargo test --lib` must need
# neither. Not
# added to the totals, which count each test once.
hermetic:
	@mkdir -p target; status=0; \
	./scripts/hermetic-unit.sh $(TEST_FEATURES) >target/test-hermetic.log 2>&1 || { status=$$?; cat target/test-hermetic.log; }; \
	$(call totals,target/test-hermetic.log,hermetic (lib tests as nobody, no runtime): ); \
	exit $$status

# The whole e2e tier: the Kubernetes tier in the background beside the others.
e2e: e2e-kubernetes-bins e2e-runtimes-prerequisites
	@status=0; \
	./scripts/kubernetes-tier.sh --run >target/lane-kubernetes.log 2>&1 & kubernetes=$$!; \
	$(MAKE) --no-print-directory e2e-runtimes || status=1; \
	wait $$kubernetes || status=1; \
	cat target/lane-kubernetes.log; \
	$(call totals,target/test-e2e.log target/test-e2e-kubernetes.log,e2e: ); \
	exit $$status

e2e-runtimes-prerequisites: bins cri-tools youki image-previous image
.PHONY: e2e-runtimes-prerequisites

# Their test binaries, built (make test runs them beside other builds).
e2e-runtimes-bins: bins
	$(CARGO) test $(TEST_FEATURES) --no-run $(addprefix --test ,$(E2E_TESTS))
.PHONY: e2e-runtimes-bins

# Every e2e test but the Kubernetes tier.
e2e-runtimes: e2e-runtimes-prerequisites
	@mkdir -p target; set -o pipefail; status=0; \
	$(CARGO) test $(TEST_FEATURES) --no-fail-fast $(addprefix --test ,$(E2E_TESTS)) -- --test-threads=$(TEST_THREADS) 2>&1 | tee target/test-e2e.log || status=1; \
	$(call totals,target/test-e2e.log,e2e (but the Kubernetes tier): ); \
	exit $$status

# The Kubernetes tier's test binaries, built and listed for
# scripts/kubernetes-tier.sh --run (which then needs no cargo).
e2e-kubernetes-bins: bins cri-tools kubernetes image image-previous helm
	./scripts/kubernetes-tier.sh --build $(TEST_FEATURES)

# The Kubernetes tier alone (tests/e2e_kubernetes*.rs), its clusters side by side.
e2e-kubernetes: e2e-kubernetes-bins
	@status=0; ./scripts/kubernetes-tier.sh --run || status=1; \
	$(call totals,target/test-e2e-kubernetes.log,Kubernetes tier: ); \
	exit $$status

# Installs only the Debian packages that are missing, after naming them
# (make demo runs this first: it says what it installs before it does).
deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep 'install ok installed' >/dev/null || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: these Debian packages are missing and will now be installed with apt-get (and their dependencies):$$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else \
		echo "make deps: nothing to install: every Debian package needed is installed ($(DEB_PACKAGES))"; \
	fi

# Man pages into target/man, shell completions into target/completions,
# both generated from the clap definition in crates/admin/src/cli.rs.
man:
	$(CARGO) run --quiet -p userns-hostnet-admin --example gen-docs -- target

# Release binaries are static-pie, linked with musl: the wrapper runs on
# every container start, and without the dynamic loader its pass-through
# costs one execve; without glibc's start-up (its CPU-feature and cache
# probes, a `cpuid` each, which trap to a VM's hypervisor) it costs less
# than a static C program that only execs (docs/performance.md). The
# packages need no particular libc on the node either. scripts/release.sh
# builds them (an explicit --target keeps RUSTFLAGS off build scripts and
# proc-macros, which cannot be static) into target/$(RELEASE_TRIPLE)/release.
# Tests and clippy build for the host's own triple, HOST_TRIPLE.
HOST_TRIPLE := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
RELEASE_TRIPLE := $(shell ./scripts/release-triple.sh 2>/dev/null)
RELEASE_DIR := target/$(RELEASE_TRIPLE)/release

release:
	./scripts/release.sh $(RELEASE_TRIPLE)

# arm64 nodes: the same binaries for aarch64-unknown-linux-musl, static
# (not PIE: rustc offers no static-pie there, docs/packages.md),
# cross-linked with Debian's gcc-aarch64-linux-gnu (scripts/release.sh),
# into target/aarch64-unknown-linux-musl/release; and their .deb (arm64)
# and .rpm (aarch64), from the same Cargo metadata, in that directory's
# debian/ and generate-rpm/. `make image` builds the installer image for
# both architectures (scripts/image.sh). The aarch64 tests under qemu-user
# build for ARM64_TRIPLE, glibc's, as the host's tests do.
ARM64_TRIPLE := aarch64-unknown-linux-gnu
ARM64_RELEASE_TRIPLE := $(shell ./scripts/release-triple.sh arm64 2>/dev/null)

release-arm64:
	./scripts/release.sh $(ARM64_RELEASE_TRIPLE)

package-arm64: man release-arm64 package-tools
	$(CARGO) deb --no-build --target $(ARM64_RELEASE_TRIPLE)
	$(CARGO) generate-rpm --target $(ARM64_RELEASE_TRIPLE)

# What of arm64 can be tested on an x86_64 machine, under qemu-user
# (trixie's qemu-aarch64 10.0, scripts/qemu.sh: Debian 12's 7.2 lacks
# system calls the wrapper makes): the libraries' tests built for aarch64,
# run once, as the hermetic tier runs them (as nobody, every runtime
# hidden: stricter than a plain cargo test --lib, and the run under
# qemu-user costs minutes), then
# scripts/arm64-check.sh: the aarch64 binaries (static, ARM aarch64), the
# wrapper's pass-through and a converting create in front of a stub
# runtime, the admin tool, the arm64 packages (lintian, rpmlint, installed
# and removed in a scratch root) and the installer image's index (both
# platforms, each with binaries of its architecture). Kernel-facing
# behaviour (mounts, namespaces) cannot run under qemu-user: the e2e
# tier covers it on x86_64. On an aarch64 machine the tests run natively.
# Left out under qemu-user (they run on x86_64, and natively on
# aarch64): one asks the kernel the ioctl NS_GET_USERNS, which qemu-user
# does not pass on (ENOTTY); two tell a mount from the one above it,
# and see no boundary under qemu-user.
ARM64_QEMU_SKIP := --skip host::tests::own_network_namespace_is_owned_by_own_user_namespace \
	--skip host::tests::sys_sources_are_recognised_by_resolution_and_file_system \
	--skip sys::dest_walk::tests::a_plain_bind_does_not_carry_the_hosts_mounts_below_it

arm64-check: package-arm64 image
	@mkdir -p target; set -o pipefail; status=0; skip=; \
	if [ "$(HOST_TRIPLE)" != "$(ARM64_TRIPLE)" ]; then \
		qemu=$$(./scripts/qemu.sh) || exit 1; skip="$(ARM64_QEMU_SKIP)"; \
		export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
			CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="$$qemu -L /usr/aarch64-linux-gnu" QEMU_AARCH64=$$qemu; \
	fi; \
	HERMETIC_TEST_ARGS="$$skip" ./scripts/hermetic-unit.sh --target $(ARM64_TRIPLE) $(TEST_FEATURES) >target/test-arm64-hermetic.log 2>&1 || \
		{ status=1; cat target/test-arm64-hermetic.log; }; \
	$(call totals,target/test-arm64-hermetic.log,arm64 lib tests (aarch64 under qemu-user, as nobody, no runtime): ); \
	./scripts/arm64-check.sh || status=1; \
	exit $$status

# The packagers, from crates.io when missing (minutes, once per machine;
# unoptimized: they copy and compress a few MB, and build in less time).
PACKAGER_BUILD := CARGO_PROFILE_RELEASE_OPT_LEVEL=0
package-tools:
	command -v cargo-deb >/dev/null || $(PACKAGER_BUILD) $(CARGO) install --locked cargo-deb
	command -v cargo-generate-rpm >/dev/null || $(PACKAGER_BUILD) $(CARGO) install --locked cargo-generate-rpm

# qemu-user for arm64-check (scripts/qemu.sh: trixie's, cached once per machine).
qemu:
	./scripts/qemu.sh >/dev/null

# Both packages from the same Cargo metadata and the same static binaries
# (both tools read target/release/ in the asset lists as $(RELEASE_DIR));
# the tools are installed when missing.
package: man release package-tools
	$(CARGO) deb --no-build --target $(RELEASE_TRIPLE)
	$(CARGO) generate-rpm --target $(RELEASE_TRIPLE)

# Contents, lintian, and the .deb installed, exercised and purged here;
# then the upgrade from the previous version's .deb (built first, so that
# this checkout's binaries are the last built).
package-check: deb-previous package
	./packaging/check.sh

demo: deps build
	./scripts/demo.sh target/debug/userns-hostnet-runtime

clean:
	$(CARGO) clean
