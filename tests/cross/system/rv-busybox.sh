#!/usr/bin/env bash
# rv-busybox.sh - builds a static riscv64 busybox for the system-emulated
# riscv64 guest of tests/cross/system.sh (Debian 12 has no riscv64
# packages to download, as it does for arm64) from Debian's source package
# (apt-get source busybox) with gcc-riscv64-linux-gnu, and prints its path.
# Its shell is ash with bash's extensions, also installed as bash
# (CONFIG_BASH_IS_ASH): the guest's scripts are written for either.
# Cached as rv-kernel.sh's Image is (in $DFT_QEMU_CACHE, by the source's
# version and this script's hash). Exit status: 0 built or cached (path on
# stdout), 1 failed (the build's last lines on stderr), 2 something
# missing (why on stderr).
set -u
C=${DFT_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynftrace-qemu}
CROSS=${RV_KERNEL_CROSS:-riscv64-linux-gnu-}
miss() {
	echo "rv-busybox: $*" >&2
	exit 2
}
for c in "${CROSS}gcc" make apt-get dpkg-source; do
	command -v "$c" >/dev/null || miss "$c is not installed (scripts/deps.sh test installs it)"
done
[ -f "/usr/${CROSS%-}/lib/libc.a" ] || miss "no static C library for ${CROSS%-} (libc6-dev-riscv64-cross)"
mkdir -p "$C" || miss "cannot create the cache directory $C"
ver=$(apt-cache show --no-all-versions busybox 2>/dev/null | sed -n 's/^Version: //p' | head -1)
[ -n "$ver" ] || miss "no busybox in the package lists (apt-get update)"
key=$(printf '%s\n' "$ver" | cat - "$0" | sha256sum | cut -c1-12)
BB=$C/riscv64-busybox-$key
if [ -s "$BB" ]; then
	echo "$BB"
	exit 0
fi
W=$C/rv-busybox-build.$$
trap 'rm -rf "$W"' EXIT
mkdir -p "$W"
log=$W/log
t0=$SECONDS
# apt's downloads as root, not as _apt: tests/run.sh runs a cross check
# in a user namespace where only root is mapped
(cd "$W" && apt-get -o APT::Sandbox::User=root source -q busybox) >"$log" 2>&1 ||
	{ tail -5 "$log" >&2; miss "cannot get busybox's source (no deb-src in the apt sources, or no network)"; }
S=$(ls -d "$W"/busybox-*/ | head -1)
K="make -C $S CROSS_COMPILE=$CROSS -s"
$K defconfig >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
# static; bash is ash; tc does not build against every kernel's headers
sed -i -e 's/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/' \
	-e 's/^# CONFIG_BASH_IS_ASH is not set/CONFIG_BASH_IS_ASH=y/' \
	-e 's/^CONFIG_BASH_IS_NONE=y/# CONFIG_BASH_IS_NONE is not set/' \
	-e 's/^CONFIG_TC=y/# CONFIG_TC is not set/' "$S/.config"
yes '' | $K oldconfig >>"$log" 2>&1
for o in STATIC BASH_IS_ASH; do
	grep -qx "CONFIG_$o=y" "$S/.config" || { echo "rv-busybox: CONFIG_$o not set" >&2; exit 1; }
done
$K -j"$(nproc)" busybox >>"$log" 2>&1 || { tail -30 "$log" >&2; exit 1; }
cp "$S/busybox" "$BB.tmp" && mv "$BB.tmp" "$BB" || exit 1
echo "rv-busybox: built $BB in $((SECONDS - t0)) s ($(nproc) cores)" >&2
echo "$BB"
