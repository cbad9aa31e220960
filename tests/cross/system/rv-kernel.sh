#!/usr/bin/env bash
# rv-kernel.sh - builds a small riscv64 Linux kernel Image for
# `qemu-system-riscv64 -M virt` (tests/cross/system.sh boots it: Debian 12
# packages no riscv64 kernel) from Debian's linux-source-6.1 with
# gcc-riscv64-linux-gnu, and prints its path.
#
# The configuration starts from tinyconfig and enables only what the
# guest's tests use: an initramfs with ELF and #! binaries, /proc /sys
# devtmpfs tmpfs, the system calls glibc, bash, busybox and the runtime
# make (futex, epoll, eventfd, signalfd, timerfd, madvise, membarrier,
# process_vm_readv, SysV IPC, seccomp filters), Unix sockets for the
# control socket, the FPU and compressed instructions (Debian's userland is
# rv64gc), a 16550 UART with the PLIC as console and the SBI's system
# reset for poweroff.
#
# The Image is cached in $DFT_QEMU_CACHE (as system.sh's downloads) under
# a name that holds the source's version and this script's hash, so a
# re-run reuses it and a change here builds anew. The build tree is
# removed after a build.
# Exit status: 0 built or cached (path on stdout), 1 failed (the build's
# last lines on stderr), 2 something missing (why on stderr).
set -u
C=${DFT_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynftrace-qemu}
SRC=${RV_KERNEL_SRC:-/usr/src/linux-source-6.1.tar.xz}
CROSS=${RV_KERNEL_CROSS:-riscv64-linux-gnu-}
miss() {
	echo "rv-kernel: $* (scripts/deps.sh test installs it)" >&2
	exit 2
}
[ -f "$SRC" ] || miss "no $SRC"
for c in "${CROSS}gcc" flex bison bc make xz; do
	command -v "$c" >/dev/null || miss "$c is not installed"
done
mkdir -p "$C" || miss "cannot create the cache directory $C"
ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null)
[ -n "$ver" ] || ver=$(stat -c %s-%Y "$SRC")
key=$(printf '%s\n' "$ver" | cat - "$0" | sha256sum | cut -c1-12)
IMG=$C/riscv64-Image-$key
if [ -s "$IMG" ]; then
	echo "$IMG"
	exit 0
fi

W=$C/rv-kernel-build.$$
trap 'rm -rf "$W"' EXIT
mkdir -p "$W"
log=$W/log
t0=$SECONDS
tar -C "$W" -xJf "$SRC" --strip-components=1 ||
	{ echo "rv-kernel: cannot unpack $SRC" >&2; exit 1; }
t1=$SECONDS
K="make -C $W ARCH=riscv CROSS_COMPILE=$CROSS -s"
$K tinyconfig >"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
on=(64BIT ARCH_RV64I MMU SMP FPU RISCV_ISA_C SOC_VIRT
	PRINTK TTY SERIAL_EARLYCON SERIAL_8250 SERIAL_8250_CONSOLE SERIAL_OF_PLATFORM
	SIFIVE_PLIC RISCV_TIMER RISCV_SBI POWER_RESET POWER_RESET_SYSCON POWER_RESET_SYSCON_POWEROFF
	BLK_DEV_INITRD RD_GZIP BINFMT_ELF BINFMT_SCRIPT
	PROC_FS PROC_SYSCTL SYSFS DEVTMPFS TMPFS SHMEM
	MULTIUSER POSIX_TIMERS HIGH_RES_TIMERS FUTEX EPOLL SIGNALFD EVENTFD TIMERFD FHANDLE
	ADVISE_SYSCALLS MEMBARRIER CROSS_MEMORY_ATTACH SYSVIPC FILE_LOCKING RSEQ
	SECCOMP SECCOMP_FILTER NET UNIX
	HAVE_ARCH_TRACEHOOK)
off=(AIO IO_URING MODULES BLOCK VIRTUALIZATION WERROR DEBUG_INFO)
args=()
for o in "${on[@]}"; do args+=(-e "$o"); done
for o in "${off[@]}"; do args+=(-d "$o"); done
"$W/scripts/config" --file "$W/.config" "${args[@]}" &&
	$K olddefconfig >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
# what olddefconfig dropped (a dependency not met) is an error here
lost=
for o in "${on[@]}"; do
	grep -qx "CONFIG_$o=y" "$W/.config" || lost="$lost CONFIG_$o"
done
[ -z "$lost" ] || { echo "rv-kernel: not enabled (a dependency missing):$lost" >&2; exit 1; }
t2=$SECONDS
$K -j"$(nproc)" Image >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
cp "$W/arch/riscv/boot/Image" "$IMG.tmp" && mv "$IMG.tmp" "$IMG" || exit 1
cp "$W/.config" "$IMG.config"
echo "rv-kernel: built $IMG in $((SECONDS - t0)) s (unpack $((t1 - t0)) s, configure $((t2 - t1)) s, compile $((SECONDS - t2)) s, $(nproc) cores)" >&2
echo "$IMG"
