#!/usr/bin/env bash
# ensure-system-deps.sh — install the Debian packages that `make demo`,
# `make test` and `make bench` need, and only those that are missing.
#
#   containernetworking-plugins  the reference CNI plugins (bridge, macvlan,
#                                static, host-local ...) in /usr/lib/cni
#   iproute2 iputils-ping        ip, ping
#   arping procps                arping, pgrep/ps/sysctl
#   tcpdump tshark               capture, and an independent dissector
#   python3                      raw frames the tests send (BPDUs) from an
#                                AF_PACKET socket
#   podman runc busybox-static   `make image` (built FROM scratch, offline) and
#                                the image and podman tests (runc: crun fails
#                                on cgroup v1 hybrid hosts; busybox-static is
#                                the test image's only file)
#   time strace                  GNU time (peak RSS in `make bench`), strace
#                                (where `make bench` sees ADD's socket released)
#   containerd                   a private containerd whose CRI plugin calls the
#                                announcer as Kubernetes does (never the system's)
#   qemu-user-static, the arm64  the arm64 binary run under qemu-user, and the
#   cross libraries, gcc and     kernel constants checked against both
#   gcc-aarch64-linux-gnu with   architectures' C headers
#   libc6-dev-arm64-cross
#
# Idempotent: when everything is present it changes nothing, runs no
# `apt-get update`, and prints one line. Otherwise it runs `apt-get update`
# once, installs the missing packages in one go, and prints one line per
# group that it installed. apt's own output is kept in a temporary log that
# is shown only if the install fails.
#
# Must run as root on Debian (or a derivative with dpkg and apt-get).
set -euo pipefail

prog=${0##*/}

die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 1
}

# group name | packages (the order here is the order of the report)
GROUPS_SPEC=(
	"CNI reference plugins|containernetworking-plugins"
	"network tools|iproute2 iputils-ping arping procps"
	"packet capture|tcpdump tshark"
	"test client for raw frames|python3"
	"containers|podman runc busybox-static"
	"bench tools|time strace"
	"Kubernetes CRI|containerd"
	"arm64 under qemu-user|qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross gcc libc6-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
)

if [[ $(id -u) -ne 0 ]]; then
	die "must run as root (it installs Debian packages with apt-get); try: sudo $0"
fi
if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	die "dpkg-query and apt-get not found: this script supports Debian and its derivatives only"
fi

installed() {
	# "install ok installed" is the only status that means usable; a package
	# that was removed but left its config files reads "deinstall ok config-files".
	[[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true) == "install ok installed" ]]
}

missing=()         # every missing package
missing_groups=()  # "group|pkg pkg" for the groups that have something missing
for spec in "${GROUPS_SPEC[@]}"; do
	group=${spec%%|*}
	read -r -a pkgs <<<"${spec#*|}"
	gm=()
	for p in "${pkgs[@]}"; do
		installed "$p" || gm+=("$p")
	done
	if ((${#gm[@]})); then
		missing+=("${gm[@]}")
		missing_groups+=("$group|${gm[*]}")
	fi
done

if ((${#missing[@]} == 0)); then
	echo "system deps: all present"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/ensure-system-deps.XXXXXX.log)
trap 'rm -f "$log"' EXIT

# Wait for the dpkg lock rather than fail when another install runs.
apt_opts=(-q -y -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=300)

fail() {
	echo "$prog: error: $1; apt-get said:" >&2
	tail -n 30 "$log" | sed 's/^/  /' >&2
	exit 1
}

apt-get "${apt_opts[@]}" update >"$log" 2>&1 || fail "apt-get update failed"
apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
	fail "apt-get install ${missing[*]} failed"

for spec in "${missing_groups[@]}"; do
	for p in ${spec#*|}; do
		installed "$p" || fail "$p is still not installed after apt-get install"
	done
	echo "system deps: installed ${spec%%|*} (${spec#*|})"
done
