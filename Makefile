# Build, lint and test userns-hostnet. The end-to-end tests run real
# containers: they need root and the Debian packages listed in DEB_PACKAGES.

SHELL := /bin/bash
CARGO ?= cargo
TEST_THREADS ?= 2
DEB_PACKAGES := runc crun containerd podman busybox-static jq lintian rpm xz-utils

.PHONY: all build test fmt-check clippy demo deps clean man package package-check cri-tools

all: build

build:
	$(CARGO) build

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --all-targets -- -D warnings

# containerd 1.7.24 (Debian trixie, unpacked, never installed) and crictl
# for tests/e2e_cri.rs, cached in target/.
cri-tools:
	./scripts/cri-tools.sh

# The last line is the total over every test binary.
test: fmt-check clippy package-check cri-tools
	mkdir -p target; set -o pipefail; $(CARGO) test --no-fail-fast -- --test-threads=$(TEST_THREADS) 2>&1 | tee target/test.log
	@awk '/^test result:/ { p += $$4; f += $$6; i += $$8 } END { printf "%d passed, %d failed, %d skipped\n", p, f, i }' target/test.log

# Installs only the Debian packages that are missing.
deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	fi

# Man pages into target/man, shell completions into target/completions,
# both generated from the clap definition in src/cli.rs.
man:
	$(CARGO) run --quiet --example gen-docs -- target

# Both packages from the same Cargo metadata; the tools are installed when missing.
package: man
	command -v cargo-deb >/dev/null || $(CARGO) install --locked cargo-deb
	command -v cargo-generate-rpm >/dev/null || $(CARGO) install --locked cargo-generate-rpm
	$(CARGO) deb
	$(CARGO) generate-rpm

# Contents, lintian, and the .deb installed, exercised and purged here.
package-check: package
	./packaging/check.sh

demo: deps build
	./scripts/demo.sh target/debug/userns-hostnet-runtime

clean:
	$(CARGO) clean
