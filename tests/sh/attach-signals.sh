#!/usr/bin/env bash
# description: signals to attach and detach while they hold the target, and a recorder killed: the target goes on unharmed, its recording ends
#
# While the agent holds a process (threads stopped, code and registers
# borrowed), SIGTERM, SIGHUP, Ctrl-C, Ctrl-\ and Ctrl-Z wait until it is
# let go (cli/cmd_attach.c: hold_signals). A SIGTERM 20-30 ms into an
# `attach -P` used to leave perl with half a relocation: it crashed. Perl
# (perl-base is essential) with its Perl_pp_* functions relocated holds
# long enough to be hit. A background job of a script ignores SIGINT, so
# the signals sent are SIGTERM and SIGHUP. Checks: perl alive after every
# signal, during the attach and during the detach; a signal that came
# during an attach that completed says so, and how to detach.
# Env: TOP B CC.
. "$(dirname "$0")/../gen/common.sh"
D=$B/dynftrace
cd "$T" || exit 1
if ! command -v perl >/dev/null; then
	skip "no perl"
	echo "1..$tap_n"
	exit 0
fi
pp=
trap 'kill -9 $pp 2>/dev/null; rm -rf "$T"' EXIT
bad=0
said=0
for s in TERM HUP; do
	for d in 0.015 0.02 0.0225 0.025 0.0275 0.03 0.035; do
		perl -e 'while (1) { $x++; $y = $x * 2 }' &
		pp=$!
		sleep 0.3
		$D attach -P 'Perl_pp_*' $pp >sig.err 2>&1 &
		ap=$!
		sleep $d
		kill -$s $ap 2>/dev/null
		wait $ap
		grep -q 'was attached first: it keeps the runtime' sig.err && said=1
		sleep 0.1
		if ! kill -0 $pp 2>/dev/null; then
			echo "# perl died after SIG$s $d s into the attach"
			bad=1
		elif grep -q libdynftrace "/proc/$pp/maps"; then
			$D detach $pp >sig.err 2>&1 &
			ap=$!
			sleep $d
			kill -$s $ap 2>/dev/null
			wait $ap
			sleep 0.1
			kill -0 $pp 2>/dev/null || {
				echo "# perl died after SIG$s $d s into the detach"
				bad=1
			}
		fi
		kill -9 $pp 2>/dev/null
		wait $pp 2>/dev/null
	done
done
[ $bad = 0 ]
check $? "SIGTERM and SIGHUP during attach -P and detach: the target unharmed"
[ $said = 1 ]
check $? "a signal that comes during an attach that completes says so, and how to detach"

# record -p with nothing to trace (perl has no sites, and -P names an
# object it does not have) ends at once instead of at --duration.
perl -e 'while (1) { $x++ }' &
pp=$!
sleep 0.2
t0=$(date +%s)
$D record -p $pp -P 'Perl_pp_*@libnosuch*' -d none --duration 20s >rec.out 2>&1
rc=$?
t1=$(date +%s)
[ $rc = 1 ] && [ $((t1 - t0)) -lt 10 ] && grep -q "process $pp has no function to trace" rec.out &&
	! grep -q libdynftrace "/proc/$pp/maps"
check $? "record -p with nothing to trace: said, detached at once (status $rc)"
kill -9 $pp 2>/dev/null
wait $pp 2>/dev/null

# record -p killed before it can detach (SIGKILL: nothing of it runs): the
# target's runtime sees its recorder gone within a second or two, turns
# tracing off and ends the recording, so the session stops growing.
cat >busy.c <<'EOF2'
#include <stdio.h>
volatile int sink;
__attribute__((noinline)) void leaf(void) { sink++; }
int main(void)
{
	fprintf(stderr, "ready\n");
	for (;;)
		leaf();
}
EOF2
if $CC -O1 $TRACE_FLAGS busy.c -o busy 2>build.log; then
	./busy 2>busy.err &
	pp=$!
	sleep 0.3
	$D record -p $pp -d ork >rec.out 2>&1 &
	rp=$!
	for _ in $(seq 100); do grep -q 'recording process' rec.out && break; sleep 0.05; done
	sleep 0.5
	kill -9 $rp
	wait $rp 2>/dev/null
	ok=0
	for _ in $(seq 50); do
		grep -q "its recorder (process $rp) is gone: tracing stops and the recording ends" busy.err && ok=1 && break
		sleep 0.1
	done
	sleep 0.3
	a=$(du -sb ork | cut -f1)
	sleep 1
	b=$(du -sb ork | cut -f1)
	on=$($D ctl $pp tracing_on 2>/dev/null)
	[ $ok = 1 ] && [ "$a" = "$b" ] && [ "$on" = 0 ] && kill -0 $pp
	check $? "record -p killed: the target ends the recording and tracing itself (session $a then $b bytes, tracing_on $on)"
	[ $ok = 1 ] || diag_file busy.err
	$D detach $pp >/dev/null 2>&1
	! grep -q libdynftrace "/proc/$pp/maps"
	check $? "then detach takes the runtime out"
	kill -9 $pp 2>/dev/null
	wait $pp 2>/dev/null
	# A target that runs as another user (a daemon's worker as nobody)
	# writes its streams itself: record -p as root gives it the session.
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
		cp busy /tmp/dft-busy.$$ && chmod 755 /tmp/dft-busy.$$
		setpriv --reuid=nobody --regid=nogroup --clear-groups /tmp/dft-busy.$$ 2>/dev/null &
		pp=$!
		sleep 0.3
		# $T is root's, mode 0700: nobody cannot reach a session in it
		$D record -p $pp -d nob --duration 0.5s >rec.out 2>&1
		rc=$?
		[ $rc = 1 ] && grep -q "process $pp runs as uid [0-9]*, which cannot reach .*/nob to write its trace" rec.out
		check $? "record -p of a process running as nobody, into a directory it cannot reach: said, status $rc"
		S=/tmp/dft-nob.$$
		rm -rf $S
		$D record -p $pp -d $S --duration 0.5s >rec.out 2>&1
		$D info -d $S >out 2>&1
		ev=$(awk '/^# events / { gsub(",", "", $4); print $4 }' out)
		[ -n "$ev" ] && [ "$ev" -gt 0 ] && ! grep -q 'no events' rec.out
		check $? "record -p of a process running as nobody: it gets the session and records ($ev events)"
		rm -rf $S
		kill -9 $pp 2>/dev/null
		wait $pp 2>/dev/null
		rm -f /tmp/dft-busy.$$
	else
		skip "record -p of another user's process: needs root, setpriv and nobody"
	fi
else
	notok "build busy.c"
	diag_file build.log
fi
echo "1..$tap_n"
tap_end
