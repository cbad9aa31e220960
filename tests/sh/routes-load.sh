#!/usr/bin/env bash
# description: route transitions (list/tramp/call_ops/nop) under load, exact counts in quiet windows
# config: asan tsan
#
# tests/routes/load.c with tests/routes/funcs.c built twice: with the flags of
# `dynftrace cflags --call-ops` (co_*, sites with a CALL_OPS literal) and with
# the plain flags (tr_*), and load_gpr.c (the callback of the GPR_ONLY ops:
# -mgeneral-regs-only, no sanitizers). Worker threads call them while the
# main thread registers, unregisters, refilters ops and cycles the route
# masks; see load.c. Run for gcc, and for clang when it is installed (default
# configuration only). Env: TOP B CC SAN; ROUTES_SEED, ROUTES_SECONDS.
. "$(dirname "$0")/../gen/common.sh"
. "$(dirname "$0")/../gen/routes.sh"

# build CC OUT: the load program with compiler CC
build() {
	local cc=$1 out=$2
	build_funcs "$cc" &&
		$cc $CFLAGS_T -mgeneral-regs-only -fno-sanitize=all -c "$R/load_gpr.c" \
			-o "$T/lg.o" &&
		CC=$cc cc_prog "$out" "$R/load.c" "$T/co.o" "$T/tr.o" "$T/lg.o"
}

secs=${ROUTES_SECONDS:-25}
[ "$compilers" != "$CC" ] && secs=${ROUTES_SECONDS:-20}
for cc in $compilers; do
	if ! build "$cc" "$T/load-$cc" 2>"$T/build.log"; then
		notok "build the load program with $cc"
		diag_file "$T/build.log"
		continue
	fi
	tap_prog --diag "$cc: transitions under load" env ROUTES_SECONDS="$secs" "$T/load-$cc"
done
tap_end
