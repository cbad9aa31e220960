#!/usr/bin/env bash
# description: record -p -P '*@libc*' records the program's C library calls only, not those the runtime and the agent make while they attach and detach; detach still unloads
#
# A program built without sites loops on usleep and getppid. Attaching
# with the whole C library relocated (-P '*@libc*'), the runtime's own
# work on the borrowed thread (sigaction for its fatal-signal handlers,
# mkdir and open of the session files, getenv's strlen, at the start; the
# flush's snprintf, access, munmap, unlink at the detach) and the agent's
# reading of errno (__errno_location) used to be recorded as the program's
# calls. Checks, for each tracer: the recording is made and the target let
# go (the runtime unmapped); every function in it is one the loop calls,
# or one they call inside the C library (sleep, getppid, asynchronous
# cancellation); the loop's calls are there.
# Needs libcapstone4. Env: TOP B CC.
. "$(dirname "$0")/../gen/common.sh"
. "$(dirname "$0")/../gen/attach.sh"
D=$B/dynftrace
cd "$T" || exit 1
if ! ls /usr/lib/x86_64-linux-gnu/libcapstone.so.4 >/dev/null 2>&1 &&
	! ldconfig -p 2>/dev/null | grep -q libcapstone.so.4; then
	skip "libcapstone4 is not installed"
	tap_end
	exit 0
fi
cat >loop.c <<'EOF'
#include <stdio.h>
#include <unistd.h>
int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		usleep(5000);
		if (getppid() == 0)
			return 1;
	}
}
EOF
# shellcheck disable=SC2086
if ! $CC $CFLAGS_T loop.c -o loop 2>build.log; then
	echo "not ok 1 - build the target"
	diag_file build.log
	exit 1
fi
start loop ./loop || {
	echo "not ok 1 - the target did not start"
	exit 1
}
lp=$pid

# names DIR: the distinct functions of the session's replay
# (function_graph: "... [ TID] |   f() {"; function: "... [ TID] f() <- caller")
names() { $D replay -d "$1" 2>/dev/null | sed -n 's/^[^]]*] *|\{0,1\} *\([^ (]*\)().*/\1/p' | sort -u; }
# The loop's calls and what they call inside the C library.
OWN='sleep|getppid|asynccancel|^__syscall_cancel'
for tracer in function_graph function; do
	rm -rf "s-$tracer"
	$D record -d "s-$tracer" -T $tracer -p "$lp" -P '*@libc*' --duration 500ms 2>"rec-$tracer.err"
	rc=$?
	[ $rc -eq 0 ] && ! grep -q libdynftrace "/proc/$lp/maps" && kill -0 "$lp"
	check $? "record -p -T $tracer -P '*@libc*' records and lets the target go, the runtime unloaded"
	[ $rc -eq 0 ] || diag_file "rec-$tracer.err"
	names "s-$tracer" >"names-$tracer"
	grep -vE "$OWN" "names-$tracer" >"foreign-$tracer"
	[ -s "names-$tracer" ] && [ ! -s "foreign-$tracer" ]
	check $? "$tracer: only the program's calls are recorded, none of the attach's or the detach's ($(wc -l <"foreign-$tracer") others)"
	diag_file "foreign-$tracer" 10
	grep -qx usleep "names-$tracer" && grep -qx getppid "names-$tracer"
	check $? "$tracer: the loop's usleep and getppid are recorded"
done
tap_end
