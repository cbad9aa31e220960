#!/usr/bin/env bash
# description: function_graph's shortcut (general registers only) and its slow path keep every argument and result register
# config: asan
#
# tests/graph/fpargs.c passes doubles, floats, long doubles (x87), variadic
# doubles (%al) and a struct returned in xmm0:xmm1. Its output must be the
# same untraced and recorded: on the shortcut (the default), on its slow
# path (a time filter, graph roots), and on the per-ops route
# (DYNFTRACE_GRAPH_SHORTCUT=0). The sites' routes are checked through the
# public introspection. Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
# LD_PRELOAD puts libdynftrace.so before libasan (see golden.sh).
[ "$SAN" = asan ] && export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"

for opt in -O0 -O2; do
	cc_prog "$T/fp$opt" "$TOP/tests/graph/fpargs.c" $TRACE_FLAGS $opt 2>"$T/build.log" || {
		notok "build fpargs $opt"
		diag_file "$T/build.log"
		continue
	}
	want=$("$T/fp$opt" 3000)
	# name ENV... -- RECORD-OPTS...: record, compare, check routes and replay
	run() {
		local name=$1 route=$2
		shift 2
		local envs=() opts=()
		while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
		shift
		opts=("$@")
		rm -rf "$T/d"
		local got
		got=$(env ROUTES=1 "${envs[@]}" "$B/dynftrace" record -d "$T/d" "${opts[@]}" -- "$T/fp$opt" 3000 2>"$T/err")
		local rc=$?
		if [ $rc -ne 0 ] || [ "$got" != "$want" ]; then
			notok "$opt $name: output as untraced (status $rc): '$got' vs '$want'"
			diag_file "$T/err"
			return
		fi
		ok "$opt $name: output as untraced"
		local bad
		bad=$(grep '^route ' "$T/err" | grep -v " $route\$")
		local n
		n=$(grep -c "^route .* $route\$" "$T/err")
		check $([ -z "$bad" ] && [ "$n" -eq 6 ]; echo $?) \
			"$opt $name: the six functions' sites are on the $route route${bad:+ ($bad)}"
		"$B/dynftrace" replay -d "$T/d" >"$T/replay" 2>&1
		local calls
		calls=$(grep -c 'fmix();' "$T/replay")
		check $([ "$calls" -eq 3000 ] || [ "$name" = "roots" ]; echo $?) \
			"$opt $name: replay shows every fmix call ($calls)"
	}
	run "shortcut" graph --
	run "slow path (time filter)" graph -- -t 1ns
	run "roots" graph -- -F main
	run "per-ops route" tramp DYNFTRACE_GRAPH_SHORTCUT=0 --
done
tap_end
