#!/bin/bash
# guest.sh - runs inside the system-emulated aarch64 or riscv64 guest that
# tests/cross/system.sh boots (started by its /init under bash: on riscv64
# busybox's ash with bash's extensions, so this and the control tests keep
# to what both run). Prints TAP
# lines without numbers ("ok - NAME: ..."), which the host numbers; the
# host's end marker is printed by /init after this script returns.
# Env (from /guest.env): B (the cross build, at its host path), TOP (the
# checkout's tests, at their host path), G (the programs built for the run).
# SYSTEM_TESTS: which parts to run (default: all).
. /guest.env
export PATH=/bin:/sbin:/usr/bin
# stress loops shortened further than under qemu-user (emulated cores on
# a loaded host): what is checked here is fork and exec, the loops'
# checks themselves run in full natively and under qemu-user
export DFT_TEST_SLOW
# seconds (busybox's ash, riscv64's guest shell, has no $SECONDS)
if [ -n "${SECONDS:-}" ]; then now() { echo "$SECONDS"; }; else now() { date +%s; }; fi
ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; }
skip() { echo "ok - $* # SKIP"; }
want() { case " ${SYSTEM_TESTS:-all} " in *" all "* | *" $1 "*) return 0 ;; esac; return 1; }

# unit NAME: a unit test, its TAP lines named after it
unit() {
	local n=$1 out rc t0=$(now)
	out=$(timeout 600 "$B/tests/$n" 2>&1)
	rc=$?
	echo "# $n: $(($(now) - t0)) s"
	printf '%s\n' "$out" | sed -n -E \
		-e "s/^(not ok|ok) [0-9]+( -)? ?/\1 - $n: /p" -e 's/^#/# /p'
	if [ $rc -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^not ok'; then
		notok "$n exited with status $rc"
		printf '%s\n' "$out" | tail -5 | sed 's/^/#   /'
	fi
}

# t-fork: fork() of a threaded traced process (qemu-user aborts on it);
# t-blocked-signals: with its re-exec half (fork, then exec of itself)
if want unit; then
	unit t-fork
	unit t-blocked-signals
fi

# the control tests that fork or exec the target (tests/cross/ctl.sh
# skips them under qemu-user), run as tests/sh/ctl.sh runs them
if want ctl; then
	export CTL_CALLS=2000
	export DFT=$B/dynftrace TARGET=$G/target DLLIB=$G/libdlt.so PEER=$G/peer SILENT=$G/silent SAN=
	for name in dlopen fork-exec events-record pipe-record record first-read-record; do
		tc=$TOP/tests/ctl/$name.tc
		W=/tmp/ctl-$name
		mkdir -m 0700 "$W"
		t0=$(now)
		timeout 180 env W="$W" XDG_RUNTIME_DIR="$W" WAIT=60 bash -c \
			'. "$1"; . "$2"' _ "$TOP/tests/ctl/functions.sh" "$tc" >"$W/log" 2>&1
		rc=$?
		echo "# ctl $name: $(($(now) - t0)) s"
		case $rc in
		0) ok "ctl $name" ;;
		4) skip "ctl $name: $(grep -m1 UNSUPPORTED "$W/log")" ;;
		*)
			notok "ctl $name (exit $rc)"
			sed 's/^/#   /' "$W/log" | head -20
			[ -f "$W/target.err" ] && sed 's/^/#   /' "$W/target.err" | head -10
			;;
		esac
	done
fi

# `dynftrace record` of a program that forks a child that execs: the
# session holds the three processes' calls
if want record; then
	out=$(timeout 120 "$B/dynftrace" record -d /tmp/fe -- "$G/forkexec" 2>/tmp/fe.err)
	rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "forkexec 42" ]; then
		ok "record forkexec: exit status 0, output as untraced"
	else
		notok "record forkexec: status $rc, output '$out'"
		sed 's/^/#   /' /tmp/fe.err | head -10
	fi
	timeout 120 "$B/dynftrace" replay -d /tmp/fe >/tmp/fe.txt 2>&1
	rc=$?
	for f in fe_parent fe_child fe_execd; do
		if [ $rc -eq 0 ] && grep -q "$f()" /tmp/fe.txt; then
			ok "record forkexec: $f() in the session"
		else
			notok "record forkexec: $f() not in the session (replay status $rc)"
			sed 's/^/#   /' /tmp/fe.txt | head -20
		fi
	done
fi

# `dynftrace attach` to a running program not linked with the runtime
# (tests/progs/attach-target.c): trace it with function_graph, detach; it
# runs on with exact results (it says BAD otherwise), the runtime unmapped
if want attach; then
	"$G/attach-target" >/tmp/at.out 2>&1 &
	at=$!
	for _ in $(seq 400); do grep -q '^ready' /tmp/at.out && break; sleep 0.05; done
	D=$B/dynftrace
	out=$(timeout 120 "$D" attach $at 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && echo "$out" | grep -q 'not implemented on this architecture'; then
		skip "attach: $out"
	else
		echo "$out" | sed 's/^/#   /'
		if [ $rc -eq 0 ]; then ok "attach: status 0"; else notok "attach: status $rc"; fi
		timeout 60 "$D" ctl $at current_tracer function_graph >/dev/null 2>&1 &&
			timeout 60 "$D" ctl $at tracing_on 1 >/dev/null 2>&1
		sleep 1
		timeout 60 "$D" ctl $at trace >/tmp/at.trace 2>&1
		if grep -qE 'at_mid\(\) \{|at_leaf\(\);' /tmp/at.trace; then
			ok "attach: function_graph traces the attached process"
		else
			notok "attach: no at_mid/at_leaf in the trace"
			head -10 /tmp/at.trace | sed 's/^/#   /'
		fi
		out=$(timeout 120 "$D" detach $at 2>&1)
		rc=$?
		echo "# $out"
		if [ $rc -eq 0 ] && ! grep -q libdynftrace /proc/$at/maps; then
			ok "detach: status 0, no mapping of the runtime left"
		else
			notok "detach: status $rc or the runtime still mapped"
		fi
		sleep 1
		st=$(awk '/^State:/ { print $2 }' /proc/$at/status 2>/dev/null)
		if [ -n "$st" ] && [ "$st" != T ] && [ "$st" != t ] && ! grep -q '^BAD' /tmp/at.out; then
			ok "attach: the program runs on with exact results"
		else
			notok "attach: the program is gone, stopped or said BAD (state '$st')"
			grep '^BAD' /tmp/at.out | head -5 | sed 's/^/#   /'
		fi
	fi
	kill -9 $at 2>/dev/null
fi

# attach and detach with threads inside signal handlers
# (tests/progs/sigframe-target.c): the parker's handler waits with the pc
# saved in its signal frame between the two NOPs of sf_entry's site, which
# the attach must move past them (the agent finds aarch64 frames by their
# FPSIMD record); two threads spin in handlers calling traced functions,
# one takes a timer signal every ms of its CPU time. Cycles of attach, trace (function
# filtered on sf_entry, then every site), wake the parker, detach: the
# parker's call of sf_entry is traced exactly once per cycle, its resumed
# one never (it enters past the site), every result exact.
if want sigframe && [ "$(uname -m)" != aarch64 ]; then
	skip "sigframe: $(uname -m)'s agent does not find signal frames yet (a thread inside a handler is not moved)"
elif want sigframe; then
	D=$B/dynftrace
	"$G/sigframe-target" >/tmp/sf.out 2>&1 &
	sf=$!
	# line PATTERN: wait (up to 60 s) for a line of the target's output
	line() {
		for _ in $(seq 600); do
			grep -qE "$1" /tmp/sf.out && return 0
			sleep 0.1
		done
		return 1
	}
	line '^ready'
	# (no /dev/fd here for read < <(...))
	pfd=$(sed -n 's/^ready [0-9]* \([0-9]*\) [0-9]*$/\1/p' /tmp/sf.out)
	hfd=$(sed -n 's/^ready [0-9]* [0-9]* \([0-9]*\)$/\1/p' /tmp/sf.out)
	fails=0
	cycles=2
	for c in $(seq $cycles); do
		say() { notok "sigframe cycle $c: $*"; fails=$((fails + 1)); }
		out=$(timeout 120 "$D" attach $sf 2>&1)
		rc=$?
		echo "$out" | sed 's/^/#   /'
		if [ $rc -ne 0 ] || ! echo "$out" | grep -q 'moved out of NOP runs'; then
			say "attach status $rc, or no thread moved"
		fi
		if [ $((c % 2)) = 1 ]; then
			timeout 60 "$D" ctl $sf set_ftrace_filter sf_entry >/dev/null 2>&1
		fi
		timeout 60 "$D" ctl $sf current_tracer function >/dev/null 2>&1 &&
			timeout 60 "$D" ctl $sf tracing_on 1 >/dev/null 2>&1 || say "tracing on"
		printf w >"/proc/$sf/fd/$pfd"
		line "^call $c 42 " || say "the parker did not go on (no 'call $c 42')"
		grep -q "^park $c 42\$" /tmp/sf.out || say "the parked call did not return 42"
		n=0
		for _ in $(seq 100); do
			timeout 60 "$D" ctl $sf trace >/tmp/sf.trace 2>&1
			n=$(grep -v '^#' /tmp/sf.trace | grep -c 'sf_entry')
			[ "$n" -ge 1 ] && break
			sleep 0.1
		done
		sleep 0.5
		timeout 60 "$D" ctl $sf trace >/tmp/sf.trace 2>&1
		n=$(grep -v '^#' /tmp/sf.trace | grep -c 'sf_entry')
		[ "$n" = 1 ] || say "sf_entry traced $n times, not once"
		out=$(timeout 120 "$D" detach $sf 2>&1)
		rc=$?
		echo "# $out"
		if [ $rc -ne 0 ] || grep -q libdynftrace /proc/$sf/maps; then
			say "detach status $rc or the runtime still mapped"
		fi
		printf g >"/proc/$sf/fd/$pfd"
		line "^parked $((c + 1))\$" || say "the parker did not park again"
		[ $fails = 0 ] || break
	done
	[ $fails = 0 ] && ok "sigframe: $cycles cycles of attach, trace, wake the parked handler, detach"
	grep -E '^(call|park|BAD)' /tmp/sf.out | head -20 | sed 's/^/#   /'

	# detach with returns hooked by function_graph: sf_hold's in its frame
	# record, the leaf sf_hold_leaf's in x30, the thread waiting in the leaf
	timeout 120 "$D" attach $sf >/dev/null 2>&1 &&
		timeout 60 "$D" ctl $sf current_tracer function_graph >/dev/null 2>&1 &&
		timeout 60 "$D" ctl $sf tracing_on 1 >/dev/null 2>&1
	rc=$?
	printf h >"/proc/$sf/fd/$hfd"
	for _ in $(seq 100); do
		timeout 60 "$D" ctl $sf trace 2>/dev/null | grep -q 'sf_hold_leaf' && break
		sleep 0.1
	done
	timeout 60 "$D" ctl $sf trace >/tmp/sf.trace 2>&1
	out=$(timeout 120 "$D" detach $sf 2>&1)
	drc=$?
	echo "# $out"
	printf x >"/proc/$sf/fd/$hfd"
	if [ $rc = 0 ] && grep -q 'sf_hold_leaf' /tmp/sf.trace && [ $drc = 0 ] &&
		line '^held 1 1$' && ! grep -q libdynftrace /proc/$sf/maps; then
		ok "sigframe: detach puts back the hooked returns of a waiting leaf (x30) and its caller (frame record)"
	else
		notok "sigframe: attach/trace status $rc, detach status $drc, or the holder did not return ('held 1 1')"
		grep -v '^#' /tmp/sf.trace | tail -5 | sed 's/^/#   /'
	fi
	s1=$(sed -n 's/^call 1 42 spins \([0-9]*\) ticks \([0-9]*\)$/\1 \2/p' /tmp/sf.out)
	sleep 1
	printf w >"/proc/$sf/fd/$pfd"
	line "^call $((cycles + 1)) 42 "
	s5=$(sed -n 's/^call '$((cycles + 1))' 42 spins \([0-9]*\) ticks \([0-9]*\)$/\1 \2/p' /tmp/sf.out)
	st=$(awk '/^State:/ { print $2 }' /proc/$sf/status 2>/dev/null)
	if [ -n "$st" ] && [ "$st" != T ] && [ "$st" != t ] && ! grep -q '^BAD' /tmp/sf.out &&
		[ -n "$s1" ] && [ -n "$s5" ] && [ "${s1% *}" -lt "${s5% *}" ] &&
		[ "${s1#* }" -lt "${s5#* }" ]; then
		ok "sigframe: the target runs on, handlers spinning and ticking ($s1 -> $s5), results exact"
	else
		notok "sigframe: the target is gone, stopped, said BAD or its handlers stopped (state '$st', $s1 -> $s5)"
		grep '^BAD' /tmp/sf.out | head -5 | sed 's/^/#   /'
		tail -5 /tmp/sf.out | sed 's/^/#   /'
	fi
	kill -9 $sf 2>/dev/null
fi
