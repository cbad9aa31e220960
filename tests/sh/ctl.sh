#!/usr/bin/env bash
# description: live control of running processes: the control tests tests/ctl/*.tc
# config: asan tsan
#
# Builds tests/ctl/target.c (traced, linked with the runtime), the traced
# library tests/progs/dlt-lib.c, the raw client tests/ctl/peer.c and the
# never-answering listener tests/ctl/silent.c, then
# runs every tests/ctl/*.tc as in the kernel's ftracetest: each in its own
# bash with tests/ctl/functions.sh, its own scratch directory (also its
# XDG_RUNTIME_DIR) and a 60 s limit. Exit 0 passes, 4 is a skip
# (unsupported), anything else fails and shows the test's log.
# Env: TOP B CC SAN; CTL_TESTS=glob selects tests (default *).
. "$(dirname "$0")/../gen/common.sh"
C=$TOP/tests/ctl
if ! cc_prog "$T/target" $TRACE_FLAGS "$C/target.c" 2>"$T/build.log" ||
	! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS -fPIC -shared "$TOP/tests/progs/dlt-lib.c" \
		-o "$T/libdlt.so" 2>>"$T/build.log" ||
	! $CC $CFLAGS_T "$C/peer.c" -o "$T/peer" 2>>"$T/build.log" ||
	! $CC $CFLAGS_T "$C/silent.c" -o "$T/silent" 2>>"$T/build.log"; then
	echo "not ok 1 - build the control test programs"
	diag_file "$T/build.log"
	exit 1
fi
export DFT=$B/dynftrace TARGET=$T/target DLLIB=$T/libdlt.so PEER=$T/peer SILENT=$T/silent SAN
# The runtime's own messages would go to the target's stderr file anyway.
unset DYNFTRACE_CONTROL DYNFTRACE_RECORD
n=0
for tc in "$C"/${CTL_TESTS:-*}.tc; do
	[ -f "$tc" ] || continue
	n=$((n + 1))
	name=$(basename "$tc" .tc)
	desc=$(sed -n 's/^# description: //p' "$tc" | head -1)
	W=$T/w$n
	mkdir -m 0700 "$W"
	timeout -k 5 "${CTL_TC_TIMEOUT:-240}" env W="$W" XDG_RUNTIME_DIR="$W" bash -c \
		'. "$1"; . "$2"' _ "$C/functions.sh" "$tc" >"$W/log" 2>&1
	rc=$?
	case $rc in
	0) ok "$name: $desc" ;;
	4) skip "$name: $desc ($(grep -m1 UNSUPPORTED "$W/log" | sed 's/^UNSUPPORTED: //'))" ;;
	*)
		notok "$name: $desc (exit $rc$([ $rc -eq 124 ] && echo ', timed out'))"
		diag_file "$W/log" 30
		[ -f "$W/target.err" ] && diag_file "$W/target.err" 10
		;;
	esac
done
[ $n -gt 0 ] || notok "no control tests found in $C"
tap_end
