#!/usr/bin/env bash
# description: a recording's end: a vfork child's exec leaves its parent's recording on; library destructors run after the runtime's are recorded
# config: asan
#
#  - a program vforks a child that tries an exec that fails, then one that
#    succeeds (as execvp does along PATH; the program itself again), then
#    goes on calling functions:
#    every call of the parent after the child's exec is in the trace, none
#    lost, and the exec'd program is recorded under its own process;
#  - a shared library's destructor, which the loader runs after the
#    runtime's (the runtime is preloaded), calls a function 1,000 times: all
#    are in the trace, with the program's atexit handler's calls;
#  - a runtime loaded by dlopen into a recording process and unloaded by
#    dlclose ends its recording there: the process exits normally (nothing
#    of the runtime's is left to run at exit).
# Env: TOP B CC SAN ARCH.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
cd "$T" || exit 1
record_san

cat >vf.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
volatile int sink;
__attribute__((noinline)) void after(void) { sink++; }
__attribute__((noinline)) void spawn(char *self)
{
	char *argv[] = {self, "0", NULL};
	pid_t p = vfork();
	if (p == 0) {
		execv("/nonexistent/vf", argv); /* fails: the child goes on */
		execv(self, argv); /* this program again, of the same architecture */
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		abort();
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	if (n == 0)
		return 0; /* the exec'd child */
	spawn(argv[0]);
	for (int i = 0; i < n; i++)
		after();
	return 0;
}
EOF
cat >dlib.c <<'EOF'
volatile int lsink;
__attribute__((noinline)) void lib_work(int i) { lsink += i; }
__attribute__((destructor)) static void lib_fini(void)
{
	for (int i = 0; i < 1000; i++)
		lib_work(i);
}
EOF
cat >dmain.c <<'EOF'
#include <stdlib.h>
void lib_work(int);
volatile int sink;
__attribute__((noinline)) void at_exit_work(void) { sink++; }
static void handler(void) { at_exit_work(); }
int main(void)
{
	atexit(handler);
	lib_work(1);
	return 0;
}
EOF
# shellcheck disable=SC2086
if ! $CC -O1 -g $TRACE_FLAGS $SANFLAGS vf.c -o vf 2>build.log ||
	! $CC -O1 -g -fPIC -shared $TRACE_FLAGS $SANFLAGS dlib.c -o libdl-t.so 2>>build.log ||
	! $CC -O1 -g $TRACE_FLAGS $SANFLAGS dmain.c -o dmain ./libdl-t.so -Wl,-rpath,"$T" 2>>build.log; then
	notok "build the programs"
	diag_file build.log
	exit 1
fi

# calls NAME DIR: how many calls of NAME `dynftrace report` counts
calls() {
	"$DFT" report -d "$2" 2>/dev/null | awk -v f="$1" '$NF == f || $(NF-1) == f { print $(NF-1) == f ? $(NF-2) : $(NF-1); exit }'
}
lost() {
	"$DFT" info -d "$1" 2>/dev/null | awk '/^# lost events/ { gsub(",", "", $5); print $5 }'
}

# shellcheck disable=SC2086
"$DFT" record $HIDE -d v ./vf 1000 >out 2>err
rc=$?
n=$(calls after v)
l=$(lost v)
if [ $rc -eq 0 ] && [ "$n" = 1000 ] && [ "$l" = 0 ]; then
	ok "vfork, a failed exec, an exec: the parent's 1000 calls after it are recorded, 0 lost"
else
	notok "vfork then exec: record status $rc, after() calls '$n' (want 1000), lost '$l'"
	diag_file err
	"$DFT" info -d v 2>&1 | diag_file /dev/stdin 20
fi
np=$(find v -name 'sites-*' | wc -l)
[ "$np" -ge 2 ]
check $? "the exec'd program is recorded as its own process ($np processes)"

# shellcheck disable=SC2086
"$DFT" record $HIDE -d d ./dmain >out 2>err
rc=$?
n=$(calls lib_work d)
a=$(calls at_exit_work d)
l=$(lost d)
if [ $rc -eq 0 ] && [ "$n" = 1001 ] && [ "$a" = 1 ] && [ "$l" = 0 ]; then
	ok "a library destructor run after the runtime's: its 1000 calls recorded, 0 lost"
else
	notok "library destructor: record status $rc, lib_work calls '$n' (want 1001), at_exit_work '$a', lost '$l'"
	diag_file err
	"$DFT" report -d d 2>&1 | diag_file /dev/stdin 20
fi
cat >dlrt.c <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "", RTLD_NOW);
	int c = h ? dlclose(h) : -1;
	printf("%s %d\n", h ? "loaded" : dlerror(), c);
	return 0;
}
EOF
if [ -z "$SAN" ] && $CC -O1 dlrt.c -o dlrt -ldl 2>build.log; then
	mkdir -p dl
	got=$(DYNFTRACE_RECORD="$T/dl" ./dlrt "$B/libdynftrace.so" 2>err)
	rc=$?
	[ $rc -eq 0 ] && [ "$got" = "loaded 0" ]
	check $? "a runtime dlopen'ed and dlclose'd while recording: exit status $rc, '$got'"
	[ $rc -eq 0 ] || diag_file err
else
	skip "dlopen of the runtime: not under a sanitizer (its runtime must come first)"
fi
tap_end
