# Sourced by tests/run.sh for ARCH != x86_64: guest programs made directly
# executable through binfmt_misc, so that the shell tests (tests/sh/*.sh)
# run the cross-built command and programs as they run native ones, and
# `dynftrace record` can exec a guest program.
#
# binfmt_setup ARCH BUILD: sets BINFMT_WHY to the reason the shell tests
# cannot run ("" when they can). First choice: tests/run.sh has re-run
# itself in new user and mount namespaces (BINFMT_PRIVATE=1, `unshare -U -r
# -m`; Linux >= 6.7 gives each user namespace its own binfmt_misc): a
# fresh binfmt_misc is mounted there and "dft-ARCH" registered in it, seen
# by this run alone and gone with it. Else the machine's binfmt_misc,
# which is global: a handler for ARCH's ELF machine already registered
# (any name) is used as it is and never removed; only when there is none is
# "dft-ARCH" registered, and binfmt_cleanup removes that one alone. The
# interpreter registered is tests/cross/qemu-binfmt.c (flags P: the
# program's argv[0] kept; F: the interpreter opened now). Where binfmt_misc
# cannot be mounted or written (a container without the privilege), the
# shell tests are skipped, not failed.
BINFMT_ADDED=""
binfmt_setup() {
	local arch=$1 b=$2 d=/proc/sys/fs/binfmt_misc
	BINFMT_WHY=""
	local conf=/usr/share/binfmts/qemu-$arch
	if [ ! -r "$conf" ] || [ ! -x /usr/bin/qemu-"$arch" ]; then
		BINFMT_WHY="no qemu-$arch or $conf (Debian's qemu-user, qemu-user-binfmt)"
		return 1
	fi
	if [ "${BINFMT_PRIVATE:-}" = 1 ]; then
		mount -t binfmt_misc binfmt_misc "$d" 2>/dev/null
	elif [ ! -e "$d/register" ]; then
		mount -t binfmt_misc binfmt_misc "$d" 2>/dev/null
		if [ ! -e "$d/register" ]; then
			BINFMT_WHY="binfmt_misc is not mounted and cannot be mounted here (needs root, a privileged container)"
			return 1
		fi
	fi
	local magic mask
	magic=$(sed -n 's/^magic //p' "$conf")
	mask=$(sed -n 's/^mask //p' "$conf")
	# the same magic as the kernel lists it: lower-case hex, no \x
	local want=${magic//\\x/}
	local e found=""
	for e in "$d"/*; do
		case ${e##*/} in register | status) continue ;; esac
		grep -qx enabled "$e" 2>/dev/null || continue
		[ "$(sed -n 's/^magic //p' "$e")" = "$want" ] && found=${e##*/} && break
	done
	if [ -z "$found" ]; then
		local interp
		interp=$(realpath -m "$b/qemu-binfmt") # not in tests/: run.sh runs what is there
		mkdir -p "$b/test-logs"
		if ! gcc -std=gnu11 -O2 -static -DQEMU="\"/usr/bin/qemu-$arch\"" \
			-DSYSROOT="\"/usr/$arch-linux-gnu\"" tests/cross/qemu-binfmt.c \
			-o "$interp" 2>"$b/test-logs/build-qemu-binfmt.log"; then
			BINFMT_WHY="the binfmt_misc interpreter does not build (gcc -static: libc6-dev's libc.a)"
			return 1
		fi
		if ! echo ":dft-$arch:M::$magic:$mask:$interp:PF" >"$d/register" 2>/dev/null; then
			BINFMT_WHY="a binfmt_misc handler for $arch cannot be registered here (needs root, a privileged container)"
			return 1
		fi
		BINFMT_ADDED=$d/dft-$arch
	fi
	# the guest's libraries for a handler that does not set -L itself
	export QEMU_LD_PREFIX=/usr/$arch-linux-gnu
	if [ "$("$b/dynftrace" cflags 2>&1)" = "" ] || ! "$b/dynftrace" cflags >/dev/null 2>&1; then
		BINFMT_WHY="a guest program does not run through binfmt_misc (handler ${found:-dft-$arch})"
		return 1
	fi
	return 0
}

binfmt_cleanup() {
	[ -n "$BINFMT_ADDED" ] && [ -e "$BINFMT_ADDED" ] && echo -1 >"$BINFMT_ADDED"
	BINFMT_ADDED=""
}
