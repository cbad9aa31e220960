#!/usr/bin/env bash
# description: attach to processes under seccomp filters: the filters read and run, refused only where one would kill, results exact
# config: asan
#
# tests/seccomp/t-seccomp.c tests the filter interpreter of cli/seccomp.c
# (hand-written and malformed programs, stacking, the check's sentences,
# random programs against the kernel's own verdicts). Then, with
# tests/progs/attach-target.c's filters (--seccomp=NAME, for every thread,
# or --seccomp-thread=NAME, for one thread):
#   - allow-all: attach, trace, detach;
#   - membarrier or socket(AF_UNIX) killing, in every thread or in one:
#     refused with a sentence naming the call, the target untouched;
#   - W+X mmap and mprotect failing with EPERM (MemoryDenyWriteExecute):
#     attach, trace and detach work (code is written through
#     /proc/self/mem), results exact; so with membarrier failing (synced
#     through mprotect), and with socket failing (no control socket);
#   - systemd's MemoryDenyWriteExecute (no PROT_EXEC mprotect at all): the
#     attach does no harm;
#   - a dynftrace without CAP_SYS_ADMIN (as another user, or as root
#     without it), or under a filter itself: refused, saying why, before the
#     target is touched.
# Reading filters needs root: as another user only the refusals run.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
P=$TOP/tests/progs
D=$B/dynftrace

# shellcheck disable=SC2086
if ! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS "$P/attach-target.c" -o "$T/target" -lpthread \
	2>"$T/build.log" ||
	! $CC $CFLAGS_T $SANFLAGS "$P/seccomp-run.c" -o "$T/seccomp-run" 2>>"$T/build.log" ||
	! $CC $CFLAGS_T $SANFLAGS -iquote "$TOP/cli" $LIB_INC "$TOP/tests/seccomp/t-seccomp.c" "$TOP/cli/seccomp.c" \
		"$TOP/cli/seccomp_calls.c" "$TOP/cli/inject.c" "$TOP/lib/arch/x86_64/inject.c" -o "$T/t-seccomp" \
		2>>"$T/build.log"; then
	echo "not ok 1 - build the target, seccomp-run and t-seccomp"
	diag_file "$T/build.log"
	exit 1
fi

tap_prog "the filter interpreter (t-seccomp)" "$T/t-seccomp"

START_TRIES=600
. "$(dirname "$0")/../gen/attach.sh"

# untouched NAME PID: running, not stopped, not traced, no runtime mapped,
# nothing BAD said.
untouched() {
	local st tr
	st=$(awk '/^State:/ { print $2 }' "/proc/$2/status" 2>/dev/null)
	tr=$(awk '/^TracerPid:/ { print $2 }' "/proc/$2/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != T ] && [ "$st" != t ] && [ "$tr" = 0 ] &&
		! grep -q libdynftrace "/proc/$2/maps" && ! grep -q '^BAD' "$T/$1.out"
}
# refused NAME LABEL PID PATTERN [CMD...]: the attach (or CMD) fails, in one
# line saying PATTERN, and target NAME is untouched.
refused() {
	local name=$1 label=$2 p=$3 pat=$4 out rc
	shift 4
	[ $# -eq 0 ] && set -- "$D" attach "$p"
	out=$("$@" 2>&1)
	rc=$?
	echo "# $out"
	[ $rc -eq 1 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -qF -- "$pat" &&
		untouched "$name" "$p"
	check $? "refused: $label"
}
# traced NAME LABEL PID: attach, function_graph, the trace shows the
# workers' calls (asked until it does), detach unloads; target NAME computes
# exactly.
traced() {
	local name=$1 label=$2 p=$3 out seen=1
	out=$($D attach "$p" 2>&1)
	echo "$out" | sed -e 's/^/# /'
	if echo "$out" | grep -q 'attached to process' && $D ctl "$p" current_tracer function_graph &&
		$D ctl "$p" tracing_on 1; then
		for _ in $(seq 100); do
			$D ctl "$p" trace >"$T/$name.trace" 2>&1
			grep -qE 'at_mid\(\) \{|at_leaf\(\);' "$T/$name.trace" && seen=0 && break
			sleep 0.1
		done
	fi
	check $seen "$label: attach, and function_graph traces the workers"
	out=$($D detach "$p" 2>&1)
	echo "# $out"
	echo "$out" | grep -q 'the runtime is unloaded'
	check $? "$label: detach unloads the runtime"
	untouched "$name" "$p"
	check $? "$label: the target runs on with exact results, nothing left in it"
}

chmod 755 "$T" "$T/target" "$T/seccomp-run"
if [ "$(id -u)" -eq 0 ]; then
	start allow "$T/target" --seccomp || notok "the allow-all target started"
	traced allow "allow-all filter" $pid

	start kmb "$T/target" --seccomp=kill-membarrier || notok "the kill-membarrier target started"
	refused kmb "a filter killing at membarrier" $pid \
		"its seccomp filter would kill it at membarrier(MEMBARRIER_CMD_QUERY), which patching needs; not attaching"

	start ksock "$T/target" --seccomp=kill-socket || notok "the kill-socket target started"
	refused ksock "a filter killing at socket(AF_UNIX)" $pid \
		"would kill it at socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK), which the control socket needs"

	start kthr "$T/target" --seccomp-thread=kill-membarrier ||
		notok "the target with one filtered thread started"
	refused kthr "one thread's filter killing at membarrier" $pid \
		"the seccomp filter of its thread"

	start mdwe "$T/target" --seccomp=mdwe || notok "the W+X-denying target started"
	traced mdwe "W+X mmap/mprotect failing with EPERM" $pid

	start emb "$T/target" --seccomp=errno-membarrier || notok "the errno-membarrier target started"
	traced emb "membarrier failing with EPERM" $pid

	# No control socket: attached and detached all the same.
	start esock "$T/target" --seccomp=errno-socket || notok "the errno-socket target started"
	$D attach $pid >"$T/esock.att" 2>&1 && ! $D ctl $pid current_tracer >/dev/null 2>&1 &&
		$D detach $pid 2>&1 | grep -q 'the runtime is unloaded' && untouched esock $pid
	check $? "socket failing with EACCES: attach and detach, the process unharmed"

	# systemd's MemoryDenyWriteExecute= also refuses PROT_EXEC mprotect:
	# the runtime cannot make trampolines; whatever the attach says, the
	# process must come through as it was.
	start mdwex "$T/target" --seccomp=mdwe-exec || notok "the mdwe-exec target started"
	$D attach $pid >"$T/mdwex.att" 2>&1
	diag_file "$T/mdwex.att" 3
	grep -q libdynftrace "/proc/$pid/maps" && $D detach $pid >/dev/null 2>&1
	untouched mdwex $pid
	check $? "all PROT_EXEC mprotect failing with EPERM: the process comes through unharmed"

	start own "$T/target" --seccomp || notok "a target started"
	refused own "dynftrace under a filter itself" $pid "dynftrace runs under one itself" \
		"$T/seccomp-run" "$D" attach $pid
else
	for t in "allow-all filter: attach, and function_graph traces the workers" \
		"allow-all filter: detach unloads the runtime" \
		"allow-all filter: the target runs on with exact results, nothing left in it" \
		"refused: a filter killing at membarrier" "refused: a filter killing at socket(AF_UNIX)" \
		"refused: one thread's filter killing at membarrier" \
		"W+X mmap/mprotect failing with EPERM: attach, and function_graph traces the workers" \
		"W+X mmap/mprotect failing with EPERM: detach unloads the runtime" \
		"W+X mmap/mprotect failing with EPERM: the target runs on with exact results, nothing left in it" \
		"membarrier failing with EPERM: attach, and function_graph traces the workers" \
		"membarrier failing with EPERM: detach unloads the runtime" \
		"membarrier failing with EPERM: the target runs on with exact results, nothing left in it" \
		"socket failing with EACCES: attach and detach, the process unharmed" \
		"all PROT_EXEC mprotect failing with EPERM: the process comes through unharmed" \
		"refused: dynftrace under a filter itself"; do
		skip "$t: reading seccomp filters needs root"
	done
fi

# Without CAP_SYS_ADMIN (another user, or root without it): refused before
# the target is touched.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	start nobody "${AS[@]}" "$T/target" --seccomp || notok "the target of uid 65534 started"
	refused nobody "no CAP_SYS_ADMIN" $pid \
		"runs under a seccomp filter that only root (CAP_SYS_ADMIN) can read, so dynftrace cannot tell whether loading the runtime is safe" \
		"${AS[@]}" "$D" attach $pid
	start nocap "$T/target" --seccomp || notok "a target started"
	refused nocap "root without CAP_SYS_ADMIN" $pid \
		"only CAP_SYS_ADMIN lets dynftrace read, which it lacks here" \
		setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin "$D" attach $pid
elif [ "$(id -u)" -ne 0 ]; then
	start nobody "$T/target" --seccomp || notok "the target started"
	refused nobody "no CAP_SYS_ADMIN" $pid "only root (CAP_SYS_ADMIN) can read"
	skip "root without CAP_SYS_ADMIN: needs root"
else
	skip "no CAP_SYS_ADMIN: needs setpriv"
	skip "root without CAP_SYS_ADMIN: needs setpriv"
fi

echo "1..$tap_n"
tap_end
