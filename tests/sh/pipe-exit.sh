#!/usr/bin/env bash
# description: dynftrace pipe gets a process's last events before it exits or execs; what is lost is counted and said
#
# The control thread looks for new records every 50 ms: a process that
# made its last calls and exited (or exec'd) in between was gone with
# them, and `pipe` printed none of them. A program linked with the runtime
# (DYNFTRACE_CONTROL=1) waits for a file, then calls lastfn N times and
# exits at once, or execs /bin/true. Checks:
#  - exit: `pipe` prints all of the N calls;
#  - exec: the same;
#  - 100,000 calls, more than the 512 KiB ring holds: the calls printed
#    and the LOST line's count add up to 100,000 exactly (the events
#    overwritten before the reader first saw the thread's ring are lost to
#    it, and said);
#  - a reader that does not read: the process still exits within a few
#    seconds, and says on its stderr how many of the last events are lost.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
D=$B/dynftrace
cd "$T" || exit 1
cat >pe.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
volatile int sink;
__attribute__((noinline)) void lastfn(int i) { sink += i; }
int main(int argc, char **argv)
{
	printf("ready\n");
	fflush(stdout);
	while (access(argv[1], F_OK))
		usleep(10000);
	for (int i = 0; i < atoi(argv[2]); i++)
		lastfn(i);
	if (!strcmp(argv[3], "exec"))
		execl("/bin/true", "true", (char *)0);
	return 0;
}
EOF
# shellcheck disable=SC2086
if ! cc_prog pe $TRACE_FLAGS pe.c 2>build.log; then
	echo "not ok 1 - build the program"
	diag_file build.log
	exit 1
fi
unset DYNFTRACE_RECORD

# run NAME N HOW [READER]: start pe, turn the function tracer on, start
# READER (default: dynftrace pipe) into NAME.pipe once it streams (a
# marker came through), open the gate, wait for pe; its status in prc.
run() {
	local name=$1 n=$2 how=$3
	rm -f gate
	DYNFTRACE_CONTROL=1 ./pe gate "$n" "$how" >"$name.out" 2>"$name.err" &
	ppid=$!
	for _ in $(seq 200); do
		grep -q '^ready' "$name.out" && break
		sleep 0.05
	done
	"$D" ctl "$ppid" current_tracer function >/dev/null || return 1
	if [ -n "${4:-}" ]; then
		eval "$4" &
	else
		"$D" pipe "$ppid" >"$name.pipe" 2>"$name.pipe.err" &
	fi
	rpid=$!
	for _ in $(seq 200); do
		"$D" ctl "$ppid" trace_marker "go" >/dev/null 2>&1
		grep -q 'go' "$name.pipe" 2>/dev/null && break
		sleep 0.05
	done
	t0=$(date +%s%N)
	touch gate
	wait "$ppid"
	prc=$?
	t1=$(date +%s%N)
	wait "$rpid"
}

run exit 2000 exit
[ "$prc" -eq 0 ] && [ "$(grep -c ' lastfn <-' exit.pipe)" -eq 2000 ]
check $? "exit: pipe prints all 2000 last calls ($(grep -c ' lastfn <-' exit.pipe))"

run exec 2000 exec
[ "$prc" -eq 0 ] && [ "$(grep -c ' lastfn <-' exec.pipe)" -eq 2000 ]
check $? "exec: pipe prints all 2000 calls before the exec ($(grep -c ' lastfn <-' exec.pipe))"

run burst 100000 exit
got=$(grep -c ' lastfn <-' burst.pipe)
lost=$(sed -n 's/^ TID [0-9]* \[LOST \([0-9]*\) EVENTS\]$/\1/p' burst.pipe | awk '{s += $1} END {print s + 0}')
[ "$prc" -eq 0 ] && [ $((got + lost)) -eq 100000 ]
check $? "100000 calls into a 512 KiB ring: $got printed and $lost said lost add up"

# A reader that takes 100 bytes, then stops reading.
run stall 100000 exit "\"$D\" ctl \$ppid trace_pipe 2>/dev/null | { head -c 100 >stall.pipe; sleep 4; }"
ms=$(((t1 - t0) / 1000000))
[ "$prc" -eq 0 ] && [ "$ms" -lt 3500 ] &&
	grep -qE 'trace_pipe: a reader did not take the last [1-9][0-9]* events .* before the process exited: they are lost' stall.err
check $? "a reader that does not read: the process exits after $ms ms and says what is lost"
diag_file stall.err 3
tap_end
