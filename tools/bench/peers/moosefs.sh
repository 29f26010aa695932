#!/bin/bash
# moosefs.sh - start or stop a small MooseFS cluster on this machine, as a peer
# for Lode's benchmark (tools/bench/run.sh --dir "$(tools/bench/peers/moosefs.sh up DIR)").
#
#   moosefs.sh up DIR     install Debian's moosefs-* packages if missing, start one
#                         master and three chunkservers, mount the client at DIR/mnt
#                         and print that path on stdout (nothing else goes to stdout).
#                         Running it again while the cluster is up only prints the path.
#   moosefs.sh down DIR   unmount, stop every process started by `up`, delete the
#                         network namespaces and DIR's state.  Safe after a failed `up`.
#
# Environment: MFS_GOAL (default 1) - number of copies of each chunk (set on the
# root directory with mfssetgoal -r; the benchmark uses 1 and 2).
# MFS_CS_CONF - extra lines for every chunkserver's configuration, such as
# "HDD_FSYNC_BEFORE_CLOSE = 1" (tools/bench/fsync-trace.sh).
#
# Why network namespaces: MooseFS refuses 127.x addresses between its servers.
# Each server gets its own network namespace with one address in a small
# private subnet, and the namespaces are joined by veth pairs to a bridge that
# lives in one more namespace of ours.  Nothing is added to the root namespace:
# no address, no route, so no traffic to private-range addresses ever leaves
# the namespaces created here.
#
#   namespace      address        role
#   lodemfs-br     (none)         bridge lodebr0 joining the others
#   lodemfs-m      10.77.0.1/29   mfsmaster (ports 9419, 9420, 9421)
#   lodemfs-c1..3  10.77.0.2-4    mfschunkserver (port 9422)
#   lodemfs-cl     10.77.0.5      mfsmount (joined with nsenter --net only, so the
#                                 FUSE mount lands in the root mount namespace)
#
# Every daemon listens only on its namespace's address.  The names and subnet
# are fixed, so only one such cluster can run at a time.

set -u

PFX=lodemfs
NET=10.77.0
MASTER_IP=$NET.1
CLIENT_IP=$NET.5
NCS=3
WAIT_S=${MFS_WAIT_S:-60}	# bound on each wait below

die() { echo "moosefs.sh: error: $*" >&2; exit 1; }
log() { echo "moosefs.sh: $*" >&2; }

# run CMD... inside namespace $1, with a timeout
in_ns() { local ns=$1; shift; timeout 30 ip netns exec "$ns" "$@"; }

# wait_for SECONDS CMD...: poll CMD until it succeeds, at most SECONDS
wait_for() {
	local limit=$1 t=0
	shift
	until "$@" >/dev/null 2>&1; do
		t=$((t + 1))
		[ "$t" -le $((limit * 2)) ] || return 1
		sleep 0.5
	done
}

install_pkgs() {
	local missing=()
	command -v mfsmaster >/dev/null || missing+=(moosefs-master)
	command -v mfschunkserver >/dev/null || missing+=(moosefs-chunkserver)
	command -v mfsmount >/dev/null || missing+=(moosefs-client)
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends \
		"${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
}

ns_list() { echo $PFX-br $PFX-m $(seq -f "$PFX-c%g" 1 $NCS) $PFX-cl; }

# add namespace $1 with address $2 on eth0, linked to the bridge by veth $3
add_node() {
	local ns=$1 ip=$2 veth=$3
	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up || return 1
	ip -n $PFX-br link add "$veth" type veth peer name eth0 netns "$ns" || return 1
	ip -n $PFX-br link set "$veth" master lodebr0 up || return 1
	ip -n "$ns" addr add "$ip/29" dev eth0 || return 1
	ip -n "$ns" link set eth0 up
}

net_up() {
	ip netns add $PFX-br || return 1
	ip -n $PFX-br link add lodebr0 type bridge || return 1
	ip -n $PFX-br link set lodebr0 up || return 1
	add_node $PFX-m $MASTER_IP v-m || return 1
	for i in $(seq 1 $NCS); do
		add_node $PFX-c$i $NET.$((i + 1)) v-c$i || return 1
	done
	add_node $PFX-cl $CLIENT_IP v-cl
}

write_configs() {
	local d=$1 i
	mkdir -p "$d/master" "$d/log" "$d/mnt" || return 1
	cp /var/lib/mfs/metadata.mfs.empty "$d/master/metadata.mfs" || return 1
	cat >"$d/master/mfsexports.cfg" <<-EOF
	$CLIENT_IP	/	rw,alldirs,admin,maproot=0:0
	$CLIENT_IP	.	rw
	EOF
	: >"$d/master/mfstopology.cfg"
	cat >"$d/master/mfsmaster.cfg" <<-EOF
	WORKING_USER = root
	WORKING_GROUP = root
	SYSLOG_IDENT = lode-mfsmaster
	NICE_LEVEL = 0
	DATA_PATH = $d/master
	EXPORTS_FILENAME = $d/master/mfsexports.cfg
	TOPOLOGY_FILENAME = $d/master/mfstopology.cfg
	BACK_META_KEEP_PREVIOUS = 0
	MATOML_LISTEN_HOST = $MASTER_IP
	MATOCS_LISTEN_HOST = $MASTER_IP
	MATOCL_LISTEN_HOST = $MASTER_IP
	REPLICATIONS_DELAY_INIT = 0
	EOF
	for i in $(seq 1 $NCS); do
		mkdir -p "$d/cs$i/data" "$d/cs$i/hdd" || return 1
		echo "$d/cs$i/hdd" >"$d/cs$i/mfshdd.cfg"
		cat >"$d/cs$i/mfschunkserver.cfg" <<-EOF
		WORKING_USER = root
		WORKING_GROUP = root
		SYSLOG_IDENT = lode-mfscs$i
		NICE_LEVEL = 0
		DATA_PATH = $d/cs$i/data
		HDD_CONF_FILENAME = $d/cs$i/mfshdd.cfg
		HDD_LEAVE_SPACE_DEFAULT = 1GiB
		MASTER_HOST = $MASTER_IP
		BIND_HOST = $NET.$((i + 1))
		CSSERV_LISTEN_HOST = $NET.$((i + 1))
		EOF
		[ -z "${MFS_CS_CONF:-}" ] || printf '%s\n' "$MFS_CS_CONF" >>"$d/cs$i/mfschunkserver.cfg"
	done
}

# number of chunkservers whose connection the master has accepted
cs_connected() {
	in_ns $PFX-m ss -Htn state established "( sport = :9420 )" 2>/dev/null | wc -l
}
all_cs_connected() { [ "$(cs_connected)" -ge $NCS ]; }
master_listening() { in_ns $PFX-m ss -Htln "( sport = :9421 )" | grep -q .; }
has_space() {
	local blocks
	blocks=$(timeout 10 stat -f -c %b "$1") && [ "$blocks" -gt 0 ]
}

# mfstools read the master's address from the mount and talk to it directly,
# so they must run where that address is reachable: the client's namespace.
set_goal() {
	timeout 30 nsenter --net=/run/netns/$PFX-cl mfssetgoal -r "$1" "$2" >/dev/null
}

is_up() {
	local d=$1
	mountpoint -q "$d/mnt" && [ -e /run/netns/$PFX-m ] && has_space "$d/mnt"
}

cmd_up() {
	local d=$1 goal=${MFS_GOAL:-1} i
	[[ "$goal" =~ ^[1-9]$ ]] || die "MFS_GOAL must be 1..9 (got '$goal')"
	[ "$goal" -le $NCS ] || die "MFS_GOAL=$goal exceeds the $NCS chunkservers"
	mkdir -p "$d" || die "cannot create $d"
	d=$(cd "$d" && pwd -P)
	install_pkgs

	if is_up "$d"; then
		set_goal "$goal" "$d/mnt" ||
			die "mfssetgoal -r $goal $d/mnt failed"
		echo "$d/mnt"
		return 0
	fi
	# Anything left over from an earlier failed run goes first.
	if ls /run/netns/$PFX-* >/dev/null 2>&1 || [ -e "$d/master" ]; then
		log "cleaning up a previous partial cluster"
		cmd_down "$d" || die "could not clean up the previous cluster"
		mkdir -p "$d"
	fi

	# `ip netns add` creates /run/netns as a bind mount; if it was not there
	# before, `down` removes it again once it is empty.
	[ -d /run/netns ] || touch "$d/netns-dir-ours"
	net_up || { cmd_down "$d"; die "could not create the network namespaces"; }
	write_configs "$d" || { cmd_down "$d"; die "could not write configuration under $d"; }

	log "starting mfsmaster on $MASTER_IP"
	if ! in_ns $PFX-m mfsmaster -c "$d/master/mfsmaster.cfg" start \
		>"$d/log/master.log" 2>&1; then
		cat "$d/log/master.log" >&2
		cmd_down "$d"
		die "mfsmaster did not start (log above)"
	fi
	wait_for "$WAIT_S" master_listening ||
		{ cmd_down "$d"; die "mfsmaster not listening on $MASTER_IP:9421 after ${WAIT_S}s"; }

	for i in $(seq 1 $NCS); do
		log "starting mfschunkserver $i on $NET.$((i + 1))"
		if ! in_ns $PFX-c$i mfschunkserver -c "$d/cs$i/mfschunkserver.cfg" start \
			>"$d/log/cs$i.log" 2>&1; then
			cat "$d/log/cs$i.log" >&2
			cmd_down "$d"
			die "mfschunkserver $i did not start (log above)"
		fi
	done
	wait_for "$WAIT_S" all_cs_connected ||
		{ cmd_down "$d"; die "only $(cs_connected) of $NCS chunkservers reached the master in ${WAIT_S}s"; }

	log "mounting $d/mnt"
	# nsenter --net (not ip netns exec) keeps the root mount namespace, so the
	# FUSE mount is visible to everyone.
	if ! timeout 60 nsenter --net=/run/netns/$PFX-cl \
		mfsmount "$d/mnt" -H $MASTER_IP -P 9421 -o mfsbind=$CLIENT_IP \
		>"$d/log/mount.log" 2>&1; then
		cat "$d/log/mount.log" >&2
		cmd_down "$d"
		die "mfsmount failed (log above)"
	fi
	wait_for "$WAIT_S" has_space "$d/mnt" ||
		{ cmd_down "$d"; die "$d/mnt shows no space after ${WAIT_S}s (chunkservers not registered?)"; }
	set_goal "$goal" "$d/mnt" ||
		{ cmd_down "$d"; die "mfssetgoal -r $goal $d/mnt failed"; }
	log "up: goal $goal, $NCS chunkservers"
	echo "$d/mnt"
}

cmd_down() {
	local d=$1 ns pids rc=0 i
	[ -d "$d" ] && d=$(cd "$d" && pwd -P)

	if mountpoint -q "$d/mnt" 2>/dev/null; then
		timeout 30 umount "$d/mnt" 2>/dev/null || timeout 30 umount -l "$d/mnt" ||
			{ log "cannot unmount $d/mnt"; rc=1; }
	fi
	# Stop the daemons politely (they flush metadata), then kill whatever is
	# still inside our namespaces: that is exactly the set of processes we started.
	if [ -e /run/netns/$PFX-m ]; then
		for i in $(seq 1 $NCS); do
			[ -f "$d/cs$i/mfschunkserver.cfg" ] &&
				in_ns $PFX-c$i mfschunkserver -c "$d/cs$i/mfschunkserver.cfg" stop >/dev/null 2>&1
		done
		[ -f "$d/master/mfsmaster.cfg" ] &&
			in_ns $PFX-m mfsmaster -c "$d/master/mfsmaster.cfg" stop >/dev/null 2>&1
	fi
	for ns in $(ns_list); do
		[ -e "/run/netns/$ns" ] || continue
		pids=$(ip netns pids "$ns")
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
	done
	for ns in $(ns_list); do
		[ -e "/run/netns/$ns" ] || continue
		for i in $(seq 1 20); do
			[ -z "$(ip netns pids "$ns")" ] && break
			sleep 0.25
		done
		ip netns del "$ns" || { log "cannot delete namespace $ns"; rc=1; }
	done
	if [ -f "$d/netns-dir-ours" ] && [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
		if mountpoint -q /run/netns; then timeout 30 umount /run/netns || rc=1; fi
		rmdir /run/netns || rc=1
	fi
	if [ -d "$d" ]; then
		rm -f "$d/netns-dir-ours"
		rm -rf "$d/master" "$d/log" "$d"/cs[0-9]* || rc=1
		rmdir "$d/mnt" 2>/dev/null
		rmdir "$d" 2>/dev/null
	fi
	return $rc
}

[ $# -eq 2 ] || die "usage: $0 up|down DIR"
[ "$(id -u)" -eq 0 ] || die "must run as root (namespaces, mounts, apt-get)"
case $1 in
up) cmd_up "$2" ;;
down) cmd_down "$2" || die "down left something behind (see above)" ;;
*) die "usage: $0 up|down DIR" ;;
esac
