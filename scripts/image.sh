#!/usr/bin/env bash
# Builds the installer image (Containerfile) with podman, for every
# platform in IMAGE_PLATFORMS (default "linux/amd64 linux/arm64"):
#   1. per platform, the release binaries of its target triple
#      (scripts/release.sh: static-pie, linked with musl, so that they run
#      in an image without a libc (FROM scratch) and on any node; another
#      architecture's are cross-linked);
#   2. a check that both are static and of that architecture (file,
#      readelf): a dynamic or foreign one would fail only on the node;
#   3. a staging directory with the binaries alone as the build context
#      (target/image for this machine's platform, which tests/e2e_deploy.rs
#      and tests/e2e_kubernetes.rs build from; target/image-ARCH for the
#      others), and `podman build --platform` of each into
#      localhost/userns-hostnet-installer:VERSION-ARCH (FROM scratch with
#      COPY alone: no emulation needed);
#   4. the manifest list (an image index) joining them under
#      localhost/userns-hostnet-installer:VERSION (IMAGE overrides the
#      name), the name the chart and deploy/ use: a node pulls the entry of
#      its own platform. `podman manifest push --all IMAGE
#      docker://REGISTRY/userns-hostnet-installer:VERSION` pushes the index
#      with both images.
# With a single platform IMAGE is that platform's image itself, as before
# there was an index (scripts/image-previous.sh builds so).
# Prints each image's size. Run as root from anywhere; offline.
set -euo pipefail

cd "$(dirname "$0")/.."
version=$(awk -F'"' '/^version = / {print $2; exit}' Cargo.toml)
image=${IMAGE:-localhost/userns-hostnet-installer:$version}
read -r -a platforms <<<"${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}"
[ "${#platforms[@]}" -ge 1 ] || { echo "image.sh: IMAGE_PLATFORMS names no platform" >&2; exit 1; }

# A platform's release target triple and what `file` calls its machine.
triple_of() {
	./scripts/release-triple.sh "$1"
}
machine_of() {
	case $1 in
	linux/amd64) echo x86-64 ;;
	linux/arm64) echo 'ARM aarch64' ;;
	esac
}

# Removes whatever IMAGE names now (an earlier index, or an image from
# before there was one), so that the name can be made again.
drop_name() {
	if podman manifest exists "$1" 2>/dev/null; then
		podman manifest rm "$1" >/dev/null
	elif podman image exists "$1"; then
		podman untag "$1" "$1"
	fi
}

built=()
for platform in "${platforms[@]}"; do
	triple=$(triple_of "$platform")
	arch=${platform#linux/}
	machine=$(machine_of "$platform")
	out=target/$triple/release
	# The same build as `make release` / `make release-arm64` (and so the
	# packages): one build serves both.
	./scripts/release.sh "$triple"
	for bin in userns-hostnet userns-hostnet-runtime; do
		desc=$(file -b "$out/$bin")
		case $desc in
		*"statically linked"* | *"static-pie linked"*) ;;
		*)
			echo "$out/$bin is not statically linked: $desc" >&2
			exit 1
			;;
		esac
		case $desc in
		*", $machine,"*) ;;
		*)
			echo "$out/$bin is not a $machine binary ($platform): $desc" >&2
			exit 1
			;;
		esac
		# A static(-pie) binary has no program interpreter and needs no
		# shared library (readelf reads any architecture's, ldd only ours).
		if readelf -lW "$out/$bin" | grep -q 'INTERP' || readelf -dW "$out/$bin" | grep -q '(NEEDED)'; then
			echo "$out/$bin is dynamically linked: $(readelf -dW "$out/$bin" | grep '(NEEDED)')" >&2
			exit 1
		fi
	done
	if [ "$triple" = "$(./scripts/release-triple.sh)" ]; then
		stage=target/image
	else
		stage=target/image-$arch
	fi
	rm -rf "$stage"
	mkdir -p "$stage"
	cp "$out/userns-hostnet" "$out/userns-hostnet-runtime" "$stage/"
	if [ "${#platforms[@]}" = 1 ]; then
		tag=$image
	else
		tag=$image-$arch
	fi
	drop_name "$tag"
	podman build --quiet --platform "$platform" --file Containerfile --tag "$tag" "$stage" >/dev/null
	# podman's layer cache does not tell platforms apart: an image of
	# another platform with the same files would be reused as this one.
	got=$(podman image inspect --format '{{.Os}}/{{.Architecture}}' "$tag")
	[ "$got" = "$platform" ] || { echo "image.sh: $tag is $got, not $platform" >&2; exit 1; }
	echo "$tag ($platform): $(podman image inspect --format '{{.Size}}' "$tag") bytes"
	built+=("$tag")
done

if [ "${#platforms[@]}" -gt 1 ]; then
	drop_name "$image"
	podman manifest create "$image" >/dev/null
	for tag in "${built[@]}"; do
		podman manifest add "$image" "containers-storage:$tag" >/dev/null
	done
	listed=$(podman manifest inspect "$image" | jq -r '[.manifests[].platform | .os + "/" + .architecture] | sort | join(" ")')
	want=$(printf '%s\n' "${platforms[@]}" | sort | paste -sd' ')
	[ "$listed" = "$want" ] || { echo "image.sh: the index $image lists $listed, not $want" >&2; exit 1; }
	echo "$image: an index of $listed"
fi
