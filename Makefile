# Build, lint and test userns-hostnet. The end-to-end tests run real
# containers: they need root and the Debian packages listed in DEB_PACKAGES.

CARGO ?= cargo
TEST_THREADS ?= 2
DEB_PACKAGES := runc crun containerd podman busybox-static jq

.PHONY: all build test fmt-check clippy demo deps clean

all: build

build:
	$(CARGO) build

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --all-targets -- -D warnings

test: fmt-check clippy
	$(CARGO) test --no-fail-fast -- --test-threads=$(TEST_THREADS)

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

demo: deps build
	./scripts/demo.sh target/debug/userns-hostnet-runtime

clean:
	$(CARGO) clean
