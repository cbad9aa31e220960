#!/usr/bin/env bash
# description: under system emulation (a real aarch64 or riscv64 kernel): fork, exec, the forking control tests, record of a forking program, attach and detach (aarch64: with threads inside signal handlers)
#
# What qemu-user cannot run (it cannot ptrace, aborts on fork() of a
# threaded process, cannot exec a guest binary without binfmt_misc) runs
# here on a real Linux kernel under qemu-system-aarch64 or -riscv64: for
# aarch64 a Debian cloud kernel, busybox and bash downloaded as arm64
# packages; for riscv64 (Debian 12 has no riscv64 packages) a small kernel
# and a static busybox (its ash also as bash) built here from Debian's
# sources (tests/cross/system/rv-kernel.sh, rv-busybox.sh: some minutes
# once, then cached); an initramfs of those, the cross sysroot's
# shared libraries, the cross build (at its host path, so rpaths hold) and
# the test programs built here; its /init runs tests/cross/system/guest.sh
# and powers off. The guest prints TAP lines between two markers; this
# script numbers them. No end marker (a hang, a panic, a crash) is a
# failure; a missing piece (another architecture, no qemu-system-*, no
# arm64 package lists, no kernel source or no network for the first
# download) is a skip, with why.
# Downloads are kept in $DFT_QEMU_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/dynftrace-qemu), fetched once.
# Env: TOP B ARCH, CC_CROSS, SYSTEM_TESTS (guest.sh's parts), SYSTEM_TIMEOUT
# (seconds for the whole boot, default 600), SYSTEM_SLOW (DFT_TEST_SLOW in
# the guest, default 200), SYSTEM_CONSOLE (a file to keep
# the guest's console in), SYSTEM_KARGS (kernel arguments instead of
# "quiet", e.g. loglevel=7 to see its unhandled-signal reports).
set -u
CC=${CC_CROSS:-$ARCH-linux-gnu-gcc}
n=0
fails=0
skip_all() {
	echo "ok 1 # SKIP system emulation: $*"
	echo "1..1"
	exit 0
}
case $ARCH in
aarch64) QEMU=qemu-system-aarch64 ;;
riscv64) QEMU=qemu-system-riscv64 ;;
*) skip_all "no emulated kernel for $ARCH (aarch64 and riscv64 only)" ;;
esac
for c in $QEMU cpio gzip; do
	command -v $c >/dev/null || skip_all "$c is not installed (scripts/deps.sh test installs it)"
done
C=${DFT_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynftrace-qemu}
mkdir -p "$C" || skip_all "cannot create the cache directory $C"
export DFT_QEMU_CACHE=$C
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SYSROOT=/usr/$ARCH-linux-gnu

if [ "$ARCH" = aarch64 ]; then
	# fetch PKG: PKG:arm64's files, extracted once into $C/PKG
	fetch() {
		local p=$1 deb
		[ -f "$C/$p/.done" ] && return 0
		rm -rf "${C:?}/$p" "$C"/"$p"_*.deb
		(cd "$C" && apt-get -o APT::Sandbox::User=root download -q "$p:arm64") >"$T/apt.log" 2>&1 || return 1
		deb=$(ls "$C"/"$p"_*_arm64.deb 2>/dev/null | head -1)
		[ -n "$deb" ] && dpkg-deb -x "$deb" "$C/$p" && rm -f "$deb" && touch "$C/$p/.done"
	}
	kpkg=$(cat "$C/kernel" 2>/dev/null)
	if [ -z "$kpkg" ]; then
		# the exact image the metapackage names (never a wildcard: that
		# would download every kernel)
		kpkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
			sed -n 's/^ *Depends: \(linux-image-[^:]*\):arm64$/\1/p' | head -1)
		[ -n "$kpkg" ] || skip_all "no arm64 package lists (dpkg --add-architecture arm64; apt-get update: scripts/deps.sh test)"
	fi
	for p in "$kpkg" busybox-static bash libtinfo6; do
		fetch "$p" || skip_all "cannot download $p:arm64 (no network?): $(tail -1 "$T/apt.log")"
	done
	echo "$kpkg" >"$C/kernel"
	K=$(ls "$C/$kpkg"/boot/vmlinuz-* 2>/dev/null | head -1)
	[ -n "$K" ] || skip_all "no vmlinuz in $kpkg"
else
	# riscv64: built here once (some minutes), then cached
	K=$(bash "$TOP/tests/cross/system/rv-kernel.sh" 2>"$T/k.log")
	case $? in
	0) ;;
	2) skip_all "$(tail -1 "$T/k.log")" ;;
	*)
		echo "not ok 1 - build the riscv64 kernel (tests/cross/system/rv-kernel.sh)"
		sed 's/^/# /' "$T/k.log" | tail -20
		exit 1
		;;
	esac
	BB=$(bash "$TOP/tests/cross/system/rv-busybox.sh" 2>"$T/bb.log")
	case $? in
	0) ;;
	2) skip_all "$(tail -1 "$T/bb.log")" ;;
	*)
		echo "not ok 1 - build the riscv64 busybox (tests/cross/system/rv-busybox.sh)"
		sed 's/^/# /' "$T/bb.log" | tail -20
		exit 1
		;;
	esac
	sed 's/^/# /' "$T/k.log" "$T/bb.log"
fi

# the programs the guest runs, built with the cross-built command's flags
G=$T/ir/g
mkdir -p "$G"
F="-std=gnu11 -O2 -g -D_GNU_SOURCE -I$TOP/include"
TF=$(qemu-$ARCH -L "$SYSROOT" "$B/dynftrace" cflags 2>/dev/null) ||
	TF=-fpatchable-function-entry=2
L="-L$B -Wl,--no-as-needed -ldynftrace -Wl,--as-needed -Wl,-rpath,$B -lpthread -ldl"
# shellcheck disable=SC2086
if ! $CC $F $TF "$TOP/tests/ctl/target.c" -o "$G/target" $L 2>"$T/build.log" ||
	! $CC $F $TF -fPIC -shared "$TOP/tests/progs/dlt-lib.c" -o "$G/libdlt.so" 2>>"$T/build.log" ||
	! $CC $F "$TOP/tests/ctl/peer.c" -o "$G/peer" 2>>"$T/build.log" ||
	! $CC $F "$TOP/tests/ctl/silent.c" -o "$G/silent" 2>>"$T/build.log" ||
	! $CC $F $TF "$TOP/tests/cross/system/forkexec.c" -o "$G/forkexec" 2>>"$T/build.log" ||
	! $CC $F $TF "$TOP/tests/progs/attach-target.c" -o "$G/attach-target" -lpthread 2>>"$T/build.log" ||
	{ [ "$ARCH" = aarch64 ] && # (aarch64's signal frames: guest.sh skips it elsewhere)
		! $CC $F $TF "$TOP/tests/progs/sigframe-target.c" -o "$G/sigframe-target" -lpthread 2>>"$T/build.log"; }; then
	echo "not ok 1 - build the guest's programs"
	sed 's/^/# /' "$T/build.log" | head -20
	exit 1
fi

# the initramfs
R=$T/ir
mkdir -p "$R"/{bin,sbin,usr/bin,lib,proc,sys,dev,tmp,etc} "$R$B/tests" "$R$TOP/tests"
ln -s lib "$R/lib64"
if [ "$ARCH" = aarch64 ]; then
	cp "$C/busybox-static/bin/busybox" "$R/bin/"
	cp "$(ls "$C"/bash/bin/bash "$C"/bash/usr/bin/bash 2>/dev/null | head -1)" "$R/usr/bin/bash"
	cp -a "$C"/libtinfo6/lib/*/libtinfo.so.6* "$R/lib/" 2>/dev/null ||
		cp -a "$C"/libtinfo6/usr/lib/*/libtinfo.so.6* "$R/lib/"
else
	cp "$BB" "$R/bin/busybox"
	ln -s ../../bin/busybox "$R/usr/bin/bash"
fi
ln -s busybox "$R/bin/sh"
# the cross sysroot's shared libraries (not the sanitizers' runtimes)
for f in "$SYSROOT"/lib/*.so*; do
	case ${f##*/} in lib[ahlt]san.* | libhwasan.* | libubsan.* | *.so) continue ;; esac
	cp -a "$f" "$R/lib/"
done
cp -a "$B/dynftrace" "$B"/lib*.so* "$R$B/"
cp "$B/tests/t-fork" "$B/tests/t-blocked-signals" "$R$B/tests/"
cp -r "$TOP/tests/ctl" "$R$TOP/tests/"
cp "$TOP/tests/cross/system/guest.sh" "$R/guest.sh"
printf 'B=%q\nTOP=%q\nG=/g\nSYSTEM_TESTS=%q\nDFT_TEST_SLOW=%q\n' "$B" "$TOP" \
	"${SYSTEM_TESTS:-all}" "${SYSTEM_SLOW:-200}" >"$R/guest.env"
# /tmp stays the initramfs's own (writable, in memory): a checkout under
# /tmp is in it at its host path, which a tmpfs mounted there would hide.
cat >"$R/init" <<'INIT'
#!/bin/sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm /dev/pts
mount -t tmpfs shm /dev/shm
PATH=/usr/bin:/bin:/sbin
export PATH HOME=/tmp
echo "DFT-GUEST-BEGIN $(uname -rm)"
/usr/bin/bash /guest.sh
echo "DFT-GUEST-END"
poweroff -f
INIT
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) >"$T/ir.cpio.gz" ||
	{ echo "not ok 1 - pack the initramfs"; exit 1; }

# boot; the console is the guest's output. aarch64's pauth-impdef:
# qemu's own pointer authentication hash instead of QARMA, which TCG
# computes slowly. riscv64: qemu's bundled OpenSBI as the firmware, and
# one TCG thread for both harts: QEMU 7.2 reads a 32-bit riscv instruction
# as two 16-bit halves, so with a thread per hart a site translated while
# another hart writes it can run half the old instruction and half the new
# (docs/ARCHITECTURE.md), which hardware with Ziccif never does.
if [ "$ARCH" = aarch64 ]; then
	machine=(-M virt -cpu max,pauth-impdef=on)
	console=ttyAMA0
else
	machine=(-M virt -bios default -accel tcg,thread=single)
	console=ttyS0
fi
timeout -k 10 "${SYSTEM_TIMEOUT:-600}" $QEMU "${machine[@]}" -smp 2 -m 1024 \
	-nographic -no-reboot -kernel "$K" -initrd "$T/ir.cpio.gz" \
	-append "console=$console ${SYSTEM_KARGS:-quiet} panic=-1" </dev/null >"$T/console" 2>&1
qrc=$?
tr -d '\r' <"$T/console" >"$T/con"
began=0
ended=0
while IFS= read -r line; do
	case $line in
	DFT-GUEST-BEGIN*) began=1; echo "# guest: ${line#DFT-GUEST-BEGIN }" ;;
	DFT-GUEST-END*) ended=1 ;;
	"ok - "*) [ $began = 1 ] && [ $ended = 0 ] && { n=$((n + 1)); echo "ok $n ${line#ok }"; } ;;
	"not ok - "*)
		[ $began = 1 ] && [ $ended = 0 ] && { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n ${line#not ok }"; } ;;
	"#"*) [ $began = 1 ] && [ $ended = 0 ] && echo "$line" ;;
	esac
done <"$T/con"
[ -n "${SYSTEM_CONSOLE:-}" ] && cp "$T/con" "$SYSTEM_CONSOLE"
if [ $ended = 1 ] && [ $n -eq 0 ]; then
	n=1
	fails=1
	echo "not ok 1 - the guest printed no result: its console's last lines follow"
	tail -20 "$T/con" | sed 's/^/#   /'
elif [ $ended = 0 ]; then
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - the guest did not finish (qemu status $qrc$([ $qrc -eq 124 ] && echo ', timed out')): the console's last lines follow"
	tail -20 "$T/con" | sed 's/^/#   /'
fi
echo "1..$n"
[ "$fails" -eq 0 ]
