#!/usr/bin/env bash
# vm.sh - run a command inside a small QEMU VM that has a soft-RoCE device (rdma_rxe).
#
# Neither the development machines nor CI have RDMA hardware, and their kernels lack
# rdma_rxe. Debian's generic kernel package ships it, so this script boots that kernel
# (downloaded with apt-get, never installed) on a busybox initramfs, creates rxe0 on a
# dummy netdev, runs one command and exits with the command's status.
#
# usage: tests/rdma/vm.sh BUILD_DIR [-e NAME=VALUE]... -- CMD [ARG]...
#
#   BUILD_DIR  a meson build directory of Lode. It and the source tree are shared into the
#              guest read-only (9p) at the same absolute paths as on the host, so paths
#              such as meson's full_path() and the test scripts under tests/ work as-is.
#              Every executable in it is also linked from /lode/bin, which is first on
#              PATH (lode-mds, lode-oss, lodectl, test programs). The shared libraries
#              they need come from the host, copied into the initramfs (ldd closure).
#   -e N=V     set N=V in the command's environment (repeatable).
#   CMD        runs as root in /tmp (a writable tmpfs), stdin /dev/null, output on the
#              serial console, which this script prints. A relative program path is
#              taken from the current directory.
#
# Environment of CMD in the guest:
#   LODE_RDMA_IP          the IPv4 address rxe0 sits on (dummy0/24): listen on
#                         rdma://$LODE_RDMA_IP:0; librdmacm resolves it to rxe0
#   LODE_RDMA_DEV         rxe0
#   LODE_RDMA_GID_INDEX   index of the RoCE v2 GID of LODE_RDMA_IP (raw verbs)
#   LODE_BUILD_DIR, LODE_SOURCE_DIR   the shared trees (absolute host paths)
#   TMPDIR=/tmp, PATH=/lode/bin:...   and every host variable named LODE* (except this
#                         script's LODE_VM_* and LODE_RXE_CACHE), LD_LIBRARY_PATH,
#                         ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS, passed unchanged
#   127.0.0.1 on lo works too (TCP); rdma_cm does not work on lo. /tmp is a tmpfs of half
#   the VM's memory. Programs CMD runs must live in the build or source tree, or be
#   busybox applets or rdma-core tools of the initramfs.
#
# Exit status: CMD's status mapped for meson: 0 pass, 77 skip (CMD exited 77, or this
# host cannot run the VM: not root, a tool or package missing and not downloadable),
# 1 anything else (CMD failed, timed out, or the VM did not come up).
#
# Knobs (environment):
#   LODE_RXE_CACHE=/var/cache/lode-rxe  kernel .deb and the built base initramfs
#   LODE_VM_CMD_TIMEOUT=300   seconds CMD may run inside the guest
#   LODE_VM_TIMEOUT           seconds the whole VM may run (default CMD timeout + 150)
#   LODE_VM_BOOT_TIMEOUT=90   seconds the guest may take to reach init; a boot that stalls
#                             before init is tried again, twice at most
#   LODE_VM_ACCEL=tcg         tcg, or kvm where /dev/kvm can boot a stock kernel
#   LODE_VM_MEM=2G            the VM's memory (QEMU -m)
#   LODE_VM_KERNEL_PKG        kernel package (default: what linux-image-amd64 depends on)
#   LODE_VM_KEEP=1            keep the temporary directory (console log, initramfs)
#
# Host packages (tools/install-deps.sh): qemu-system-x86 busybox-static cpio kmod
# iproute2 ibverbs-providers libibverbs1 librdmacm1. Must run as root.
set -euo pipefail

me=${0##*/}
usage() {
	echo "usage: $me BUILD_DIR [-e NAME=VALUE]... -- CMD [ARG]..." >&2
	exit 2
}
skip() {
	echo "$me: SKIP: $*"
	exit 77
}
fail() {
	echo "$me: FAIL: $*"
	exit 1
}
note() { echo "$me: $*"; }

# ------------------------------------------------------------------------ arguments
[ $# -ge 1 ] || usage
build_dir=$1
shift
extra_env=()
while [ $# -gt 0 ]; do
	case $1 in
	-e)
		[ $# -ge 2 ] && [[ $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage
		extra_env+=("$2")
		shift 2
		;;
	--)
		shift
		break
		;;
	*) usage ;;
	esac
done
[ $# -ge 1 ] || usage
# The guest starts CMD in /tmp: a relative program path is made absolute here.
if [[ $1 == */* && $1 != /* ]]; then
	[ -e "$1" ] || fail "$1 not found"
	set -- "$(realpath "$1")" "${@:2}"
fi
[ -d "$build_dir/meson-info" ] || fail "$build_dir is not a meson build directory"
build_dir=$(realpath "$build_dir")
src_dir=$(realpath "$(dirname "${BASH_SOURCE[0]}")/../..")
cmd_timeout=${LODE_VM_CMD_TIMEOUT:-300}
vm_timeout=${LODE_VM_TIMEOUT:-$((cmd_timeout + 150))}
boot_timeout=${LODE_VM_BOOT_TIMEOUT:-90}
accel=${LODE_VM_ACCEL:-tcg}
mem=${LODE_VM_MEM:-2G}
cache=${LODE_RXE_CACHE:-/var/cache/lode-rxe}
[[ $cmd_timeout =~ ^[0-9]+$ && $vm_timeout =~ ^[0-9]+$ && $boot_timeout =~ ^[0-9]+$ ]] || fail "timeouts must be whole seconds"

# ------------------------------------------------------------------------ host checks
[ "$(id -u)" -eq 0 ] || skip "must run as root (apt-get download, $cache)"
for tool in qemu-system-x86_64 cpio depmod modprobe dpkg-deb dpkg-query apt-get apt-cache \
	ldd ldconfig flock gzip rdma; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip "$tool not found (run tools/install-deps.sh)"
done
busybox=/bin/busybox
{ [ -x "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1; } ||
	skip "no static $busybox (install busybox-static)"
libdir=/usr/lib/x86_64-linux-gnu
# (No early-exiting readers such as head or awk's exit in pipelines: under pipefail the
# writer's SIGPIPE would fail the script at random.)
first_match() { { compgen -G "$1" || true; } | sort | sed -n 1p; }
rxe_provider=$(first_match "$libdir/libibverbs/librxe-rdmav*.so")
[ -n "$rxe_provider" ] || skip "no rxe provider in $libdir/libibverbs (install ibverbs-providers)"
[ -f /etc/libibverbs.d/rxe.driver ] || skip "no /etc/libibverbs.d/rxe.driver (ibverbs-providers)"
# glibc dlopen()s libgcc_s for pthread_exit and cancellation; ldd never lists it.
host_lib() { ldconfig -p | awk -v n="$1" '!found && $1 == n && /x86-64/ { print $NF; found = 1 }'; }
userspace_libs=()
for soname in libibverbs.so.1 librdmacm.so.1 libgcc_s.so.1; do
	path=$(host_lib "$soname")
	[ -n "$path" ] || skip "$soname not found on the host (install libibverbs1 librdmacm1)"
	userspace_libs+=("$path")
done
[ "$accel" = tcg ] || [ "$accel" = kvm ] || fail "LODE_VM_ACCEL must be tcg or kvm"

# ------------------------------------------------------------------------ workspace
qemu_pid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lode-vm.XXXXXX")
cleanup() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill -KILL "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	if [ "${LODE_VM_KEEP:-0}" = 1 ]; then
		note "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'note "interrupted"; exit 1' INT TERM HUP

# Shell-quote one word for the guest's sh (busybox ash): '...' with ' as '\''.
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Copy host file $1 into root $2 at the same path, dereferencing symlinks, with the
# directory part canonicalised (/lib -> /usr/lib on usr-merged hosts) so that every
# archive agrees on where a file lives.
put() {
	local dir
	dir=$(realpath "$(dirname "$1")")
	mkdir -p "$2$dir"
	cp -L "$1" "$2$dir/${1##*/}"
}

# Prints the absolute paths of the shared libraries ELF files $@ load (ldd closure).
lib_closure() {
	local f
	for f; do
		ldd "$f" 2>/dev/null || true
	done | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u
}

# Mirrors the host's top-level usr-merge symlinks (bin, sbin, lib, lib64) into root $1.
make_skeleton() {
	local d
	mkdir -p "$1"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,root,run}
	for d in bin sbin lib lib64; do
		if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$1/$d"; else mkdir -p "$1/$d"; fi
	done
}

# Writes the newc cpio archive of directory $1 to stdout.
make_cpio() { (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet); }

# ------------------------------------------------------------------------ kernel package
# The kernel is fetched, never installed: only vmlinuz and a few modules are used.
mkdir -p "$cache/debs" || skip "cannot create $cache"
exec 9>"$cache/lock"
flock -w 300 9 || fail "$cache/lock was held by another run for 5 minutes"
# Asking apt-cache costs seconds, so a kernel downloaded in the last week is used as is.
kpkg=${LODE_VM_KERNEL_PKG:-}
deb=
if [ -z "$kpkg" ]; then
	deb=$(find "$cache/debs" -name 'linux-image-*.deb' -mtime -7 | sed -n 1p)
	[ -n "$deb" ] || kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '!found && /Depends: linux-image-[0-9]/ { print $2; found = 1 }')
fi
if [ -z "$deb" ] && [ -n "$kpkg" ]; then
	deb=$(first_match "$cache/debs/${kpkg}_*.deb")
	if [ -n "$deb" ]; then
		touch "$deb"
	else
		note "downloading $kpkg (once; cached in $cache)"
		mkdir "$tmp/dl"
		if (cd "$tmp/dl" && apt-get download -q -o APT::Sandbox::User=root "$kpkg") \
			>"$tmp/dl.log" 2>&1; then
			rm -f "$cache/debs/"*.deb
			mv "$tmp/dl/${kpkg}_"*.deb "$cache/debs/"
			deb=$(first_match "$cache/debs/${kpkg}_*.deb")
			touch "$deb" # apt dates it from the mirror
		else
			note "apt-get download $kpkg failed: $(tail -n 1 "$tmp/dl.log")"
		fi
	fi
fi
if [ -z "$deb" ]; then
	# No apt lists or no mirror: any kernel downloaded earlier still does the job.
	deb=$(first_match "$cache/debs/linux-image-*.deb")
	[ -n "$deb" ] ||
		skip "no kernel package: linux-image-amd64 unknown to apt-cache or not downloadable"
fi

# ------------------------------------------------------------------------ base initramfs
# Everything that does not depend on the build directory: busybox, kernel modules and
# rdma-core's userspace. Cached under a key of the kernel, this script and the host
# packages it copies from, so it is rebuilt exactly when one of them changes.
key=$({
	basename "$deb"
	sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1
	dpkg-query -W busybox-static libc6 libgcc-s1 libibverbs1 librdmacm1 ibverbs-providers \
		iproute2 ibverbs-utils rdmacm-utils 2>/dev/null || true
} | sha256sum | cut -c1-16)
base=$cache/base-$key
if [ ! -f "$base/done" ]; then
	note "building the base initramfs from $(basename "$deb")"
	t0=$SECONDS
	kroot=$tmp/kernel
	dpkg-deb -x "$deb" "$kroot" || fail "dpkg-deb -x $deb failed"
	kver=$(ls "$kroot/lib/modules")
	[ -f "$kroot/boot/vmlinuz-$kver" ] || fail "no vmlinuz-$kver in $deb"
	depmod -b "$kroot" "$kver" || fail "depmod on $deb failed"
	broot=$tmp/base
	make_skeleton "$broot"
	# rdma_rxe computes its ICRC with the "crc32" shash but modules.dep does not say so;
	# virtio_pci, 9pnet_virtio and 9p mount the shared trees; dummy carries rxe0.
	mods=(rdma_rxe ib_uverbs rdma_ucm crc32_generic crc32_pclmul dummy virtio_pci
		9pnet_virtio 9p)
	for m in "${mods[@]}"; do
		deps=$(modprobe -d "$kroot" -S "$kver" --show-depends "$m" 2>"$tmp/modprobe.err") ||
			skip "kernel module $m not in $(basename "$deb"): $(head -n 1 "$tmp/modprobe.err")"
		while read -r kind ko _; do
			[ "$kind" = insmod ] || continue
			rel=${ko#"$kroot"}
			mkdir -p "$broot$(dirname "$rel")"
			cp "$ko" "$broot$rel"
		done <<<"$deps"
	done
	cp "$kroot/lib/modules/$kver/"modules.{builtin,builtin.modinfo,order} \
		"$broot/lib/modules/$kver/"
	depmod -b "$broot" "$kver"
	cp "$busybox" "$broot/usr/bin/busybox"
	files=("$(command -v rdma)" "$rxe_provider" "${userspace_libs[@]}")
	for tool in ibv_devices ibv_devinfo rping; do # debugging aids, when installed
		if command -v "$tool" >/dev/null; then files+=("$(command -v "$tool")"); fi
	done
	mapfile -t libs < <(lib_closure "${files[@]}")
	for f in "${files[@]}" "${libs[@]}"; do put "$f" "$broot"; done
	mkdir -p "$broot/etc/libibverbs.d"
	cp /etc/libibverbs.d/rxe.driver "$broot/etc/libibverbs.d/"
	# Applets never shadow the real tools copied above. The kernel's request_module()
	# runs /sbin/modprobe.
	for applet in $("$busybox" --list); do
		[ -e "$broot/usr/bin/$applet" ] || [ -e "$broot/usr/sbin/$applet" ] ||
			ln -s busybox "$broot/usr/bin/$applet"
	done
	ln -sf ../bin/busybox "$broot/usr/sbin/modprobe"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$broot/etc/passwd"
	echo 'root:x:0:' >"$broot/etc/group"
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n' >"$broot/etc/hosts"
	echo 'hosts: files' >"$broot/etc/nsswitch.conf"

	new=$tmp/base-out
	mkdir "$new"
	# Under TCG, unpacking the xz-compressed bzImage costs ~7 s of every boot. QEMU can load
	# the uncompressed ELF directly through its PVH entry point, when the kernel has one.
	vmlinuz=$kroot/boot/vmlinuz-$kver
	xz_at=$(LC_ALL=C grep -abo $'\xfd7zXZ' "$vmlinuz" | cut -d: -f1 | sed -n 1p) || xz_at=
	if grep -qx CONFIG_PVH=y "$kroot/boot/config-$kver" && [[ $xz_at =~ ^[0-9]+$ ]] &&
		command -v xz >/dev/null &&
		{ tail -c +"$((xz_at + 1))" "$vmlinuz" || true; } |
		xz -dc --single-stream >"$new/kernel" 2>/dev/null; then
		note "booting the uncompressed kernel (PVH)"
	else
		cp "$vmlinuz" "$new/kernel"
	fi
	make_cpio "$broot" | gzip -1 >"$new/base.cpio.gz"
	# The run archive is appended uncompressed; the kernel wants it 4-byte aligned and
	# skips zero padding between archives.
	size=$(stat -c %s "$new/base.cpio.gz")
	head -c $(((4 - size % 4) % 4)) /dev/zero >>"$new/base.cpio.gz"
	(cd "$broot" && find . -mindepth 1 -not -type d | cut -c2- | LC_ALL=C sort) \
		>"$new/files"
	touch "$new/done"
	rm -rf "$cache"/base-*
	mv "$new" "$base"
	rm -rf "$kroot" "$broot"
	note "base initramfs: $(du -h "$base/base.cpio.gz" | cut -f1) in $((SECONDS - t0)) s"
fi
cp "$base/kernel" "$base/base.cpio.gz" "$base/files" "$tmp/"
flock -u 9
exec 9>&-

# ------------------------------------------------------------------------ run initramfs
# What depends on this build and this command: the libraries of every executable in the
# build directory (the executables themselves come over 9p), /lode/bin, /init and its
# configuration. Small and uncompressed, so building it each run costs little.
rroot=$tmp/run
mkdir -p "$rroot/lode/bin" "$rroot/etc/lode-vm"
mapfile -t elf_files < <(find "$build_dir" -type f \( -perm -u+x -o -name '*.so*' \) \
	-not -path '*/meson-*' -not -path '*.p/*' -exec sh -c \
	'for f; do [ "$(head -c 4 "$f")" = "$(printf "\177ELF")" ] && echo "$f"; done' sh {} + |
	LC_ALL=C sort)
[ ${#elf_files[@]} -gt 0 ] || fail "no executables in $build_dir (run ninja first)"
declare -A in_base=()
while read -r f; do in_base[$f]=1; done <"$tmp/files"
while read -r lib; do
	case $lib in "$build_dir"/* | "$src_dir"/*) continue ;; esac
	dest=$(realpath "$(dirname "$lib")")/${lib##*/}
	[ -n "${in_base[$dest]:-}" ] || put "$lib" "$rroot"
	# a library found through an rpath with a symlink in it (/usr/local/cuda/lib64 ->
	# cuda-13.0/...) must also be where that rpath says, or the loader misses it
	if [ "$dest" != "$lib" ] && [ ! -e "$rroot$lib" ] && [[ $lib != /lib* && $lib != /usr/lib* ]]; then
		mkdir -p "$rroot$(dirname "$lib")"
		cp -L "$lib" "$rroot$lib"
	fi
done < <(lib_closure "${elf_files[@]}")
for f in "${elf_files[@]}"; do
	[ -x "$f" ] && [[ $f != *.so* ]] || continue
	[ -e "$rroot/lode/bin/${f##*/}" ] || ln -s "$f" "$rroot/lode/bin/${f##*/}"
done

# Configuration for /init, as sh assignments.
{
	echo "vm_cmd_timeout=$cmd_timeout"
	echo "vm_src_dir=$(shq "$src_dir")"
	echo "vm_build_dir=$(shq "$build_dir")"
	case $build_dir/ in
	"$src_dir"/*) echo "vm_build_shared=0" ;;
	*) echo "vm_build_shared=1" ;;
	esac
} >"$rroot/etc/lode-vm/conf"
{
	echo "LODE_BUILD_DIR=$(shq "$build_dir")"
	echo "LODE_SOURCE_DIR=$(shq "$src_dir")"
	while read -r name; do
		case $name in
		LODE_VM_* | LODE_RXE_CACHE) ;;
		LODE* | LD_LIBRARY_PATH | ASAN_OPTIONS | UBSAN_OPTIONS | LSAN_OPTIONS) echo "$name=$(shq "${!name}")" ;;
		esac
	done < <(compgen -e)
	for kv in "${extra_env[@]}"; do echo "${kv%%=*}=$(shq "${kv#*=}")"; done
} >"$rroot/etc/lode-vm/env"
{
	printf 'exec'
	for arg; do printf ' %s' "$(shq "$arg")"; done
	echo
} >"$rroot/etc/lode-vm/cmd"

cat >"$rroot/init" <<'INIT'
#!/bin/sh
# PID 1 of the soft-RoCE VM, written by tests/rdma/vm.sh: bring up rxe0, run the
# command, print one LODE-VM-RESULT line and power off.
export PATH=/lode/bin:/usr/sbin:/usr/bin HOME=/root TMPDIR=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
. /etc/lode-vm/conf
rdma_ip=10.77.0.1

say() { echo "lode-vm: [$(cut -d' ' -f1 /proc/uptime)s] $*"; }
finish() { # STATUS RC
	echo "LODE-VM-RESULT: $1 exit=$2"
	sync
	poweroff -f
	sleep 30
}
setup_failed() {
	say "setup failed: $*"
	dmesg | tail -n 40
	finish FAIL 1
}

say "init, kernel $(uname -r)"
# crc32_pclmul is only a faster crc32; the CPU model may lack PCLMULQDQ.
modprobe crc32_pclmul 2>/dev/null
for m in crc32_generic dummy virtio_pci 9pnet_virtio 9p rdma_rxe ib_uverbs rdma_ucm; do
	modprobe "$m" || setup_failed "modprobe $m"
done

# Share the trees read-only at their host paths.
mount_tree() { # TAG DIR
	mkdir -p "$2" 2>/dev/null
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 "$1" "$2" ||
		setup_failed "mount $1 on $2"
}
mount_tree lodesrc "$vm_src_dir"
[ "$vm_build_shared" = 0 ] || mount_tree lodebuild "$vm_build_dir"

# rdma_cm only matches RoCE GIDs on an Ethernet netdev (not lo), and rxe builds its
# GID table from the addresses present when the link is added: address first.
ip link set lo up
[ -d /sys/class/net/dummy0 ] || setup_failed "no dummy0"
ip addr add "$rdma_ip/24" dev dummy0 || setup_failed "ip addr add"
ip link set dummy0 up || setup_failed "ip link set dummy0 up"
rdma link add rxe0 type rxe netdev dummy0 || setup_failed "rdma link add rxe0"
port=/sys/class/infiniband/rxe0/ports/1
want=$(echo "$rdma_ip" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
gid_index=
i=0
while [ $i -lt 100 ]; do
	for g in "$port"/gids/*; do
		[ "$(cat "$g" 2>/dev/null)" = "$want" ] && gid_index=${g##*/} && break
	done
	[ -n "$gid_index" ] && grep -q ACTIVE "$port/state" 2>/dev/null && break
	i=$((i + 1))
	sleep 0.1
done
[ -n "$gid_index" ] || setup_failed "no GID for $rdma_ip on rxe0"
grep -q ACTIVE "$port/state" || setup_failed "rxe0 port is $(cat "$port/state")"
say "rxe0 up on dummy0 $rdma_ip, GID index $gid_index, $(cat "$port/state")"

set -a
LODE_RDMA_IP=$rdma_ip
LODE_RDMA_DEV=rxe0
LODE_RDMA_GID_INDEX=$gid_index
. /etc/lode-vm/env
set +a

say "running: $(cut -c6- /etc/lode-vm/cmd)"
start=$(cut -d. -f1 /proc/uptime)
cd /tmp
timeout -k 10 "$vm_cmd_timeout" sh /etc/lode-vm/cmd </dev/null
rc=$?
took=$(($(cut -d. -f1 /proc/uptime) - start))
if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
	[ $took -lt "$vm_cmd_timeout" ] || say "the command ran into its ${vm_cmd_timeout}s timeout"
	echo "---- kernel log (rdma)"
	dmesg | grep -iE 'rxe|rdma|infiniband|ib_' | tail -n 20
fi
say "command exited $rc after ${took}s"
case $rc in
0) finish PASS 0 ;;
77) finish SKIP 77 ;;
*) finish FAIL $rc ;;
esac
INIT
chmod +x "$rroot/init"

cat "$tmp/base.cpio.gz" >"$tmp/initrd.img"
make_cpio "$rroot" >>"$tmp/initrd.img"

# ------------------------------------------------------------------------ boot
if [ "$accel" = kvm ]; then
	accel_args=(-accel kvm -cpu host)
else
	accel_args=(-accel tcg,thread=multi -cpu max)
fi
log=$tmp/console.log
qemu_args=("${accel_args[@]}" -smp 2 -m "$mem" -nodefaults -no-user-config -no-reboot
	-display none -serial "file:$log" -monitor none
	-kernel "$tmp/kernel" -initrd "$tmp/initrd.img"
	-virtfs "local,path=$src_dir,mount_tag=lodesrc,security_model=none,readonly=on")
case $build_dir/ in
"$src_dir"/*) ;;
*) qemu_args+=(-virtfs "local,path=$build_dir,mount_tag=lodebuild,security_model=none,readonly=on") ;;
esac

# One boot: start QEMU and print the console as it grows. Stop QEMU when the guest
# overruns, hangs after its verdict, or never reaches init within boot_timeout: a stock
# kernel under TCG has been seen to stall before init once in many boots, so such a boot
# is tried again, with the kernel's own messages on the console that time. vm_timeout
# bounds all boots together.
boot() { # KERNEL_CMDLINE
	local alive size result_at= booted=0 t0=$SECONDS
	: >"$log"
	qemu-system-x86_64 "${qemu_args[@]}" -append "$1" </dev/null >"$tmp/qemu.out" 2>&1 &
	qemu_pid=$!
	shown=0
	timed_out=0
	stalled=0
	while :; do
		alive=0
		kill -0 "$qemu_pid" 2>/dev/null && alive=1
		size=$(stat -c %s "$log")
		if [ "$size" -gt "$shown" ]; then
			dd if="$log" iflag=skip_bytes,count_bytes skip="$shown" count="$((size - shown))" \
				status=none | tr -d '\r'
			shown=$size
		fi
		[ "$alive" = 1 ] || break
		[ "$booted" = 1 ] || ! grep -aq '^lode-vm: ' "$log" || booted=1
		if [ -z "$result_at" ] && grep -aq '^LODE-VM-RESULT:' "$log"; then result_at=$SECONDS; fi
		if [ "$booted" = 0 ] && [ $((SECONDS - t0)) -ge "$boot_timeout" ]; then
			stalled=1
		elif [ $((SECONDS - vm_t0)) -ge "$vm_timeout" ]; then
			[ -n "$result_at" ] || timed_out=1
		elif [ -z "$result_at" ] || [ $((SECONDS - result_at)) -lt 20 ]; then
			sleep 0.5
			continue
		fi
		kill -TERM "$qemu_pid" 2>/dev/null || true
		sleep 2
		kill -KILL "$qemu_pid" 2>/dev/null || true
		sleep 0.5
	done
	qemu_rc=0
	wait "$qemu_pid" || qemu_rc=$?
	qemu_pid=
	echo
}

note "booting ($accel, ${vm_timeout}s limit): $*"
vm_t0=$SECONDS
boot "console=ttyS0 quiet panic=-1"
for attempt in 2 3; do
	[ "$stalled" = 1 ] || break
	note "the guest did not reach init within ${boot_timeout}s; booting again ($attempt of 3)"
	boot "console=ttyS0 panic=-1"
done
verdict=$(grep -a '^LODE-VM-RESULT:' "$log" | tr -d '\r' | tail -n 1) || verdict=
note "VM ran $((SECONDS - vm_t0)) s${verdict:+; $verdict}"
case $verdict in
*": PASS exit=0") exit 0 ;;
*": SKIP exit=77") exit 77 ;;
*": FAIL exit="*) exit 1 ;;
esac
[ "$stalled" = 0 ] || fail "the guest did not reach init in 3 boots of ${boot_timeout}s"
[ "$timed_out" = 0 ] || fail "the VM did not finish within ${vm_timeout}s; killed"
[ ! -s "$tmp/qemu.out" ] || cat "$tmp/qemu.out"
fail "the guest gave no verdict (QEMU exit status $qemu_rc)"
