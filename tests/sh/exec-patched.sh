#!/usr/bin/env bash
# description: an exec function traced with -P is recorded: its call (with -A's arguments) before the image goes, and after a failed exec its return (-R), in the same stream
#
# The exec wrappers end the recording before the image is replaced, which
# used to come before the traced entry of the C library's execve: no exec
# was ever in the trace. Checks:
#  - a program calls execve on a path that does not exist, then execv of
#    /bin/true: function_graph shows the failed call with its path and
#    its return value -1, then the second call (its return never comes);
#    the thread's trace is one stream (a failed exec resumes it);
#  - the calls made after the failed exec nest as before (the leaf after
#    it is at the same depth);
#  - `sh -c 'exec true'` with the function tracer records sh's execve of
#    true.
# Needs libcapstone4 (-P). Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san
if ! ls /usr/lib/x86_64-linux-gnu/libcapstone.so.4 >/dev/null 2>&1 &&
	! ldconfig -p 2>/dev/null | grep -q libcapstone.so.4; then
	skip "libcapstone4 is not installed"
	tap_end
	exit 0
fi

cat >ex.c <<'EOF'
#include <unistd.h>
volatile int sink;
__attribute__((noinline)) void leaf(void) { sink++; }
int main(void)
{
	char *a[] = {"/nonexistent/x", "arg1", NULL};
	char *e[] = {NULL};
	leaf();
	execve("/nonexistent/x", a, e);
	leaf();
	char *b[] = {"true", NULL};
	execv("/bin/true", b);
	return 1;
}
EOF
cc_recorded ex ex.c
recorded s1 -P 'execve@libc*' -A 'execve@arg1/s' -R 'execve@retval' ./ex
$DFT replay $HIDE -d s1 >replay1 2>&1
[ "$rc" -eq 0 ]
check $? "record of execve and execv runs"
[ "$rc" -eq 0 ] || diag_file err
grep -qE '^ *[0-9.]+ [mun]s \[ *[0-9]+\] \|   execve\("/nonexistent/x"\) = -1;' replay1
check $? "the failed execve is recorded with its path and its return value -1, inside main"
grep -qE '\|   execve\("/bin/true"\)' replay1
check $? "execv's call of execve is recorded before the image is replaced"
awk '/execve\("\/nonexistent/ { f = 1; next } f && /\|   leaf\(\);/ { ok = 1 } END { exit !ok }' replay1
check $? "the call after the failed exec nests as the one before it"
[ "$(find s1/ctf -name "stream-$pid-$pid*" | wc -l)" -eq 1 ]
check $? "the thread's trace is one stream across the failed exec"
diag_file replay1 20

recorded s2 -T function -P 'execve@libc*' -- sh -c 'exec true'
$DFT replay -d s2 >replay2 2>&1
[ "$rc" -eq 0 ] && grep -q 'execve()' replay2
check $? "sh -c 'exec true' with the function tracer records sh's execve"
diag_file replay2 5
tap_end
