#!/usr/bin/env bash
# description: __m256/__m512 arguments and results survive the full trampolines and the graph tracer (ymm/zmm upper halves kept)
# config: asan
#
# tests/vec/vec_funcs.c (entry sites with a CALL_OPS literal, -mavx2, and
# -mavx512f where the CPU has it) and tests/vec/vec.c: an ops whose callback
# calls glibc's string functions (default settings), or runs vzeroupper
# (the runtime keeping every upper part: the default on AVX2 CPUs,
# DYNFTRACE_VEC=avx512 on AVX-512 ones), on the list, per-ops and CALL_OPS
# routes must leave every vector argument and result intact; the control,
# DYNFTRACE_VEC=sse with vzeroupper, must show the damage, or the test
# proves nothing. Then the program recorded by the graph tracer (shortcut and
# per-ops route) computes the same. Skipped without AVX2. Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
V=$TOP/tests/vec

if ! grep -qw avx2 /proc/cpuinfo; then
	skip "no AVX2 on this CPU"
	tap_end
	exit
fi
VF="-mavx2 -mfma"
grep -qw avx512f /proc/cpuinfo && VF="$VF -mavx512f"
CALLOPS=$("$B/dynftrace" cflags --call-ops)
# shellcheck disable=SC2086
if ! { $CC $CFLAGS_T $SANFLAGS $VF $CALLOPS -c "$V/vec_funcs.c" -o "$T/vf.o" &&
	cc_prog "$T/vec" $VF "$V/vec.c" "$T/vf.o"; } 2>"$T/build.log"; then
	notok "build tests/vec"
	diag_file "$T/build.log"
	tap_end
	exit
fi

# vecrun NAME ENV MODE: the TAP checks of `vec MODE` under ENV, as one line
vecrun() {
	local name=$1 env=$2 mode=$3
	env $env "$T/vec" $mode >"$T/out" 2>"$T/err"
	local rc=$? p f
	p=$(grep -c '^ok ' "$T/out")
	f=$(grep -c '^not ok ' "$T/out")
	if [ $rc -eq 0 ] && [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
		ok "$name ($VF; $p checks)"
	else
		notok "$name: status $rc, $f of $((p + f)) checks failed"
		grep -Ev '^ok ' "$T/out" | head -20 | sed -e 's/^/# /'
		diag_file "$T/err"
	fi
}

# The runtime keeps ymm uppers by default on AVX2 CPUs, zmm too only when
# asked on AVX-512 ones (lib/arch/x86_64/arch.c): a callback running
# vzeroupper needs that.
KEEP=
grep -qw avx512f /proc/cpuinfo && KEEP=DYNFTRACE_VEC=avx512
vecrun "callbacks calling glibc string functions leave vector arguments and results intact on the list, per-ops and CALL_OPS routes (default)" "" glibc
vecrun "a callback running vzeroupper: intact on the three routes${KEEP:+ ($KEEP)}" "$KEEP" api

# the control: without the upper halves kept, the callback's vzeroupper shows
DYNFTRACE_VEC=sse "$T/vec" api >"$T/out" 2>"$T/err"
f=$(grep -c '^not ok ' "$T/out")
if [ "$f" -ge 3 ]; then
	ok "control: with DYNFTRACE_VEC=sse the same callback corrupts results on all 3 routes"
else
	notok "control: DYNFTRACE_VEC=sse should corrupt the results ($f routes failed, want 3)"
	diag_file "$T/out"
fi

# under ASan, record preloads the runtime before libasan (see golden.sh)
[ "$SAN" = asan ] && export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
for route in thunk per-ops; do
	env=
	[ $route = per-ops ] && env=DYNFTRACE_GRAPH_SHORTCUT=0
	rm -rf "$T/d"
	if env $env "$B/dynftrace" record -d "$T/d" "$T/vec" run >"$T/out" 2>"$T/err"; then
		ok "recorded by function_graph ($route route): $(cat "$T/out")"
	else
		notok "recorded by function_graph ($route route): $(cat "$T/out")"
		diag_file "$T/err"
	fi
done
tap_end
