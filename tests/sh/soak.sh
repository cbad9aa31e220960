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
# assertion). A watchdog writes every thread's backtrace (gdb) and the
# state of the server, its sockets and the waiting clients into the log
# when one step of the script makes no progress for SOAK_STALL_SECONDS (20):
# a diagnostic, not a verdict. Env: TOP B CC SAN; SOAK_ROUNDS,
# SOAK_TPUT_ROUNDS, SOAK_TPUT_SECONDS, SOAK_STALL_SECONDS,
# SOAK_LOAD_SECONDS (how long the load generator may run: 600, a bound: it
# is stopped when the rounds end, however slow the machine; the rounds stop
# when it ends), SOAK_STALL_GDB (0: no backtraces in the stall dumps).
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
# What this test writes while it runs (the control socket, the programs'
# output, the watchdog's files) lives on tmpfs when there is one: on a disk
# file system, opening a file with O_TRUNC (or dropping the last link to
# one) waits until the disk has written back the pages it drops, which took
# 70 s on a machine with heavy I/O (see the batch in the rounds below).
F=$(mktemp -d /dev/shm/dynftrace-soak.XXXXXX 2>/dev/null) || F=$T
mkdir -m 0700 "$F/run"
export XDG_RUNTIME_DIR=$F/run
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
	rm -f "$F/srv.out"
	env "$@" "$bin" -w 4 >"$F/srv.out" 2>"$F/srv.err" &
	SPID=$!
	wait_until grep -q '^ready' "$F/srv.out" || { notok "the server did not start"; diag_file "$F/srv.err"; exit 1; }
	PORT=$(sed -n 's/^port //p' "$F/srv.out")
}
stop_server() {
	kill -TERM "$SPID" 2>/dev/null
	wait "$SPID"
	local rc=$?
	SPID=
	return $rc
}
WPID=
# stop_watchdog: the watchdog and what it runs (a gdb attached to the server
# detaches on SIGTERM, which timeout passes on)
stop_watchdog() {
	[ -n "$WPID" ] || return 0
	kill -TERM $(pgrep -P "$WPID") "$WPID" 2>/dev/null
	wait "$WPID" 2>/dev/null
	WPID=
}
trap 'stop_watchdog; [ -n "$SPID" ] && kill -9 $SPID 2>/dev/null; rm -rf "$T" "$F"' EXIT

# ---- throughput: untraced vs control on + tracing off -------------------
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
TR=${SOAK_TPUT_ROUNDS:-3}
TS=${SOAK_TPUT_SECONDS:-2}
if [ -z "$SAN" ] && [ "$TR" -gt 0 ]; then
	bad=0
	for kind in plain ctl graph; do : >"$F/$kind.rps"; done
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
			echo "$out" | sed -n 's/.* rps //p' >>"$F/$kind.rps"
			stop_server || bad=1
		done
	done
	p=$(median <"$F/plain.rps")
	c=$(median <"$F/ctl.rps")
	g=$(median <"$F/graph.rps")
	check $bad "throughput runs: no failed or wrong answers, clean exits"
	echo "# throughput (requests/s, median of $TR x $TS s, 4 connections, batches of 8):"
	echo "#   untraced (no runtime):          $p   ($(tr '\n' ' ' <"$F/plain.rps"))"
	echo "#   control on, tracing off (nop):  $c   ($(tr '\n' ' ' <"$F/ctl.rps"))"
	echo "#   control on, function_graph all: $g   ($(tr '\n' ' ' <"$F/graph.rps"))"
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
"$T/client" -p "$PORT" -c 4 -t "${SOAK_LOAD_SECONDS:-600}" -b 4 >"$F/client.out" 2>"$F/client.err" &
CPID=$!

# ---- watchdog: a stalled step explains itself -----------------------------
# Every step of the rounds below says what it does (beat), with the time of
# CLOCK_BOOTTIME (/proc/uptime, read by the shell: no process per beat) and
# of the wall clock. When a step has run for SOAK_STALL_SECONDS, the
# watchdog writes into the log, once per stall: both clocks (a wall clock
# that jumped, or a paused VM, is then told apart from a stall), steal time
# and pressure (CPU, I/O, memory), the state, wait channel, system call,
# scheduler statistics (time run / time waited for a CPU) and kernel stack
# of every server thread and of every process of this script (the clients
# it runs included: a stall may be on this side of the socket, as the one
# in a file truncation was), the control sockets' queues (ss), and gdb
# backtraces of every thread of the server and of the clients. The checks
# and the runner's time limit decide; this explains. Steps of 2 s or more
# are listed at the end.
STALL=${SOAK_STALL_SECONDS:-20}
now_s() { # seconds since boot, whole
	local up _
	read -r up _ </proc/uptime
	echo "${up%.*}"
}
beat() { # builtins only: a beat costs no process and no rename
	local up _ t0 w0 what
	read -r up _ </proc/uptime
	# the step that ends here, when it took 2 s or more (listed at the end)
	if [ -s "$F/beat" ] && read -r t0 w0 what <"$F/beat" && [[ $t0 =~ ^[0-9]+$ ]] &&
		[ $((${up%.*} - t0)) -ge 2 ]; then
		echo "$((${up%.*} - t0)) s: $what" >>"$F/slow.log"
	fi
	echo "${up%.*} $(printf '%(%s)T' -1) $*" >"$F/beat"
}
# backtraces PID: every thread of PID (gdb batch; the runtime's SIGTRAPs pass)
backtraces() {
	[ "${SOAK_STALL_GDB:-1}" = 1 ] || return 0
	command -v gdb >/dev/null || { echo "  (no gdb)"; return; }
	timeout -k 5 120 gdb -batch -nx -iex 'set pagination off' \
		-iex 'handle SIGTRAP nostop noprint pass' -p "$1" -ex 'thread apply all bt' 2>&1 |
		grep -Ev '^(\[New LWP|\[Thread debugging|Using host libthread|SIGTRAP is used|Are you sure|warning:)' |
		sed 's/^/  /'
}
steal() { awk '/^cpu /{print $9}' /proc/stat; }
# sym PID ADDR: the object and function that hold ADDR in PID (its maps,
# the ELF symbols through addr2line; no ptrace)
sym() {
	local a=$((16#${2#0x})) range perm off dev ino path lo
	while read -r range perm off dev ino path; do
		lo=$((16#${range%-*}))
		if ((a >= lo && a < 16#${range#*-})) && [ -n "$path" ]; then
			local o=$((a - lo + 16#$off))
			printf '%s+0x%x %s' "${path##*/}" $o \
				"$(addr2line -f -e "$path" "$(printf '0x%x' $o)" 2>/dev/null | head -1)"
			return
		fi
	done <"/proc/$1/maps"
}
# task_line DIR: state, wait channel, system call, scheduler statistics
# (ns run, ns runnable but waiting for a CPU, slices) and kernel stack
task_line() {
	echo "$(cut -d' ' -f3 "$1/stat" 2>/dev/null) wchan=$(cat "$1/wchan" 2>/dev/null)" \
		"syscall=$(cut -d' ' -f1 "$1/syscall" 2>/dev/null) sched=$(tr ' ' / <"$1/schedstat" 2>/dev/null)" \
		"kstack=$(sed 's/^\[<[0-9a-f]*>\] //; s/+.*//' "$1/stack" 2>/dev/null | head -6 | tr '\n' '<')"
}
# the script's own processes: where it (or a client it runs) waits
script_tree() {
	local p
	for p in $(ps -e -o pid=,ppid= | awk -v top=$$ -v skip="$WDPID" '
		{ parent[$1] = $2 }
		END {
			for (p in parent) {
				for (q = p; q != "" && q != top && q != skip && q > 1; q = parent[q])
					;
				if (q == top) print p
			}
		}'); do
		[ -r "/proc/$p/cmdline" ] || continue
		echo "  $p $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-100) | $(task_line "/proc/$p")"
	done
}
stall_dump() { # T0 WALL0 WHAT: the step, started at boot time T0 and wall time WALL0
	local t p now wall
	now=$(now_s)
	wall=$(printf '%(%s)T' -1)
	echo "STALL: '${*:3}' has run for $((now - $1)) s (wall clock: $((wall - $2)) s);" \
		"steal $(steal) ticks; load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "pressure (some/full avg10): cpu $(awk '{print $2}' /proc/pressure/cpu 2>/dev/null | tr '\n' ' ')" \
		"io $(awk '{print $2}' /proc/pressure/io 2>/dev/null | tr '\n' ' ')" \
		"memory $(awk '{print $2}' /proc/pressure/memory 2>/dev/null | tr '\n' ' ')"
	echo "server $SPID threads (user pc: where a thread in a system call entered it):"
	local ctl_idle=0 pc
	for t in /proc/$SPID/task/*; do
		pc=$(awk '$1 != "running" {print $NF}' "$t/syscall" 2>/dev/null)
		echo "  ${t##*/} $(cat "$t/comm" 2>/dev/null) | $(task_line "$t")" \
			"${pc:+| pc=$(sym "$SPID" "$pc")}"
		if [ "$(cat "$t/comm" 2>/dev/null)" = dynftrace-ctl ] &&
			[ "$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)" = 7 ]; then
			ctl_idle=1
		fi
	done
	echo "the script's processes (clients included):"
	script_tree
	echo "control sockets (ss -x):"
	ss -xpa 2>/dev/null | grep -F -e "$SOCK" -e "pid=$SPID," -e '(("dynftrace",' -e '(("peer",' |
		sed 's/^/  /'
	# gdb stops every thread; a thread that meets the int3 of a patch batch
	# meanwhile can have its SIGTRAP given back by the debugger as one the
	# runtime must not take for its own, and the server dies of it. Batches
	# only run inside a request of the control thread: attach only while it
	# waits in poll().
	if [ $ctl_idle = 1 ]; then
		echo "server backtraces:"
		backtraces "$SPID"
	else
		echo "server backtraces: not taken, the control thread is inside a request" \
			"(a debugger could kill the server in a patch batch); see its kernel stack and pc"
	fi
	for p in /proc/[0-9]*; do # the clients (by command line: the binary may have been rebuilt)
		case "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" in
		"$DFT ctl $SPID "* | "$T/peer "*) ;;
		*) continue ;;
		esac
		echo "client ${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-100)"
		backtraces "${p#/proc/}"
	done
	echo "steal after the dump: $(steal) ticks"
}
watchdog() {
	local t0 w0 what dumped=
	WDPID=$BASHPID
	while sleep 1 && kill -0 "$SPID" 2>/dev/null; do
		read -r t0 w0 what <"$F/beat" || continue
		[[ $t0 =~ ^[0-9]+$ && $w0 =~ ^[0-9]+$ ]] || continue # caught mid-write
		if [ $(($(now_s) - t0)) -lt "$STALL" ] || [ "$dumped" = "$t0 $what" ]; then
			continue
		fi
		dumped="$t0 $what"
		stall_dump "$t0" "$w0" "$what" >"$F/stall.log" 2>&1
		sed 's/^/# /' "$F/stall.log" # one write: the lines stay whole in the log
		cat "$F/stall.log" >>"$F/stalls.log"
	done
}
beat "the load generator starts"
watchdog &
WPID=$!

TRACERS=(function function_graph profile nop)
FILTERS=('handle_request parse_request lookup_key' '' 'hash_round mix' 'format_* hash_*' 'lookup_key')
ctl() {
	beat "round $round: dynftrace ctl $*"
	"$DFT" ctl "$SPID" "$@"
}
has() { ctl "$1" 2>/dev/null | grep -Eq -- "$2"; }
errors=0
switches=0
fchanges=0

# diag: what the server shows, when a check failed
diag() {
	echo "# round $round: $1 (after $(($(now_s) - mt0)) s); tracer $(ctl current_tracer 2>&1)," \
		"tracing_on $(ctl tracing_on 2>&1), filter: $(ctl set_ftrace_filter 2>&1 | tr '\n' ' ')"
	ctl enabled_functions 2>&1 | head -8 | sed 's/^/#   enabled: /'
	ctl trace 2>&1 | head -12 | sed 's/^/#   trace: /'
}

# req FILE VALUE [APPEND]: one request of a batch
req() { printf '%s %s %d\n%s' "${3:-WRITE}" "$1" "${#2}" "$2"; }

for ((round = 0; round < ROUNDS; round++)); do
	mt0=$(now_s)
	# 90 tracer switches + 90 filter changes on one connection (peer.c reads
	# the answers while it sends; 120 s without progress fails the batch) ...
	# The answers come back through a pipe, not a file rewritten each round:
	# opening a file with O_TRUNC waits until the disk has written back the
	# pages it truncates, and on a machine with heavy I/O that took 70 s
	# here. It looked like a stalled control thread: it sat idle in poll()
	# because the shell that was to start peer was still in
	# ext4_setattr -> truncate_pagecache -> folio_wait_writeback.
	beat "round $round: a batch of 180 requests on one connection (peer)"
	batch=$({
		for ((i = 0; i < 90; i++)); do
			req current_tracer "${TRACERS[(round + i) % 4]}"
			if ((i % 7 == 3)); then
				req set_ftrace_filter '!mix' APPEND
			else
				req set_ftrace_filter "${FILTERS[(round * 3 + i) % 5]}"
			fi
		done
	} | "$T/peer" -t 120 "$SOCK" 2>&1)
	nok=$(printf '%s\n' "$batch" | grep -c '^OK$')
	if [ "$nok" -ne 180 ] || printf '%s\n' "$batch" | grep -q '^ERR'; then
		errors=$((errors + 1))
		echo "# round $round: $nok of 180 requests answered OK:" \
			"$(printf '%s\n' "$batch" | grep -m1 -e '^ERR' -e '^peer')"
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
	echo "# round $round: $(($(now_s) - mt0)) s"
	kill -0 $CPID 2>/dev/null || break
done
check $((errors != 0)) "$switches tracer switches and $fchanges filter changes answered OK, traces as expected"
[ $switches -ge 1000 ] || notok "only $switches tracer switches before the load generator ended"
ctl current_tracer nop >/dev/null
kill -TERM $CPID 2>/dev/null
wait $CPID
crc=$?
cres=$(cat "$F/client.out")
echo "# client: $cres"
[ -s "$F/client.err" ] && diag_file "$F/client.err" 5
n=$(echo "$cres" | sed -n 's/^requests \([0-9]*\) .*/\1/p')
check $([ $crc -eq 0 ] && [ "${n:-0}" -gt 0 ] && echo 0 || echo 1) \
	"the load generator: ${n:-0} answers, zero failed or wrong"
[ "$(ctl current_tracer)" = nop ]
check $? "the server still serves control requests"
stop_watchdog
[ -s "$F/stalls.log" ] && echo "# the watchdog saw $(grep -c '^STALL' "$F/stalls.log") stall(s) of ${STALL} s or more: dumps above"
if [ -s "$F/slow.log" ]; then
	echo "# steps of 2 s or more: $(wc -l <"$F/slow.log"), the slowest:"
	sort -rn "$F/slow.log" | head -5 | sed 's/^/#   /'
fi
stop_server
rc=$?
check $([ $rc -eq 0 ] && grep -q '^stopped$' "$F/srv.out" && [ ! -e "$SOCK" ] && echo 0 || echo 1) \
	"the server exits cleanly (status $rc) and removes its socket"
grep -Eq 'Sanitizer|runtime error' "$F/srv.err" && { notok "sanitizer report"; diag_file "$F/srv.err" 30; }
tap_end
