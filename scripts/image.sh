#!/usr/bin/env bash
# image.sh — build the installer image offline, FROM scratch, with podman.
#
#   scripts/image.sh [--tag NAME] [--archive PATH]
#
# The image holds bin/announcer as /announcer, bin/THIRD_PARTY_NOTICES next to
# it, the shared libraries the executable and koffi's native addon load (found
# with ldd, the dynamic loader included) copied from this machine at the paths
# ldd reports, and the Debian copyright file of each library's package under
# /usr/share/doc. Nothing is pulled: there is no base image.
#
#   ENTRYPOINT ["/announcer"]
#   CMD        ["install", "--dest", "/host/opt/cni/bin", "--also-notices"]
#
# so running the image with the node's /opt/cni/bin mounted at /host/opt/cni/bin
# installs the plugin there, and `sleep` as its argument idles until SIGTERM.
#
#   --tag NAME      image name (default localhost/cni-announcer:<package.json version>)
#   --archive PATH  also save the image as an OCI archive, to PATH or, when PATH
#                   is a directory, to PATH/cni-announcer-<version>.oci.tar (for
#                   `skopeo copy oci-archive:FILE docker://…` or `podman load -i FILE`)
#
# $PODMAN is the podman command, word-split (default `podman`); tests point it
# at a private store, e.g. PODMAN="podman --root /tmp/x/root --runroot /tmp/x/run".
# Layer files get mtime 0 and the image a creation time of 0 (--timestamp 0), so
# the same inputs give the same image ID.
set -euo pipefail

prog=${0##*/}
root=$(cd "$(dirname "$0")/.." && pwd)
die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 1
}

read -r -a podman <<<"${PODMAN:-podman}"
version=$(sed -n 's/^  "version": "\([^"]*\)",*$/\1/p' "$root/package.json")
[[ -n $version ]] || die "no version in package.json"
tag=localhost/cni-announcer:$version
archive=
while (($#)); do
	case $1 in
	--tag) tag=${2:?--tag needs a name}; shift 2 ;;
	--archive) archive=${2:?--archive needs a path}; shift 2 ;;
	*) die "unknown argument '$1' (usage: $prog [--tag NAME] [--archive PATH])" ;;
	esac
done

bin=$root/bin/announcer
notices=$root/bin/THIRD_PARTY_NOTICES
[[ -f $bin ]] || die "$bin is missing: run make build"
[[ $(head -c4 "$bin" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]] || die "$bin is not an ELF executable: run make build"
[[ -f $notices ]] || die "$notices is missing: run make build"
command -v "${podman[0]}" >/dev/null || die "${podman[0]} not found (scripts/ensure-system-deps.sh installs it)"

# koffi's addon is inside the executable; ldd reads the same file from node_modules.
koffi_pkg=$(cd "$root" && node -p "require.resolve('@koromix/koffi-' + process.platform + '-' + process.arch + '/package.json')")
addon=$(dirname "$koffi_pkg")/$(node -p "process.platform + '_' + process.arch")/koffi.node
[[ -f $addon ]] || die "koffi's addon not found at $addon: run npm ci"

stage=$(mktemp -d /tmp/announcer-image.XXXXXX)
trap 'rm -rf "$stage"' EXIT
rootfs=$stage/rootfs
mkdir -p "$rootfs"
install -m 0755 "$bin" "$rootfs/announcer"
install -m 0644 "$notices" "$rootfs/THIRD_PARTY_NOTICES"

# Every absolute path ldd prints: `libc.so.6 => /lib/…/libc.so.6 (0x…)` and the loader's `/lib64/ld-linux-x86-64.so.2 (0x…)`.
libs=$({ ldd "$bin"; ldd "$addon"; } | awk '/not found/ { print "MISSING " $1; next } { for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | sort -u)
if grep -q '^MISSING' <<<"$libs"; then die "ldd cannot resolve: $(grep '^MISSING' <<<"$libs" | cut -d' ' -f2 | tr '\n' ' ')"; fi
grep -q '/ld-linux' <<<"$libs" || die "ldd named no dynamic loader for $bin"

owner() { # the Debian package that ships a library, under any of its merged-/usr names
	local p=$1 real
	real=$(readlink -f "$p")
	for cand in "$p" "$real" "${real#/usr}" "/usr$p"; do
		dpkg-query -S "$cand" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
	done
	return 1
}

declare -A pkgs=()
for lib in $libs; do
	mkdir -p "$rootfs$(dirname "$lib")"
	cp -L --preserve=mode "$lib" "$rootfs$lib"
	pkg=$(owner "$lib") || die "no Debian package owns $lib (its copyright file must go into the image)"
	pkgs[$pkg]=1
done
for pkg in "${!pkgs[@]}"; do
	copyright=/usr/share/doc/$pkg/copyright
	[[ -f $copyright ]] || die "$copyright is missing"
	install -D -m 0644 "$copyright" "$rootfs$copyright"
done

cat >"$stage/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
LABEL org.opencontainers.image.title="cni-announcer" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.licenses="Apache-2.0" \\
      org.opencontainers.image.description="Installs the announcer CNI plugin into /host/opt/cni/bin"
ENTRYPOINT ["/announcer"]
CMD ["install", "--dest", "/host/opt/cni/bin", "--also-notices"]
EOF

"${podman[@]}" build --quiet --pull=never --network=none --timestamp 0 --format oci -f "$stage/Containerfile" -t "$tag" "$stage" >/dev/null
id=$("${podman[@]}" image inspect --format '{{.Id}}' "$tag")
size=$(du -sk "$rootfs" | cut -f1)
echo "built $tag (image ${id:0:12}, ${size} KiB: announcer, THIRD_PARTY_NOTICES, ${#pkgs[@]} packages' libraries: $(tr '\n' ' ' <<<"$libs"))"

if [[ -n $archive ]]; then
	[[ -d $archive ]] && archive=${archive%/}/cni-announcer-$version.oci.tar
	archive=$(realpath -m "$archive") # $PODMAN may run elsewhere (nsenter starts at /)
	rm -f "$archive.tmp"
	"${podman[@]}" save --quiet --format oci-archive -o "$archive.tmp" "$tag"
	mv -f "$archive.tmp" "$archive"
	echo "saved $tag to $archive"
fi
