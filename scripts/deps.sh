#!/usr/bin/env bash
# Installs the Debian 12 packages dynftrace needs, only those missing.
#   scripts/deps.sh build   compiler, make, capstone's and libdw's headers
#   scripts/deps.sh test    + clang (libFuzzer), binutils, valgrind, libc6-dbg (the
#                           C library's own function names, for the live caller
#                           names the control tests check), uftrace (the
#                           peer the argument values are compared with), protoc and
#                           chromium (the views' tests: Perfetto trace decoded,
#                           SVG flame graph run in a browser), python3, what
#                           the install and .deb tests use, the aarch64 and
#                           riscv64 cross compilers, qemu-user and qemu-system-arm
#   scripts/deps.sh bench   + uftrace, valgrind
set -u
# libcapstone-dev: the x86 decoder's headers, to build entry relocation
# (lib/arch/x86_64/reloc.c). The runtime loads libcapstone.so.4 (libcapstone4)
# with dlopen only when it relocates an entry; nothing else needs it.
# libdw-dev: DWARF for the command's argument specs (cli/dwarf_args.c,
# `sites --args`); optional: without it the command builds and says so.
want=(gcc make binutils libc6-dev libcapstone-dev libdw-dev)
# The tests of installing (tests/sh/install.sh, deb.sh): man pages rendered
# and checked, pkg-config, a .deb built and checked by lintian.
pkg="man-db groff-base pkgconf dpkg-dev debhelper lintian"
case "${1:-build}" in
# qemu-user, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross: the aarch64
# backend, cross-built and its tests run under qemu-aarch64
# (make check ARCH=aarch64); gcc-riscv64-linux-gnu,
# libc6-dev-riscv64-cross: the same for riscv64 (qemu-riscv64);
# qemu-user-binfmt: the binfmt_misc entries' magic (/usr/share/binfmts) the
# cross shell tests register; g++-aarch64-linux-gnu, g++-riscv64-linux-gnu:
# the golden traces' C++ programs built for them.
# qemu-system-arm, cpio: tests/cross/system.sh boots a Debian arm64 kernel
# under qemu-system-aarch64 for what qemu-user cannot run; it downloads the
# kernel, busybox-static and bash as arm64 packages (apt-get download),
# hence the arm64 foreign architecture and its package lists.
# qemu-system-misc, linux-source-6.1, flex, bison, bc: the same for riscv64
# under qemu-system-riscv64 (with its bundled OpenSBI), on a small kernel
# built from Debian's source (tests/cross/system/rv-kernel.sh) and a
# busybox built from its source package (rv-busybox.sh: apt-get source,
# hence deb-src entries, added below where the sources have none).
test) want+=(clang libclang-rt-14-dev valgrind libc6-dbg uftrace babeltrace2 protobuf-compiler chromium python3 $pkg
	qemu-user qemu-user-binfmt gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	gcc-riscv64-linux-gnu libc6-dev-riscv64-cross g++-aarch64-linux-gnu g++-riscv64-linux-gnu
	qemu-system-arm cpio qemu-system-misc linux-source-6.1 flex bison bc)
	if [ "$(id -u)" -eq 0 ] && command -v dpkg >/dev/null &&
		! dpkg --print-foreign-architectures | grep -qx arm64; then
		echo "deps: adding the arm64 architecture (package lists for tests/cross/system.sh)" >&2
		# a mirror without arm64 lists: give the architecture back, so
		# that the host's own lists still update (system.sh then skips)
		dpkg --add-architecture arm64 &&
			{ apt-get update -qq >/dev/null 2>&1 ||
				{ dpkg --remove-architecture arm64; apt-get update -qq >/dev/null; }; }
	fi
	# Source packages (rv-busybox.sh's apt-get source): Debian's default
	# sources list binaries only; each deb entry gets its deb-src twin.
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null &&
		! grep -Eqs '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
			/etc/apt/sources.list.d/*.sources; then
		echo "deps: adding deb-src entries (source packages for tests/cross/system.sh)" >&2
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -f "$f" ] && sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
		done
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[ -f "$f" ] && sed -i 's/^deb \(.*\)$/deb \1\ndeb-src \1/' "$f"
		done
		apt-get update -qq >/dev/null
	fi ;;
bench) want+=(clang valgrind uftrace) ;;
esac
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
	echo "deps: missing packages: ${missing[*]} (install them as root with apt-get)" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null
