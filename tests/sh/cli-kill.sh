#!/usr/bin/env bash
# description: record recovers the buffers of a process killed before it could flush (SIGKILL), or says they were lost
# config: asan
#
# The runtime cannot flush when the kernel kills (SIGKILL, OOM killer):
# under record its buffers are files in /dev/shm, and record appends what
# they still hold to the streams once the process is gone (lib/ring/ring.c,
# section 6; lib/ring/ring_salvage.c). Checked:
#  - a program that SIGKILLs itself after 100,000 calls: every call is
#    there, in order (replay reads it without damage, babeltrace2 too, the
#    same number of events), nothing lost, and info/replay/report say the
#    process was killed and its buffers recovered;
#  - threads that made their calls and wait: exact too; threads still
#    tracing when killed: readable, at most one event lost per thread;
#  - killed by another process (kill -9 from the shell), idle or tracing;
#  - a forked child killed by its parent: its own calls recovered, the
#    parent's exact (the child never wrote into the parent's buffer);
#  - a small buffer (-b 8) and --overwrite: events + lost = events made;
#  - _exit (no destructor runs): recovered the same way;
#  - no buffer file is left in /dev/shm; a dead recorder's directory is
#    removed by the next record;
#  - without buffer files (DYNFTRACE_RING_TEST_NOSHM: the fallback to
#    anonymous memory) info, replay and report say that the killed
#    process's buffered events were lost, and info's lost count is not a
#    bare 0.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup

cat >kill.c <<'EOF'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;
static long calls;
static int nready, forever;

__attribute__((noinline)) void f(long x)
{
	sink += x;
}

__attribute__((noinline)) void *worker(void *arg)
{
	for (long i = 0; i < calls || forever; i++)
		f(i);
	__atomic_fetch_add(&nready, 1, __ATOMIC_SEQ_CST);
	for (;;)
		pause();
	return arg;
}

static void say_pid(void)
{
	printf("%d\n", (int)getpid());
	fflush(stdout);
}

/* kill self N | threads T N | running T | wait N | spin | fork N | exit N */
int main(int argc, char **argv)
{
	const char *mode = argv[1];
	if (!strcmp(mode, "exit")) {
		calls = atol(argv[2]);
		for (long i = 0; i < calls; i++)
			f(i);
		_exit(3); /* no destructor: no flush */
	}
	if (!strcmp(mode, "self") || !strcmp(mode, "wait")) {
		calls = atol(argv[2]);
		for (long i = 0; i < calls; i++)
			f(i);
		if (mode[0] == 's')
			kill(getpid(), SIGKILL);
		say_pid();
		for (;;)
			pause();
	}
	if (!strcmp(mode, "threads") || !strcmp(mode, "running")) {
		int n = atoi(argv[2]);
		forever = mode[0] == 'r';
		calls = forever ? 0 : atol(argv[3]);
		for (int i = 0; i < n; i++) {
			pthread_t t;
			pthread_create(&t, NULL, worker, NULL);
		}
		if (forever) {
			say_pid();
			for (;;)
				f(1);
		}
		while (__atomic_load_n(&nready, __ATOMIC_SEQ_CST) < n)
			usleep(1000);
		kill(getpid(), SIGKILL);
	}
	if (!strcmp(mode, "spin")) {
		say_pid();
		for (;;)
			f(1);
	}
	if (!strcmp(mode, "fork")) {
		int p[2], st;
		char c;
		calls = atol(argv[2]);
		if (pipe(p))
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			for (long i = 0; i < 2 * calls; i++)
				f(i);
			if (write(p[1], "r", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		for (long i = 0; i < calls; i++)
			f(i);
		if (read(p[0], &c, 1) != 1)
			return 1;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	return 2;
}
EOF
cc_recorded kill kill.c
record_san
ulimit -S -c 0

# info_num DIR events|calls|lost: a number of `dynftrace info`
info_num() {
	"$DFT" info -d "$1" 2>/dev/null | awk -v k="$2" '
		k == "events" && /^# events / { gsub(",", "", $4); print $4 }
		k == "calls" && /^# events / { gsub("[(,]", "", $5); print $5 }
		k == "lost" && /^# lost events/ { gsub(",", "", $5); print $5 }
		k == "overwritten" && /^# overwritten/ { gsub(",", "", $4); print $4 }'
}

# no_shm_left RECORD_PID: the recorder's buffer directory is gone
no_shm_left() {
	! ls -d /dev/shm/dynftrace-"$1".* >/dev/null 2>&1
}

# readable DIR: replay and report read every stream without damage, and
# babeltrace2 (when installed) reads as many events as info counts
readable() {
	local d=$1 n
	"$DFT" replay -d "$d" --no-time >replay.txt 2>replay.err && [ ! -s replay.err ] &&
		"$DFT" report -d "$d" >report.txt 2>report.err && [ ! -s report.err ] || return 1
	command -v babeltrace2 >/dev/null || return 0
	babeltrace2 "$d/ctf" >bt.txt 2>bt.err || return 1
	n=$(wc -l <bt.txt)
	[ "$n" -eq "$(info_num "$d" events)" ]
}

# recovered DIR PID SIG: the three views say PID was killed and recovered
recovered() {
	local want="process $2 was killed by signal $3 .* before it could flush: dynftrace record recovered its buffers"
	grep -q "^unflushed: $2 $3 recovered\$" "$1/info" &&
		"$DFT" info -d "$1" | grep -q "^# $want" && grep -q "^# $want" replay.txt &&
		grep -q "^# $want" report.txt && ! "$DFT" info -d "$1" | grep -q 'not counted'
}

diag() {
	diag_file err 5
	diag_file "$1/info" 30
	diag_file replay.err 5
	[ -f bt.err ] && diag_file bt.err 5
}

# ---- killed by itself -----------------------------------------------------
N=100000
recorded s ./kill self $N
if [ $rc -eq 137 ] && readable s && [ "$(info_num s calls)" = $((N + 1)) ] &&
	[ "$(info_num s lost)" = 0 ] && [ "$(grep -c '^\[ *[0-9]*\] |   f();$' replay.txt)" = $N ] &&
	recovered s "$pid" 9; then
	ok "SIGKILL by itself after $N calls: $N + 1 calls recovered, in order, nothing lost, reported"
else
	notok "SIGKILL by itself: status $rc, $(info_num s calls) calls, $(info_num s lost) lost"
	diag s
fi
no_shm_left $rpid
check $? "SIGKILL by itself: no buffer file left in /dev/shm"
grep -q "warning: process $pid was killed by signal 9 .* recovered" err
check $? "SIGKILL by itself: record says so"

# ---- _exit: no destructor, no flush either ---------------------------------
recorded s ./kill exit $N
if [ $rc -eq 3 ] && readable s && [ "$(info_num s calls)" = $((N + 1)) ] &&
	[ "$(info_num s lost)" = 0 ] && grep -q "^unflushed: $pid 0 recovered\$" s/info &&
	grep -q "^# process $pid ended (killed, or _exit) before it could flush: dynftrace record recovered" replay.txt &&
	no_shm_left $rpid; then
	ok "_exit after $N calls: all recovered, said, no file left"
else
	notok "_exit: status $rc, $(info_num s calls) calls"
	diag s
fi

# ---- threads --------------------------------------------------------------
n=4 k=30000
recorded s ./kill threads $n $k
want=$((1 + n * (k + 1)))
if [ $rc -eq 137 ] && readable s && [ "$(info_num s calls)" = $want ] &&
	[ "$(info_num s lost)" = 0 ] && [ "$(grep -c '^\[ *[0-9]*\] | worker() {$' replay.txt)" = $n ] &&
	recovered s "$pid" 9 && no_shm_left $rpid; then
	ok "$n threads that made their calls, SIGKILL: all $want calls recovered, no file left"
else
	notok "$n threads, SIGKILL: status $rc, $(info_num s calls) calls (want $want), $(info_num s lost) lost"
	diag s
fi

# ---- killed by another process ---------------------------------------------
# The pid comes through a fifo once the program is ready: no sleep.
kill_from_outside() { # NAME DIR ARGS...
	local name=$1 d=$2
	shift 2
	rm -f fifo
	mkfifo fifo
	"$DFT" record $HIDE -d "$d" "$@" >fifo 2>err &
	rpid=$!
	read -r pid <fifo
	[ -n "$pid" ] && kill -KILL "$pid"
	wait $rpid
	rc=$?
	[ -n "$pid" ] && [ $rc -eq 137 ]
}
if kill_from_outside "idle" s ./kill wait $N && readable s &&
	[ "$(info_num s calls)" = $((N + 2)) ] && [ "$(info_num s lost)" = 0 ] &&
	recovered s "$pid" 9 && no_shm_left $rpid; then
	ok "kill -9 from outside, idle after $N calls: all $((N + 2)) recovered, no file left"
else
	notok "kill -9 from outside, idle: pid '$pid', status $rc, $(info_num s calls) calls"
	diag s
fi
for args in "spin" "running 3"; do
	if kill_from_outside "$args" s ./kill $args && readable s && lost=$(info_num s lost) &&
		[ "$lost" -le 4 ] && [ "$(info_num s calls)" -gt 1 ] && recovered s "$pid" 9 &&
		no_shm_left $rpid; then
		ok "kill -9 from outside while tracing ($args): readable, $(info_num s calls) calls, $lost lost (in flight), no file left"
	else
		notok "kill -9 from outside while tracing ($args): pid '$pid', status $rc, lost '$(info_num s lost)'"
		diag s
	fi
done

# ---- a forked child killed by its parent ------------------------------------
if [ "$ARCH" != x86_64 ]; then
	# the child of the threaded recorded process dies in fork() (qemu-user 7.2)
	skip "forked child SIGKILLed by its parent: qemu-user aborts fork() of a threaded process"
else
	recorded s ./kill fork $N
	"$DFT" info -d s >info.txt 2>&1
	pcalls=$(awk -v p="$pid" '$2 == p && $3 == p { gsub(",", ""); print $5 }' info.txt)
	ccalls=$(awk -v p="$cpid" '$2 == p && $3 == p { gsub(",", ""); print $5 }' info.txt)
	if [ $rc -eq 0 ] && [ -n "$cpid" ] && readable s && [ "$pcalls" = $((N + 1)) ] &&
		[ "$ccalls" = $((2 * N)) ] && [ "$(info_num s lost)" = 0 ] &&
		grep -q "^unflushed: $cpid 0 recovered\$" s/info && no_shm_left $rpid; then
		ok "forked child SIGKILLed by its parent: its $ccalls calls recovered, the parent's $pcalls intact"
	else
		notok "forked child SIGKILLed: status $rc, parent $pid '$pcalls' calls, child $cpid '$ccalls'"
		diag_file info.txt 30
		diag s
	fi
fi

# ---- small buffer, overwrite -------------------------------------------------
for opt in "-b 8" "--overwrite -b 64"; do
	# shellcheck disable=SC2086
	recorded s $opt ./kill self $N
	ev=$(info_num s events)
	lost=$(info_num s lost)
	over=$(info_num s overwritten)
	want=$((2 * N + 1))
	# The salvaged buffer of an overwrite-mode thread says what it
	# overwrote (all its losses here); a plain buffer overwrites nothing.
	case $opt in
	--overwrite*) [ "${over:-0}" -eq "$lost" ] && grep -q "^overwritten: [0-9]* [0-9]* $over\$" s/info ;;
	*) [ -z "$over" ] ;;
	esac
	split=$?
	if [ $rc -eq 137 ] && readable s && [ -n "$ev" ] && [ "$lost" -gt 0 ] &&
		[ $((ev + lost)) -eq $want ] && [ $split -eq 0 ] && no_shm_left $rpid; then
		ok "SIGKILL with $opt: $ev events + $lost lost = $want made${over:+ ($over overwritten)}"
	else
		notok "SIGKILL with $opt: status $rc, $ev events + $lost lost, want $want"
		diag s
	fi
done

# ---- a recorder that died leaves its directory: the next one removes it ----
dead=$(sh -c 'echo $$')
mkdir -p "/dev/shm/dynftrace-$dead.tEsT00" && : >"/dev/shm/dynftrace-$dead.tEsT00/$dead-$dead"
"$DFT" record $HIDE -d s ./kill exit 10 >out 2>err
[ ! -e "/dev/shm/dynftrace-$dead.tEsT00" ]
check $? "the buffer directory of a recorder that died is removed by the next record"
rm -rf "/dev/shm/dynftrace-$dead.tEsT00"

# ---- no buffer files: said, not silent ---------------------------------------
DYNFTRACE_RING_TEST_NOSHM=1 recorded s ./kill self $N
want="process $pid was killed by signal 9 .* before it could flush: events buffered in memory were lost (up to 4,096 KiB per thread, not counted)"
"$DFT" info -d s >info.txt 2>&1
"$DFT" replay -d s >replay.txt 2>&1
"$DFT" report -d s >report.txt 2>&1
if [ $rc -eq 137 ] && grep -q "^noshm: $pid $pid\$" s/info && grep -q "^unflushed: $pid 9 lost\$" s/info &&
	grep -q "^# $want" info.txt && grep -q "^# $want" replay.txt && grep -q "^# $want" report.txt &&
	grep -q "^# lost events *: [0-9,]*, and more not counted" info.txt &&
	grep -q "warning: process $pid was killed by signal 9 .* not counted" err && no_shm_left $rpid; then
	ok "without buffer files: info, replay, report and record say the buffered events were lost"
else
	notok "without buffer files: status $rc, no warning"
	diag_file info.txt 30
	diag_file err 5
fi
tap_end
