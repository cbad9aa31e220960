#!/usr/bin/env bash
# description: route transitions (list/tramp/call_ops/nop) under load, exact counts in quiet windows
# config: asan tsan
#
# tests/routes/load.c with tests/routes/funcs.c built twice: with the flags of
# `dynftrace cflags --call-ops` (co_*, sites with a CALL_OPS literal) and with
# the plain flags (tr_*), and load_gpr.c (the callback of the GPR_ONLY ops:
# general registers only, no sanitizers). Worker threads call them while the
# main thread registers, unregisters, refilters ops and cycles the route
# masks; see load.c. Run for gcc, and for clang when it is installed (default
# configuration only). Env: TOP B CC SAN; ROUTES_SEED, ROUTES_SECONDS.
. "$(dirname "$0")/../gen/common.sh"
. "$(dirname "$0")/../gen/routes.sh"

# The GPR_ONLY callback's build: general registers only, as the flag's
# contract says. riscv64's gcc has no -mgeneral-regs-only: the callback is
# built for the ISA without F and D (rv64imac), so the compiler cannot use
# an FP register, and for the soft-float ABI that ISA needs. The linker
# refuses to mix that ABI with the program's lp64d unless told
# (--no-warn-mismatch); the two pass integer and pointer arguments and
# results the same way, and the callback takes and returns nothing else.
case "$ARCH" in
riscv64)
	GPR_CFLAGS="-march=rv64imac -mabi=lp64"
	GPR_LDFLAGS="-Wl,--no-warn-mismatch"
	;;
*)
	GPR_CFLAGS="-mgeneral-regs-only"
	GPR_LDFLAGS=""
	;;
esac

# build CC OUT: the load program with compiler CC
build() {
	local cc=$1 out=$2
	# shellcheck disable=SC2086
	build_funcs "$cc" &&
		$cc $CFLAGS_T $GPR_CFLAGS -fno-sanitize=all -c "$R/load_gpr.c" -o "$T/lg.o" &&
		CC=$cc cc_prog "$out" "$R/load.c" "$T/co.o" "$T/tr.o" "$T/lg.o" $GPR_LDFLAGS
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
