#!/usr/bin/env bash
# description: dlopen/call/dlclose in 3 threads while filters, notrace, graph filters and tracers change live
# config: asan tsan
#
# tests/progs/dlchurn.c (linked with the runtime, control on) loads and
# unloads tests/progs/dlchurn-lib.c in 3 threads, checking every result,
# while a 4th thread changes its own ops (register, filter, notrace,
# unregister) through the API. This script meanwhile writes the control
# files: current_tracer, set_ftrace_filter, set_ftrace_notrace,
# set_graph_function and set_graph_notrace with plug_*, plug_leaf, "",
# plug_entry and * in turn. Nothing may stop tracing: neither a reference
# count going wrong when an object's functions leave a filter, nor the
# records of an unloaded object applied to a new copy at its address.
# Env: TOP B CC SAN; DLCHURN_SECONDS (default 20).
. "$(dirname "$0")/../gen/common.sh"
P=$TOP/tests/progs
SECS=${DLCHURN_SECONDS:-20}

if ! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS -fPIC -shared "$P/dlchurn-lib.c" -o "$T/libplug.so" \
	2>"$T/build.log" ||
	! cc_prog "$T/dlchurn" $TRACE_FLAGS "$P/dlchurn.c" 2>>"$T/build.log"; then
	echo "not ok 1 - build the dlchurn programs"
	diag_file "$T/build.log"
	exit 1
fi

D=$B/dynftrace
# phase NAME SECONDS [api]: one run of the program while the control files
# change; with api its own thread changes ops too. Without it, the control
# path alone (the API thread could stop tracing first and hide it).
phase() {
	local what=$1 secs=$2 api=${3:-}
	# It runs SECONDS, then until its standard input ends: this script
	# closes it once it has made at least 100 writes.
	rm -f "$T/go"
	mkfifo "$T/go"
	DLCHURN_UNTIL_EOF=1 DYNFTRACE_CONTROL=1 "$T/dlchurn" "$T/libplug.so" "$secs" $api \
		<"$T/go" >"$T/out" 2>"$T/err" &
	pid=$!
	exec 7>"$T/go"
	for _ in $(seq 200); do
		grep -q '^# ready' "$T/out" && $D ctl $pid current_tracer >/dev/null 2>&1 && break
		sleep 0.1
	done

	# Control writes until the program ends. A glob that matches nothing (the
	# library is unloaded at that moment) is refused; anything else is a failure.
	# Still in its run (after "# stopping" the endpoint may close at exit).
	running() { ! grep -q '^# stopping' "$T/out"; }
	tracers=(function_graph function profile function_graph nop)
	writes=0 refused=0 bad=""
	i=0
	while kill -0 $pid 2>/dev/null && running && [ -z "$bad" ]; do
		if [ $((i % 5)) -eq 0 ]; then
			out=$($D ctl $pid current_tracer ${tracers[$((i / 5 % 5))]} 2>&1) ||
				{ running && bad="current_tracer: $out"; }
		fi
		for g in 'plug_*' plug_leaf '' plug_entry '*'; do
			for f in set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace; do
				out=$($D ctl $pid $f "$g" 2>&1)
				rc=$?
				writes=$((writes + 1))
				if [ $rc -ne 0 ]; then
					case "$out" in
					*"no function matches"*) refused=$((refused + 1)) ;;
					*) running && bad="$f '$g': $out" ;;
					esac
				fi
				[ -n "$bad" ] && break 2
			done
		done
		i=$((i + 1))
		[ $writes -ge 100 ] && exec 7>&-
	done
	exec 7>&-
	wait $pid
	rc=$?
	if [ -z "$bad" ] && [ $writes -ge 100 ]; then
		ok "$what: $writes control writes ($refused refused: the library was unloaded)"
	else
		notok "$what: control writes: ${bad:-only $writes}"
	fi
	grep -E '^(ok|not ok) ' "$T/out" | sed -e 's/^\(not \)\?ok [0-9]* - /\1ok - dlchurn: /' >"$T/tap"
	while read -r line; do
		case "$line" in
		"ok - "*) ok "$what: ${line#ok - }" ;;
		*) notok "$what: ${line#not ok - }" ;;
		esac
	done <"$T/tap"
	check $rc "$what: dlchurn exited with status $rc"
	[ $rc -ne 0 ] && diag_file "$T/err"
}
phase "control and API" $((SECS / 2)) api
phase "control only" $((SECS - SECS / 2))
tap_end
