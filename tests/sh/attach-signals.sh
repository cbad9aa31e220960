#!/usr/bin/env bash
# description: signals to attach and detach while they hold the target: the target goes on unharmed
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
echo "1..$tap_n"
tap_end
