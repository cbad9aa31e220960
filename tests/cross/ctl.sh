#!/usr/bin/env bash
# description: under emulation: live control of running processes (the control tests tests/ctl/*.tc that run there)
#
# tests/sh/ctl.sh for a cross-built ARCH: tests/ctl/target.c and the
# traced library built with the cross compiler, the target started under
# the emulator (through an `exec` wrapper, so that its pid is the
# target's), driven by the cross-built command, also under the emulator.
# The helpers peer and silent are host programs (they only speak the
# protocol). Each .tc runs as in ctl.sh. Not run here, with the reason:
CROSS_SKIP="dlopen fork-exec events-record pipe-record record first-read-record concurrent"
# dlopen, fork-exec: a fork() of the threaded target aborts qemu-user 7.2,
# and exec of a guest binary needs binfmt_misc; *-record, record: they
# start the target with `dynftrace record`, which execs it (the same);
# concurrent: eight emulated clients and streaming readers at once do not
# finish within its limit under emulation on 2 cores. On aarch64,
# tests/cross/system.sh runs all of them but concurrent on a real kernel.
# Env: TOP B ARCH RUN_CMD, CC_CROSS (default ARCH-linux-gnu-gcc).
set -u
read -r -a RUN <<<"$RUN_CMD"
CC=${CC_CROSS:-$ARCH-linux-gnu-gcc}
C=$TOP/tests/ctl
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
F="-std=gnu11 -O2 -g -D_GNU_SOURCE -I$TOP/include"
# the site flags the cross-built command prints for its architecture
TF=$("${RUN[@]}" "$B/dynftrace" cflags) || TF=unknown-site-flags
if ! $CC $F $TF "$C/target.c" -o "$T/target.bin" -L"$B" \
	-Wl,--no-as-needed -ldynftrace -Wl,--as-needed -Wl,-rpath,"$B" -lpthread -ldl \
	2>"$T/build.log" ||
	! $CC $F $TF -fPIC -shared "$TOP/tests/progs/dlt-lib.c" \
		-o "$T/libdlt.so" 2>>"$T/build.log" ||
	! gcc $F "$C/peer.c" -o "$T/peer" 2>>"$T/build.log" ||
	! gcc $F "$C/silent.c" -o "$T/silent" 2>>"$T/build.log"; then
	echo "not ok 1 - build the control test programs"
	sed 's/^/# /' "$T/build.log" | head -20
	exit 1
fi
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${RUN[*]}" "$T/target.bin" >"$T/target"
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "${RUN[*]}" "$B/dynftrace" >"$T/dft"
chmod +x "$T/target" "$T/dft"
export DFT=$T/dft TARGET=$T/target DLLIB=$T/libdlt.so PEER=$T/peer SILENT=$T/silent SAN= CTL_CROSS=1
unset DYNFTRACE_CONTROL DYNFTRACE_RECORD
# The tests that switch to other uids, where the uid map holds only root
# (tests/run.sh runs the cross tests in a user namespace when it can).
USERS_SKIP=
[ "$(awk '{ n += $3 } END { print n + 0 }' /proc/self/uid_map)" -ge 65536 ] ||
	USERS_SKIP="security silent"
for tc in "$C"/${CTL_TESTS:-*}.tc; do
	[ -f "$tc" ] || continue
	name=$(basename "$tc" .tc)
	desc=$(sed -n 's/^# description: //p' "$tc" | head -1)
	case " $CROSS_SKIP " in
	*" $name "*)
		skip "$name: not under qemu-user (see CROSS_SKIP)"
		continue
		;;
	esac
	case " $USERS_SKIP " in
	*" $name "*)
		skip "$name: other uids: in the cross runner's user namespace (its private binfmt_misc) only root is mapped"
		continue
		;;
	esac
	W=$T/w$n
	mkdir -m 0700 "$W"
	timeout -k 5 120 env W="$W" XDG_RUNTIME_DIR="$W" WAIT=60 bash -c \
		'. "$1"; . "$2"' _ "$C/functions.sh" "$tc" >"$W/log" 2>&1
	rc=$?
	case $rc in
	0) ok "$name: $desc" ;;
	4) skip "$name: $desc ($(grep -m1 UNSUPPORTED "$W/log" | sed 's/^UNSUPPORTED: //'))" ;;
	*)
		notok "$name: $desc (exit $rc$([ $rc -eq 124 ] && echo ', timed out'))"
		sed 's/^/# /' "$W/log" | head -20
		[ -f "$W/target.err" ] && sed 's/^/# /' "$W/target.err" | head -10
		;;
	esac
done
echo "1..$n"
[ "$fails" -eq 0 ]
