#!/usr/bin/env bash
# description: soak: a loopback TCP server answers right while its tracer and filters change 1,000+ times live
# config: asan
#
# tests/soak/server.c (worker threads, traced, linked with the runtime,
# DYNFTRACE_CONTROL=1) is driven by tests/soak/client.c (4 connections,
# 127.0.0.1 only, every answer checked against proto.h's reference, bounded
# by time). Meanwhile this script switches current_tracer among nop,
# function, function_graph and profile and changes set_ftrace_filter
# SOAK_ROUNDS x 100 times each (default 12: 1,200 tracer switches and 1,200
# filter changes), through `dynftrace ctl` and through batches of requests
# on one connection (tests/ctl/peer.c). Between batches it checks that the
# trace holds the expected functions in each tracer. Expected: every
# control request answered OK, zero failed or wrong responses, the server
# still serving and exiting cleanly (its socket removed).
# In the default configuration it also measures the throughput of the
# untraced server (no runtime) against control on + tracing off (and, for
# scale, function_graph on every function into the in-memory buffers),
# alternating, SOAK_TPUT_ROUNDS (3) runs of SOAK_TPUT_SECONDS (2) each, and
# prints the medians as TAP comments (docs/PERFORMANCE.md; not an
# assertion). Env: TOP B CC SAN; SOAK_ROUNDS, SOAK_TPUT_ROUNDS,
# SOAK_TPUT_SECONDS.
. "$(dirname "$0")/../gen/common.sh"
S=$TOP/tests/soak
DFT=$B/dynftrace
ROUNDS=${SOAK_ROUNDS:-12}
if ! cc_prog "$T/server" $TRACE_FLAGS -I"$S" "$S/server.c" 2>"$T/build.log" ||
	! $CC $CFLAGS_T $TRACE_FLAGS -I"$S" "$S/server.c" -o "$T/server-plain" -lpthread 2>>"$T/build.log" ||
	! $CC $CFLAGS_T -I"$S" "$S/client.c" -o "$T/client" -lpthread 2>>"$T/build.log" ||
	! $CC $CFLAGS_T "$TOP/tests/ctl/peer.c" -o "$T/peer" 2>>"$T/build.log"; then
	echo "not ok 1 - build the soak programs"
	diag_file "$T/build.log"
	exit 1
fi
mkdir -m 0700 "$T/run"
export XDG_RUNTIME_DIR=$T/run
unset DYNFTRACE_RECORD DYNFTRACE_CONTROL

# wait_until CMD...: retry until CMD succeeds, at most 30 s (the condition
# decides, not the delay).
wait_until() {
	local end=$((SECONDS + 30))
	while ! "$@" >/dev/null 2>&1; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.05
	done
}

SPID= PORT=
# start_server BINARY [ENV...]
start_server() {
	local bin=$1
	shift
	rm -f "$T/srv.out"
	env "$@" "$bin" -w 4 >"$T/srv.out" 2>"$T/srv.err" &
	SPID=$!
	wait_until grep -q '^ready' "$T/srv.out" || { notok "the server did not start"; diag_file "$T/srv.err"; exit 1; }
	PORT=$(sed -n 's/^port //p' "$T/srv.out")
}
stop_server() {
	kill -TERM "$SPID" 2>/dev/null
	wait "$SPID"
	local rc=$?
	SPID=
	return $rc
}
trap '[ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$T"' EXIT

# ---- throughput: untraced vs control on + tracing off -------------------
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
TR=${SOAK_TPUT_ROUNDS:-3}
TS=${SOAK_TPUT_SECONDS:-2}
if [ -z "$SAN" ] && [ "$TR" -gt 0 ]; then
	bad=0
	for kind in plain ctl graph; do : >"$T/$kind.rps"; done
	for ((r = 0; r < TR; r++)); do
		for kind in plain ctl graph; do
			if [ $kind = plain ]; then
				start_server "$T/server-plain"
			else
				start_server "$T/server" DYNFTRACE_CONTROL=1
			fi
			[ $kind = graph ] && { "$DFT" ctl "$SPID" current_tracer function_graph >/dev/null || bad=1; }
			out=$("$T/client" -p "$PORT" -c 4 -t "$TS" -b 8 2>&1)
			[ $? -eq 0 ] || { bad=1; echo "# $kind: $out"; }
			echo "$out" | sed -n 's/.* rps //p' >>"$T/$kind.rps"
			stop_server || bad=1
		done
	done
	p=$(median <"$T/plain.rps")
	c=$(median <"$T/ctl.rps")
	g=$(median <"$T/graph.rps")
	check $bad "throughput runs: no failed or wrong answers, clean exits"
	echo "# throughput (requests/s, median of $TR x $TS s, 4 connections, batches of 8):"
	echo "#   untraced (no runtime):          $p   ($(tr '\n' ' ' <"$T/plain.rps"))"
	echo "#   control on, tracing off (nop):  $c   ($(tr '\n' ' ' <"$T/ctl.rps"))"
	echo "#   control on, function_graph all: $g   ($(tr '\n' ' ' <"$T/graph.rps"))"
	echo "#   ratio control-on/untraced: $(awk -v a="$c" -v b="$p" 'BEGIN {printf "%.3f", a / b}')"
	echo "#   ratio function_graph/untraced: $(awk -v a="$g" -v b="$p" 'BEGIN {printf "%.3f", a / b}')"
fi

# ---- soak ----------------------------------------------------------------
if [ "$ROUNDS" -eq 0 ]; then # measuring only
	tap_end
	exit
fi
start_server "$T/server" DYNFTRACE_CONTROL=1
SOCK=$XDG_RUNTIME_DIR/dynftrace/$SPID.sock
[ -S "$SOCK" ] || { notok "no control socket $SOCK"; exit 1; }
"$T/client" -p "$PORT" -c 4 -t 55 -b 4 >"$T/client.out" 2>"$T/client.err" &
CPID=$!

TRACERS=(function function_graph profile nop)
FILTERS=('handle_request parse_request lookup_key' '' 'hash_round mix' 'format_* hash_*' 'lookup_key')
ctl() { "$DFT" ctl "$SPID" "$@"; }
has() { ctl "$1" 2>/dev/null | grep -Eq -- "$2"; }
errors=0
switches=0
fchanges=0

# diag: what the server shows, when a check failed
diag() {
	echo "# round $round: $1 (after $((SECONDS - rt0)) s); tracer $(ctl current_tracer 2>&1)," \
		"tracing_on $(ctl tracing_on 2>&1), filter: $(ctl set_ftrace_filter 2>&1 | tr '\n' ' ')"
	ctl enabled_functions 2>&1 | head -8 | sed 's/^/#   enabled: /'
	ctl trace 2>&1 | head -12 | sed 's/^/#   trace: /'
}

# req FILE VALUE [APPEND]: one request of a batch
req() { printf '%s %s %d\n%s' "${3:-WRITE}" "$1" "${#2}" "$2"; }

for ((round = 0; round < ROUNDS; round++)); do
	rt0=$SECONDS
	# 90 tracer switches + 90 filter changes on one connection ...
	{
		for ((i = 0; i < 90; i++)); do
			req current_tracer "${TRACERS[(round + i) % 4]}"
			if ((i % 7 == 3)); then
				req set_ftrace_filter '!mix' APPEND
			else
				req set_ftrace_filter "${FILTERS[(round * 3 + i) % 5]}"
			fi
		done
	} | "$T/peer" "$SOCK" >"$T/batch.out" 2>&1
	nok=$(grep -c '^OK$' "$T/batch.out")
	if [ "$nok" -ne 180 ] || grep -q '^ERR' "$T/batch.out"; then
		errors=$((errors + 1))
		echo "# round $round: $nok of 180 requests answered OK: $(grep -m1 '^ERR' "$T/batch.out")"
	fi
	switches=$((switches + 90))
	fchanges=$((fchanges + 90))
	# ... and 10 of each through the command line
	for ((i = 0; i < 10; i++)); do
		ctl current_tracer "${TRACERS[i % 4]}" >/dev/null || errors=$((errors + 1))
		ctl set_ftrace_filter "${FILTERS[i % 5]}" >/dev/null || errors=$((errors + 1))
	done
	switches=$((switches + 10))
	fchanges=$((fchanges + 10))
	# the traces hold what each tracer must show (one tracer per round)
	case $((round % 3)) in
	0)
		ctl set_ftrace_filter '' >/dev/null && ctl current_tracer function_graph >/dev/null || errors=$((errors + 1))
		wait_until has trace '\|  handle_request\(\) \{$' &&
			has trace '\|      hash_round\(\);$' || { errors=$((errors + 1)); diag "function_graph lacks handle_request/hash_round"; }
		;;
	1)
		ctl set_ftrace_filter 'parse_request mix' >/dev/null && ctl current_tracer function >/dev/null || errors=$((errors + 1))
		wait_until has trace ' parse_request <-handle_request$' &&
			has trace ' mix <-lookup_key$' || { errors=$((errors + 1)); diag "function lacks parse_request/mix"; }
		ctl trace | grep -v '^#' | grep -Ev ' (parse_request|mix) <-|LOST' | grep -q . &&
			{ errors=$((errors + 1)); diag "function shows unfiltered functions"; }
		;;
	2)
		ctl set_ftrace_filter '' >/dev/null && ctl current_tracer profile >/dev/null || errors=$((errors + 1))
		wait_until has trace_stat/function '^  lookup_key +[0-9]+ ' || { errors=$((errors + 1)); diag "profile lacks lookup_key"; }
		;;
	esac
	echo "# round $round: $((SECONDS - rt0)) s"
	kill -0 $CPID 2>/dev/null || break
done
check $((errors != 0)) "$switches tracer switches and $fchanges filter changes answered OK, traces as expected"
[ $switches -ge 1000 ] || notok "only $switches tracer switches before the load generator ended"
ctl current_tracer nop >/dev/null
kill -TERM $CPID 2>/dev/null
wait $CPID
crc=$?
cres=$(cat "$T/client.out")
echo "# client: $cres"
[ -s "$T/client.err" ] && diag_file "$T/client.err" 5
n=$(echo "$cres" | sed -n 's/^requests \([0-9]*\) .*/\1/p')
check $([ $crc -eq 0 ] && [ "${n:-0}" -gt 0 ] && echo 0 || echo 1) \
	"the load generator: ${n:-0} answers, zero failed or wrong"
[ "$(ctl current_tracer)" = nop ]
check $? "the server still serves control requests"
stop_server
rc=$?
check $([ $rc -eq 0 ] && grep -q '^stopped$' "$T/srv.out" && [ ! -e "$SOCK" ] && echo 0 || echo 1) \
	"the server exits cleanly (status $rc) and removes its socket"
grep -Eq 'Sanitizer|runtime error' "$T/srv.err" && { notok "sanitizer report"; diag_file "$T/srv.err" 30; }
tap_end
