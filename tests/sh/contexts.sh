#!/usr/bin/env bash
# description: coroutines switching by swapcontext and longjmp on two threads: every switched-away call stays open and ends at its return
# config: asan
#
# tests/progs/coro-stress.c: 2 threads x 8 coroutines x 100 rounds; each
# step() switches away (swapcontext, or longjmp for half of them) inside a
# traced function and returns after being resumed; swapcontext coroutines
# end through uc_link, the others jump back to the scheduler for good.
# Recorded with function_graph and replayed:
#   - every step(), yield_swap() and yield_jump() call ends at its return
#     (1,600 / 800 / 800 closing lines), none is shown unwound;
#   - the only unfinished calls are the 8 coro_main() left for good by a
#     longjmp, which never returned;
#   - dump --chrome: slices nest per thread (switches end and begin them);
#   - dump --perfetto and report read the session;
#   - attached (default configuration): a process running coroutines for
#     ever is recorded for 300 ms: swapcontext switches end at their
#     return (the longjmp coroutines' stacks, never named by a ucontext
#     the runtime saw, are not known: their jumps stay unwinds, see
#     ARCHITECTURE.md), and after the detach (the suspended contexts'
#     return addresses put back) it runs on.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san

# shellcheck disable=SC2086
if ! $CC -O2 -g $TRACE_FLAGS $SANFLAGS "$TOP/tests/progs/coro-stress.c" -o coro -lpthread \
	2>build.log; then
	notok "build the test program"
	diag_file build.log
	exit 1
fi

recorded d ./coro 2 8 100
if [ "$rc" -eq 0 ] && grep -q '^steps 1600$' out; then
	ok "record: the coroutines ran 1,600 steps"
else
	notok "record: exit status $rc, output '$(head -c 200 out)'"
	diag_file err
fi

"$DFT" replay -d d --no-time $HIDE >replay.txt 2>replay.err
check $? "replay reads the session"
n_step=$(grep -c '} /\* step \*/$' replay.txt)
n_swap=$(grep -c '} /\* yield_swap \*/$' replay.txt)
n_jump=$(grep -c '} /\* yield_jump \*/$' replay.txt)
if [ "$n_step" -eq 1600 ] && [ "$n_swap" -eq 800 ] && [ "$n_jump" -eq 800 ]; then
	ok "replay: every switched-away call ends at its return"
else
	notok "replay: step/yield_swap/yield_jump closed $n_step/$n_swap/$n_jump times, not 1600/800/800"
	diag_file replay.txt 60
fi
if ! grep -q '(unwound)' replay.txt; then
	ok "replay: no context switch is shown as an unwind"
else
	notok "replay: a context switch shown as an unwind"
	grep -m5 -B5 '(unwound)' replay.txt | diag_file /dev/stdin 40
fi
n_unf=$(grep -c '(unfinished)' replay.txt)
n_unf_coro=$(grep -c '} /\* coro_main \*/ (unfinished)$' replay.txt)
if [ "$n_unf" -eq 8 ] && [ "$n_unf_coro" -eq 8 ]; then
	ok "replay: the 8 coroutines left by a jump end unfinished, nothing else"
else
	notok "replay: $n_unf unfinished calls, $n_unf_coro of them coro_main (want 8 and 8)"
	grep -m10 '(unfinished)' replay.txt | diag_file /dev/stdin
fi

"$DFT" dump --chrome -d d -o chrome.json 2>dump.err
rc=$?
if command -v python3 >/dev/null; then
	python3 -c '
import json, sys
st = {}
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    s = st.setdefault(e.get("tid"), [])
    if e["ph"] == "B":
        s.append(e["name"])
    elif e["ph"] == "E":
        assert s and s.pop() == e["name"], e
assert not any(st.values()), st
' chrome.json 2>>dump.err
	rc=$((rc + $?))
fi
check $rc "dump --chrome: slices nest per thread"
[ $rc -eq 0 ] || diag_file dump.err

"$DFT" dump --perfetto -d d -o trace.pb 2>pf.err && [ -s trace.pb ] &&
	"$DFT" report -d d >report.txt 2>>pf.err && grep -q ' step$' report.txt
check $? "dump --perfetto and report read the session"
[ -s pf.err ] && diag_file pf.err
# ---- attached: contexts made before the runtime came, hooks in the GOT
if [ "$ARCH" != x86_64 ]; then
	skip "record -p: attach is x86-64 only (and qemu-user has no ptrace of a guest)"
elif [ -z "$SAN" ]; then
	. "$TOP/tests/gen/attach.sh"
	if start coro ./coro 2 8 -1; then
		"$DFT" record -d att -p "$pid" --duration 300ms 2>att.err
		rc=$?
		"$DFT" replay -d att --no-time >att.txt 2>>att.err
		if [ $rc -eq 0 ] && grep -q '} /\* yield_swap \*/$' att.txt; then
			ok "record -p: calls that switched away by swapcontext while attached end at their return"
		else
			notok "record -p: exit status $rc, or no yield_swap() closed at its return"
			diag_file att.err
			diag_file att.txt 30
		fi
		sleep 0.3
		if kill -0 "$pid" 2>/dev/null && ! grep -q libdynftrace "/proc/$pid/maps"; then
			ok "record -p: detached with coroutines suspended; the process runs on"
		else
			notok "record -p: the process died after the detach, or the runtime stayed mapped"
		fi
	else
		notok "the coroutine target started"
	fi
fi
tap_end
