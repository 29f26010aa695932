#!/bin/bash
# glusterfs.sh - start or stop a single-machine GlusterFS volume, as a peer for
# Lode's benchmark (tools/bench/run.sh --dir "$(tools/bench/peers/glusterfs.sh up DIR)").
#
#   glusterfs.sh up DIR     install glusterfs-server/-client if missing, start a private
#                           glusterd, create and start volume "lodebench", mount it with
#                           the FUSE client at DIR/mnt and print that path on stdout
#                           (nothing else goes to stdout).  Running it again while the
#                           volume is mounted only prints the path.
#   glusterfs.sh down DIR   unmount, stop every gluster process started for DIR, delete
#                           DIR's state.  Safe after a failed `up`.
#
# Environment: GLUSTER_REPLICA (default 1)
#   1  distributed volume over 3 bricks (DIR/brick1..3)
#   2  distributed-replicated 2 x 2 over 4 bricks (DIR/brick1..4): each file is on
#      one replica pair; replica 2 over 3 bricks is refused by gluster, and 2 x 2
#      keeps files spread over pairs like the other setups spread over servers.
#
# Addresses: GlusterFS refuses localhost/127.0.0.1 as a brick host, so everything
# uses 127.0.0.2 (on lo already, nothing to configure).  glusterd gets its own
# volfile with transport.socket.bind-address 127.0.0.2 (port 24007), which it
# also hands down to the brick processes (ports from 49152).  Its working
# directory, run directory, CLI socket and logs all live under DIR, so the
# system's /var/lib/glusterd is not touched.  glusterd's port 24007 is fixed,
# so only one such volume can run at a time.

set -u

HOST=127.0.0.2
VOL=lodebench
WAIT_S=${GLUSTER_WAIT_S:-60}	# bound on each wait below

die() { echo "glusterfs.sh: error: $*" >&2; exit 1; }
log() { echo "glusterfs.sh: $*" >&2; }

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
	command -v glusterd >/dev/null || missing+=(glusterfs-server)
	command -v mount.glusterfs >/dev/null || missing+=(glusterfs-client)
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends \
		"${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
	# Debian's postinst may start the system glusterd (on hosts with systemd);
	# it would hold port 24007 on every address.
	if command -v systemctl >/dev/null && systemctl is-active -q glusterd 2>/dev/null; then
		log "stopping the system glusterd started by the package"
		timeout 60 systemctl stop glusterd
	fi
}

# gluster CLI talking to our glusterd only
gcli() {
	timeout 90 gluster --mode=script --timeout=60 --glusterd-sock="$D/run/glusterd.socket" \
		--log-file="$D/log/cli.log" "$@"
}

glusterd_listening() { ss -Htln "( sport = :24007 )" | grep -q "$HOST:24007"; }
port_busy() { ss -Htln "( sport = :24007 )" | grep -qE "(\*|0\.0\.0\.0|\[::\]|$HOST):24007"; }
vol_started() { gcli volume info $VOL | grep -q '^Status: Started'; }
bricks_online() {
	local n
	n=$(gcli volume status $VOL detail | grep -c '^Online.*: Y')
	[ "$n" -ge "$1" ]
}
has_space() {
	local blocks
	blocks=$(timeout 10 stat -f -c %b "$1") && [ "$blocks" -gt 0 ]
}
is_up() { mountpoint -q "$D/mnt" && has_space "$D/mnt"; }

write_config() {
	mkdir -p "$D/glusterd" "$D/run" "$D/log" "$D/mnt" || return 1
	cat >"$D/glusterd.vol" <<-EOF
	volume management
	    type mgmt/glusterd
	    option working-directory $D/glusterd
	    option run-directory $D/run
	    option glusterd-sockfile $D/run/glusterd.socket
	    option transport-type socket
	    option transport.socket.bind-address $HOST
	    option transport.socket.listen-port 24007
	    option transport.socket.keepalive-time 10
	    option transport.socket.keepalive-interval 2
	    option transport.socket.read-fail-log off
	    option ping-timeout 0
	    option event-threads 1
	    option max-port 60999
	end-volume
	EOF
}

cmd_up() {
	local replica=${GLUSTER_REPLICA:-1} nbricks bricks=() i
	case $replica in
	1) nbricks=3 ;;
	2) nbricks=4 ;;
	*) die "GLUSTER_REPLICA must be 1 or 2 (got '$replica')" ;;
	esac
	mkdir -p "$1" || die "cannot create $1"
	D=$(cd "$1" && pwd -P)
	install_pkgs

	if is_up; then
		[ "$(cat "$D/replica" 2>/dev/null)" = "$replica" ] ||
			die "$D/mnt is up with replica $(cat "$D/replica" 2>/dev/null); run down first"
		echo "$D/mnt"
		return 0
	fi
	if [ -e "$D/glusterd.vol" ] || [ -e "$D/run" ] || [ -e "$D/sys-before" ]; then
		log "cleaning up a previous partial volume"
		cmd_down "$D" || die "could not clean up the previous volume"
		mkdir -p "$D"
	fi
	port_busy && die "port 24007 is already in use (another glusterd?): $(ss -Htlnp '( sport = :24007 )')"

	write_config || { cmd_down "$D"; die "could not write configuration under $D"; }
	sys_snapshot >"$D/sys-before" || { cmd_down "$D"; die "cannot list $SYS_DIRS"; }
	echo "$replica" >"$D/replica"

	log "starting glusterd on $HOST:24007"
	if ! timeout 60 glusterd -f "$D/glusterd.vol" -p "$D/run/glusterd.pid" \
		-l "$D/log/glusterd.log" >"$D/log/glusterd.out" 2>&1; then
		cat "$D/log/glusterd.out" >&2
		tail -20 "$D/log/glusterd.log" >&2
		cmd_down "$D"
		die "glusterd did not start (log above)"
	fi
	wait_for "$WAIT_S" glusterd_listening || {
		tail -20 "$D/log/glusterd.log" >&2
		cmd_down "$D"
		die "glusterd not listening on $HOST:24007 after ${WAIT_S}s"
	}
	wait_for "$WAIT_S" gcli volume list ||
		{ cmd_down "$D"; die "gluster CLI cannot reach glusterd after ${WAIT_S}s"; }

	for i in $(seq 1 $nbricks); do
		mkdir -p "$D/brick$i" || { cmd_down "$D"; die "cannot create $D/brick$i"; }
		bricks+=("$HOST:$D/brick$i")
	done
	log "creating volume $VOL: replica $replica, ${#bricks[@]} bricks"
	local rep=()
	[ "$replica" -gt 1 ] && rep=(replica "$replica")
	# force: the bricks are plain directories on the root file system.
	gcli volume create $VOL "${rep[@]}" transport tcp "${bricks[@]}" force >&2 ||
		{ tail -20 "$D/log/glusterd.log" >&2; cmd_down "$D"; die "volume create failed (log above)"; }
	gcli volume start $VOL >&2 ||
		{ tail -20 "$D/log/glusterd.log" >&2; cmd_down "$D"; die "volume start failed (log above)"; }
	wait_for "$WAIT_S" bricks_online "$nbricks" ||
		{ gcli volume status $VOL >&2; cmd_down "$D"; die "bricks not online after ${WAIT_S}s"; }

	log "mounting $D/mnt"
	if ! timeout 60 mount -t glusterfs -o log-file="$D/log/mnt.log" "$HOST:/$VOL" "$D/mnt"; then
		tail -20 "$D/log/mnt.log" >&2
		cmd_down "$D"
		die "mount -t glusterfs failed (log above)"
	fi
	wait_for "$WAIT_S" has_space "$D/mnt" ||
		{ tail -20 "$D/log/mnt.log" >&2; cmd_down "$D"; die "$D/mnt not usable after ${WAIT_S}s"; }
	log "up: volume $VOL, replica $replica, $nbricks bricks"
	echo "$D/mnt"
}

# glusterd and the bricks still write a few things at fixed system paths (brick
# logs, cmd_history.log, brick sockets, empty geo-replication/snapshot folders);
# there is no option to move them.  `up` lists what exists there before glusterd
# starts, and `down` removes what appeared since, unless some other glusterd runs.
SYS_DIRS="/var/log/glusterfs /var/run/gluster /var/lib/glusterd"
sys_snapshot() { find $SYS_DIRS 2>/dev/null | sort; }
sys_cleanup() {
	local p
	[ -f "$D/sys-before" ] || return 0
	# (an exited daemon may linger as a zombie until init reaps it: not running)
	if ps -C glusterd -o stat= | grep -qv '^Z'; then
		log "another glusterd is running; leaving new files under $SYS_DIRS alone"
		return 0
	fi
	# deepest first, so folders are empty by the time they are reached
	sys_snapshot | comm -13 "$D/sys-before" - | sort -r | while read -r p; do
		if [ -d "$p" ]; then rmdir "$p"; else rm -f "$p"; fi
	done
}

# pids of gluster processes whose command line names DIR (glusterd -f DIR/...,
# bricks --brick-name DIR/brickN, self-heal -p DIR/run/..., the FUSE client -l DIR/log/...,
# and the short-lived gsyncd helper glusterd runs at start)
our_pids() {
	local p cmd
	for p in $(pgrep -x 'glusterd|glusterfsd|glusterfs') $(pgrep -f 'syncdaemon/gsyncd'); do
		cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
		case $cmd in *" $D/"* | *"=$D/"*) echo "$p" ;; esac
	done
}

cmd_down() {
	local rc=0 pids i
	[ -d "$1" ] || return 0
	D=$(cd "$1" && pwd -P)

	if mountpoint -q "$D/mnt" 2>/dev/null; then
		timeout 30 umount "$D/mnt" 2>/dev/null || timeout 30 umount -l "$D/mnt" ||
			{ log "cannot unmount $D/mnt"; rc=1; }
	fi
	pids=$(our_pids)
	if [ -n "$pids" ]; then
		kill -TERM $pids 2>/dev/null
		for i in $(seq 1 40); do
			pids=$(our_pids)
			[ -z "$pids" ] && break
			sleep 0.25
		done
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null && sleep 0.5
		[ -n "$(our_pids)" ] && { log "processes still running: $(our_pids)"; rc=1; }
	fi
	sys_cleanup || rc=1
	# Bricks carry xattrs and a .glusterfs tree; everything here is ours.
	rm -rf "$D/glusterd" "$D/run" "$D/log" "$D"/brick[0-9]* "$D/glusterd.vol" "$D/replica" "$D/sys-before" || rc=1
	rmdir "$D/mnt" 2>/dev/null
	rmdir "$D" 2>/dev/null
	return $rc
}

[ $# -eq 2 ] || die "usage: $0 up|down DIR"
[ "$(id -u)" -eq 0 ] || die "must run as root (glusterd, mounts, apt-get)"
case $1 in
up) cmd_up "$2" ;;
down) cmd_down "$2" || die "down left something behind (see above)" ;;
*) die "usage: $0 up|down DIR" ;;
esac
