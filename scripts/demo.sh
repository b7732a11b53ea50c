#!/usr/bin/env bash
# demo.sh — show the stale-ARP bug of a reused pod IP, and its fix by the
# chained announcer, on a throwaway bridge and network namespaces.
#
# Usage: scripts/demo.sh [--before-only] [ANNOUNCER_DIR]   (as root)
#        scripts/demo.sh --cleanup                         (remove leftovers)
#
#   ANNOUNCER_DIR   directory holding the built `announcer` (default: bin)
#   --before-only   show only the bug (bridge plugin alone); does not need
#                   the announcer
#   --cleanup       remove what a killed run (SIGKILL) left behind: netns
#                   cnidemo-keeper/-pod-a/-pod-b, bridge cnidemo0, the log
#
# `make demo` builds bin/announcer, installs the Debian packages (scripts/
# ensure-system-deps.sh) and runs this. It uses Debian's reference plugins
# (containernetworking-plugins 1.1.1) from /usr/lib/cni, run by hand the
# way a runtime runs them: config JSON on stdin, CNI_* in the environment.
#
#   1. Bridge cnidemo0 with 10.88.0.1/24 on the node, and a keeper pod
#      (10.88.0.9) so that the bridge has carrier.
#   2. BEFORE: plant a stale entry for 10.88.0.5 (an old pod's MAC), ADD pod A
#      with 10.88.0.5 through the bridge plugin alone: the node's entry keeps
#      the old MAC and its first ping is lost. DEL pod A.
#   3. AFTER: plant the stale entry again, ADD pod B with 10.88.0.5 through
#      the bridge plugin and then the announcer, chained: the entry holds
#      pod B's MAC when ADD returns, and the first ping gets through.
#
# Everything it creates is deleted on exit, on Ctrl-C and on failure. It
# touches no other interface; it refuses to run if one of its names, or its
# subnet, is already in use on the node.
#
# Exit status: 0 when the demo showed what it claims (the bug, and the fix
# unless --before-only); 1 otherwise, or on error.
set -Eeuo pipefail

prog=${0##*/}

# ---- names and addresses (all throwaway) ----------------------------------
BR=cnidemo0
NS_KEEPER=cnidemo-keeper
NS_A=cnidemo-pod-a
NS_B=cnidemo-pod-b
NET_NAME=cnidemo
GW_CIDR=10.88.0.1/24
SUBNET=10.88.0.0/24
KEEPER_IP=10.88.0.9
POD_IP=10.88.0.5
OLD_MAC=86:03:17:7a:eb:6e # the MAC of the pod that had 10.88.0.5 before
PING_WAIT=2               # seconds ping waits for its one reply
CNI_DIR=/usr/lib/cni      # Debian's containernetworking-plugins
LOG_FILE=/tmp/cnidemo-announcer.log
STATE_DIR=/run/cnidemo-announcer # keeps the demo's announcer state apart
IFNAME=eth0
PLUGIN_TIMEOUT=30 # seconds; a plugin that hangs must not hang the demo
ID_PREFIX="cnidemo-$$" # container IDs: unique to this run

# ---- arguments --------------------------------------------------------------
mode=full
ann_dir=
for arg in "$@"; do
	case $arg in
	--before-only) mode=before ;;
	--cleanup) mode=cleanup ;;
	-h | --help)
		sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$0"
		exit 0
		;;
	-*)
		echo "$prog: unknown option $arg (try --help)" >&2
		exit 2
		;;
	*)
		[[ -z $ann_dir ]] || {
			echo "$prog: one directory only (try --help)" >&2
			exit 2
		}
		ann_dir=$arg
		;;
	esac
done
ann_dir=${ann_dir:-bin}

# ---- output -------------------------------------------------------------------
if [[ -t 1 && -z ${NO_COLOR:-} && ${TERM:-dumb} != dumb ]]; then
	C_BOLD=$'\e[1m' C_DIM=$'\e[2m' C_RED=$'\e[31m' C_GREEN=$'\e[32m' C_YELLOW=$'\e[33m' C_OFF=$'\e[0m'
else
	C_BOLD='' C_DIM='' C_RED='' C_GREEN='' C_YELLOW='' C_OFF=''
fi
say() { printf '%s\n' "$*"; }
step() { printf '%s  %s%s\n' "${C_DIM}" "$*" "${C_OFF}"; }
die() {
	printf '%s%s: error: %s%s\n' "$C_RED" "$prog" "$*" "$C_OFF" >&2
	exit 1
}

# ---- preconditions --------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || die "must run as root (it creates a bridge and network namespaces); try: sudo $0 $*"
for cmd in ip ping timeout awk; do
	command -v "$cmd" >/dev/null 2>&1 || die "'$cmd' not found; run scripts/ensure-system-deps.sh"
done

# ---- what this run created (cleanup removes exactly these) -----------------------
created_bridge=0
created_ns=()   # netns names
added_pods=()   # "netns|containerid|address|chain", chain "bridge" or "bridge announcer"
declare -A prev_result=() # containerid -> the bridge plugin's ADD result (for the announcer's DEL)
ann_path=""     # the announcer's directory, absolute, once known

# ---- running a CNI plugin the way a runtime does ----------------------------------
# cni_exec COMMAND NETNS CONTAINERID CNI_PATH TYPE CONFIG_JSON
# Looks TYPE up in CNI_PATH, runs it with CONFIG_JSON on stdin; sets
# CNI_OUT (stdout) and CNI_RC; returns CNI_RC.
cni_exec() {
	local command=$1 ns=$2 cid=$3 path=$4 type=$5 conf=$6 dir plugin=""
	local -a dirs
	IFS=: read -r -a dirs <<<"$path"
	for dir in "${dirs[@]}"; do
		if [[ -x $dir/$type && -f $dir/$type ]]; then
			plugin=$dir/$type
			break
		fi
	done
	if [[ -z $plugin ]]; then
		CNI_OUT="plugin '$type' not found in CNI_PATH=$path"
		CNI_RC=127
		return "$CNI_RC"
	fi
	CNI_RC=0
	CNI_OUT=$(CNI_COMMAND=$command CNI_CONTAINERID=$cid CNI_NETNS=/var/run/netns/$ns \
		CNI_IFNAME=$IFNAME CNI_PATH=$path \
		timeout "$PLUGIN_TIMEOUT" "$plugin" <<<"$conf") || CNI_RC=$?
	return "$CNI_RC"
}

# The bridge plugin's network config for one pod (static IPAM: the address is
# chosen by the demo, as a reused pod IP is in real life by the IPAM).
# isGateway is off: the demo puts 10.88.0.1 on the bridge itself, so that the
# plugin does not switch on the node's global ip_forward.
bridge_conf() {
	local addr=$1
	printf '{"cniVersion":"1.0.0","name":"%s","type":"bridge","bridge":"%s","isGateway":false,"ipMasq":false,"ipam":{"type":"static","addresses":[{"address":"%s"}]}}' \
		"$NET_NAME" "$BR" "$addr"
}

# The announcer's config as a runtime hands it over in a chain: the plugin's
# own entry from the conflist, plus name and cniVersion of the conflist, plus
# prevResult (the previous plugin's result). An empty prevResult is left out.
announcer_conf() {
	local prev=$1
	printf '{"cniVersion":"1.0.0","name":"%s","type":"announcer","logFile":"%s","logLevel":"debug","stateDir":"%s"' \
		"$NET_NAME" "$LOG_FILE" "$STATE_DIR"
	[[ -z $prev ]] || printf ',"prevResult":%s' "$prev"
	printf '}'
}

# ---- cleanup ---------------------------------------------------------------------------
# (run from the EXIT trap)
# shellcheck disable=SC2317
# Processes that run for one of our attachments: inside our netns, or started
# with one of our container IDs (a background announcer tail, for instance).
our_pids() {
	local ns p
	for ns in "$@"; do
		[[ -e /var/run/netns/$ns ]] && ip netns pids "$ns" 2>/dev/null
	done
	for p in /proc/[0-9]*; do
		[[ ${p#/proc/} == "$$" ]] && continue
		tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^CNI_CONTAINERID=$ID_PREFIX-" && echo "${p#/proc/}"
	done
	return 0
}

cleanup_done=0
# shellcheck disable=SC2317
cleanup() {
	local rc=$? ns cid addr chain port
	local -a pids
	((cleanup_done)) && return 0
	cleanup_done=1
	trap - ERR
	trap '' INT TERM # a second Ctrl-C must not stop the cleanup half-way
	set +e
	case $rc in
	130) printf '\n%s%s: interrupted; cleaning up%s\n' "$C_YELLOW" "$prog" "$C_OFF" >&2 ;;
	143 | 129) printf '\n%s%s: terminated; cleaning up%s\n' "$C_YELLOW" "$prog" "$C_OFF" >&2 ;;
	esac
	local -a what=()
	((created_bridge)) && what+=("bridge $BR")
	((${#created_ns[@]})) && what+=("netns ${created_ns[*]}")
	((${#what[@]})) && step "cleanup ..."

	# DEL in reverse order of ADD, and each chain in reverse, as a runtime does.
	local i j
	for ((i = ${#added_pods[@]} - 1; i >= 0; i--)); do
		IFS='|' read -r ns cid addr chain <<<"${added_pods[i]}"
		local -a plugins
		read -r -a plugins <<<"$chain"
		for ((j = ${#plugins[@]} - 1; j >= 0; j--)); do
			case ${plugins[j]} in
			announcer)
				[[ -n $ann_path ]] &&
					cni_exec DEL "$ns" "$cid" "$ann_path:$CNI_DIR" announcer "$(announcer_conf "${prev_result[$cid]:-}")" >/dev/null 2>&1
				;;
			bridge)
				cni_exec DEL "$ns" "$cid" "$CNI_DIR" bridge "$(bridge_conf "$addr")" >/dev/null 2>&1
				;;
			esac
		done
	done

	# Anything of ours still running: TERM, then KILL.
	if ((${#created_ns[@]})); then
		mapfile -t pids < <(our_pids "${created_ns[@]}" | sort -u)
		if ((${#pids[@]})); then
			kill -TERM "${pids[@]}" 2>/dev/null
			sleep 0.3
			mapfile -t pids < <(our_pids "${created_ns[@]}" | sort -u)
			((${#pids[@]} == 0)) || kill -KILL "${pids[@]}" 2>/dev/null
		fi
	fi

	# The bridge's ports are the host ends of our pods' veths; they go away
	# with the netns. Remember them to make sure.
	local -a ports=()
	if ((created_bridge)); then
		mapfile -t ports < <(ip -o link show master "$BR" 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}')
	fi
	for ns in "${created_ns[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	for port in "${ports[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			ip link show dev "$port" >/dev/null 2>&1 || break
			sleep 0.2
		done
		# Still there: it is a port of our bridge, i.e. one of our veths.
		ip link show dev "$port" master "$BR" >/dev/null 2>&1 && ip link del dev "$port" 2>/dev/null
	done
	if ((created_bridge)); then
		ip link del dev "$BR" 2>/dev/null
	fi
	rm -f "$LOG_FILE"
	rm -rf "$STATE_DIR"

	# Report anything we could not remove.
	local left=()
	for ns in "${created_ns[@]}"; do
		[[ -e /var/run/netns/$ns ]] && left+=("netns $ns")
	done
	((created_bridge)) && ip link show dev "$BR" >/dev/null 2>&1 && left+=("bridge $BR")
	if ((${#left[@]})); then
		printf '%s%s: cleanup could not remove: %s%s\n' "$C_RED" "$prog" "${left[*]}" "$C_OFF" >&2
		((rc)) || rc=1
	elif ((${#what[@]})); then
		step "cleanup done: removed ${what[*]}"
	fi
	exit "$rc"
}

# --cleanup: remove leftovers of a run that could not clean up (SIGKILL).
if [[ $mode == cleanup ]]; then
	for ns in "$NS_KEEPER" "$NS_A" "$NS_B"; do
		if [[ -e /var/run/netns/$ns ]]; then
			created_ns+=("$ns")
		fi
	done
	if ip -d link show dev "$BR" 2>/dev/null | grep -qw bridge; then
		created_bridge=1
	fi
	ID_PREFIX=cnidemo
	if ! ((${#created_ns[@]} || created_bridge)); then
		say "nothing to clean up"
	fi
	trap cleanup EXIT
	exit 0
fi

# ---- refuse to run if any of our names or our subnet is taken ----------------------------
taken=()
ip link show dev "$BR" >/dev/null 2>&1 && taken+=("interface $BR")
for ns in "$NS_KEEPER" "$NS_A" "$NS_B"; do
	[[ -e /var/run/netns/$ns ]] && taken+=("netns $ns")
done
if ((${#taken[@]})); then
	die "already present on this node: ${taken[*]}.
  Another demo may be running. If a killed run (SIGKILL) left them behind,
  remove them with: $0 --cleanup"
fi
route=$(ip -4 route show to match "$POD_IP/32" | awk '$1 != "default"' | head -n1 | sed 's/ *$//')
if [[ -n $route ]]; then
	die "the demo's subnet $SUBNET is already routed on this node ($route).
  It will not share it; run the demo when that network is gone."
fi
[[ -x $CNI_DIR/bridge && -x $CNI_DIR/static ]] ||
	die "$CNI_DIR/bridge not found: install Debian's containernetworking-plugins (scripts/ensure-system-deps.sh)"

if [[ $mode == full ]]; then
	if [[ ! -e $ann_dir/announcer ]]; then
		die "$ann_dir/announcer not found: build it first (make build), or pass the directory that holds it.
  To show only the bug, without the announcer: $0 --before-only"
	fi
	[[ -x $ann_dir/announcer ]] || die "$ann_dir/announcer is not executable"
	ann_path=$(cd "$ann_dir" && pwd -P)
fi

trap cleanup EXIT
trap 'printf "%s%s: error: line %s: %s failed%s\n" "$C_RED" "$prog" "$LINENO" "$BASH_COMMAND" "$C_OFF" >&2' ERR
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---- helpers for the observations --------------------------------------------------
# The node's neighbour entry for the pod IP on our bridge: sets N_STATE, N_MAC.
read_neigh() {
	local line
	line=$(ip -4 neigh show "$POD_IP" dev "$BR" | head -n1)
	N_STATE=$(awk '{print $NF}' <<<"$line")
	N_MAC=$(awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}' <<<"$line")
	[[ -n $N_STATE ]] || N_STATE=none
	[[ -n $N_MAC ]] || N_MAC=-
}
pod_mac() { ip -n "$1" -o link show dev "$IFNAME" | awk '{for (i = 1; i < NF; i++) if ($i == "link/ether") print $(i + 1)}'; }
# ping once; sets P_RESULT ("ok" or "lost") and P_TEXT (for the table)
ping_once() {
	local out
	if out=$(ping -n -c1 -W"$PING_WAIT" "$POD_IP" 2>&1); then
		P_RESULT=ok
		P_TEXT="ok ($(grep -o 'time=[0-9.]* ms' <<<"$out" | head -n1 | cut -d= -f2))"
	else
		P_RESULT=lost
		P_TEXT="lost (no reply in ${PING_WAIT} s)"
	fi
}
plant_stale() {
	ip neigh replace "$POD_IP" dev "$BR" lladdr "$OLD_MAC" nud stale
	step "planted the old pod's entry on the node: $(ip -4 neigh show "$POD_IP" dev "$BR" | sed "s/ *$//")"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

new_netns() {
	ip netns add "$1" || die "could not create netns $1"
	created_ns+=("$1")
	ip -n "$1" link set lo up
}
# forget_pod NETNS / forget_ns NETNS: drop from what cleanup will remove
forget_pod() {
	local p keep=()
	for p in "${added_pods[@]}"; do [[ ${p%%|*} == "$1" ]] || keep+=("$p"); done
	added_pods=("${keep[@]}")
}
forget_ns() {
	local n keep=()
	for n in "${created_ns[@]}"; do [[ $n == "$1" ]] || keep+=("$n"); done
	created_ns=("${keep[@]}")
}
# add_bridge_pod NETNS CID ADDR: ADD through the bridge plugin; sets BRIDGE_OUT
add_bridge_pod() {
	local ns=$1 cid=$2 addr=$3
	added_pods+=("$ns|$cid|$addr|bridge") # recorded first: an interrupted ADD is DELeted too
	cni_exec ADD "$ns" "$cid" "$CNI_DIR" bridge "$(bridge_conf "$addr")" ||
		die "bridge plugin ADD for $ns failed (exit $CNI_RC): $CNI_OUT"
	BRIDGE_OUT=$CNI_OUT
	prev_result[$cid]=$BRIDGE_OUT
}

# check_result PREV OUT: what the chained plugin printed, compared with prevResult
check_result() {
	command -v node >/dev/null 2>&1 || {
		echo "not checked (no node)"
		return 0
	}
	node -e '
		const canon = (v) => Array.isArray(v) ? v.map(canon) : v && typeof v === "object"
			? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])])) : v;
		let out;
		try { out = JSON.parse(process.argv[2]); } catch { console.log("INVALID: not JSON"); process.exit(0); }
		if (!out || typeof out !== "object" || !Array.isArray(out.ips)) { console.log("INVALID: not a result"); process.exit(0); }
		const same = JSON.stringify(canon(out)) === JSON.stringify(canon(JSON.parse(process.argv[1])));
		console.log(same ? "prevResult passed through" : "result (changed)");
	' "$1" "$2"
}

# ---- header ----------------------------------------------------------------------------
ver=$(dpkg-query -W -f='${Version}' containernetworking-plugins 2>/dev/null || echo unknown)
say "${C_BOLD}cni-announcer demo: the node's stale ARP entry for a reused pod IP${C_OFF}"
say "bridge plugin: $CNI_DIR/bridge (containernetworking-plugins $ver)"
[[ $mode == full ]] && say "announcer:     $ann_path/announcer"
say ""

# ---- setup -----------------------------------------------------------------------------
ip link add name "$BR" type bridge || die "could not create bridge $BR"
created_bridge=1
# Pin the bridge's MAC (to the random one it was given). A bridge whose MAC
# was never set takes the lowest MAC of its ports, so adding a pod can change
# it, and a MAC change flushes every neighbour entry on the bridge: the stale
# entry would vanish by chance instead of being repaired.
ip link set dev "$BR" address "$(cat "/sys/class/net/$BR/address")"
ip addr add "$GW_CIDR" dev "$BR"
ip link set dev "$BR" up
step "bridge $BR up, node address $GW_CIDR"

new_netns "$NS_KEEPER"
add_bridge_pod "$NS_KEEPER" "$ID_PREFIX-keeper" "$KEEPER_IP/24"
step "keeper pod $KEEPER_IP attached (gives the bridge carrier)"

# ---- BEFORE: the bridge plugin alone -------------------------------------------------
say ""
say "${C_BOLD}BEFORE${C_OFF}: pod A takes $POD_IP, bridge plugin alone"
plant_stale
new_netns "$NS_A"
t0=$(now_ms)
add_bridge_pod "$NS_A" "$ID_PREFIX-pod-a" "$POD_IP/24"
t1=$(now_ms)
read_neigh
b_state=$N_STATE b_mac=$N_MAC
b_pod=$(pod_mac "$NS_A")
step "ADD returned after $((t1 - t0)) ms; pod A eth0 is $b_pod"
step "node entry now: $POD_IP $b_mac $b_state"
ping_once
b_ping=$P_RESULT b_ping_text=$P_TEXT
step "ping -c1 -W$PING_WAIT $POD_IP: $b_ping_text"
cni_exec DEL "$NS_A" "$ID_PREFIX-pod-a" "$CNI_DIR" bridge "$(bridge_conf "$POD_IP/24")" ||
	die "bridge plugin DEL for pod A failed (exit $CNI_RC): $CNI_OUT"
forget_pod "$NS_A"
ip netns del "$NS_A"
forget_ns "$NS_A"
step "pod A deleted (DEL, netns removed)"

# ---- AFTER: bridge plugin, then the announcer ----------------------------------------
if [[ $mode == full ]]; then
	say ""
	say "${C_BOLD}AFTER${C_OFF}: pod B takes $POD_IP, bridge plugin then announcer (chained)"
	plant_stale
	new_netns "$NS_B"
	cid_b="$ID_PREFIX-pod-b"
	t0=$(now_ms)
	add_bridge_pod "$NS_B" "$cid_b" "$POD_IP/24"
	t1=$(now_ms)
	forget_pod "$NS_B"
	added_pods+=("$NS_B|$cid_b|$POD_IP/24|bridge announcer")
	cni_exec ADD "$NS_B" "$cid_b" "$ann_path:$CNI_DIR" announcer "$(announcer_conf "$BRIDGE_OUT")" ||
		die "announcer ADD failed (exit $CNI_RC): $CNI_OUT"
	t2=$(now_ms)
	read_neigh # right after ADD returns
	a_result=$(check_result "$BRIDGE_OUT" "$CNI_OUT")
	a_state=$N_STATE a_mac=$N_MAC
	a_pod=$(pod_mac "$NS_B")
	step "ADD returned: bridge $((t1 - t0)) ms + announcer $((t2 - t1)) ms; pod B eth0 is $a_pod"
	step "node entry now: $POD_IP $a_mac $a_state"
	ping_once
	a_ping=$P_RESULT a_ping_text=$P_TEXT
	step "ping -c1 -W$PING_WAIT $POD_IP: $a_ping_text"
	if [[ -s $LOG_FILE ]]; then
		step "announcer log ($LOG_FILE):"
		head -n 12 "$LOG_FILE" | sed "s/^/    /" | while IFS= read -r l; do step "$l"; done
	fi
fi

# ---- the table -----------------------------------------------------------------------------
# cell TEXT GOOD|BAD|PLAIN: the text padded to the column, coloured if a tty
W=28
cell() {
	local c=''
	case $2 in GOOD) c=$C_GREEN ;; BAD) c=$C_RED ;; WARN) c=$C_YELLOW ;; esac
	printf '%s%-*s%s' "$c" "$W" "$1" "${c:+$C_OFF}"
}
match_text() { # ENTRY_MAC POD_MAC
	if [[ $1 == "$2" ]]; then echo "yes"; elif [[ $1 == "$OLD_MAC" ]]; then echo "no: old pod's MAC"; else echo "no"; fi
}
row() { # LABEL TEXT1 KIND1 [TEXT2 KIND2]
	printf '  %-24s' "$1"
	cell "$2" "$3"
	[[ $mode == full ]] && cell "$4" "$5"
	printf '\n'
}

b_ok=0 a_ok=0
[[ $b_mac != "$b_pod" && $b_ping == lost ]] && b_ok=1
if [[ $mode == full ]]; then
	[[ $a_mac == "$a_pod" && $a_ping == ok && $a_result != INVALID* ]] && a_ok=1
fi
kind() { [[ $1 == "$2" ]] && echo GOOD || echo BAD; }

say ""
printf '  %-24s' ""
printf '%s%-*s' "$C_BOLD" "$W" "BEFORE: bridge alone"
[[ $mode == full ]] && printf '%-*s' "$W" "AFTER: bridge + announcer"
printf '%s\n' "$C_OFF"
row "node entry after ADD" "$b_state $b_mac" "$(kind "$b_mac" "$b_pod")" \
	"${a_state:-} ${a_mac:-}" "$(kind "${a_mac:-}" "${a_pod:-x}")"
row "pod's eth0 MAC" "$b_pod" PLAIN "${a_pod:-}" PLAIN
row "entry holds pod's MAC" "$(match_text "$b_mac" "$b_pod")" "$(kind "$b_mac" "$b_pod")" \
	"$(match_text "${a_mac:-}" "${a_pod:-x}")" "$(kind "${a_mac:-}" "${a_pod:-x}")"
row "ADD result" "ok (bridge)" GOOD "${a_result:-}" "$([[ ${a_result:-} == INVALID* ]] && echo BAD || echo GOOD)"
row "first ping (-W$PING_WAIT)" "$b_ping_text" "$(kind "$b_ping" ok)" \
	"${a_ping_text:-}" "$(kind "${a_ping:-}" ok)"
say ""

status=0
if ((b_ok)); then
	say "Before: the node kept the old pod's MAC for $POD_IP, so its first packet went to a MAC that is gone."
else
	say "${C_YELLOW}Before: the bug did not show this time (entry $b_state $b_mac, ping $b_ping).${C_OFF}"
	status=1
fi
if [[ $mode == full ]]; then
	if ((a_ok)); then
		say "After:  the announcer's gratuitous ARP repaired the entry before ADD returned; the first ping got through."
	else
		say "${C_RED}After:  the fix did not show (entry $a_state $a_mac, pod $a_pod, ping $a_ping, result: $a_result).${C_OFF}"
		[[ $a_result != INVALID* ]] || say "        the announcer printed: $(head -c 200 <<<"$CNI_OUT")"
		status=1
	fi
else
	say "(--before-only: the fix is shown by a full run, which needs $ann_dir/announcer.)"
fi
say ""
exit "$status"
