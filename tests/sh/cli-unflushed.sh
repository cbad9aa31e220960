#!/usr/bin/env bash
# description: record says the buffered events of any process that ended without flushing were lost, and recovers dead processes' buffers while the program runs
# config: asan
#
# Every traced image writes "started:" and, once its buffers are written,
# "flushed:" (exit, exec) or "signal:" (a fatal signal) to the info file;
# record checks each process that is gone without either (docs/FORMAT.md).
# While the program runs, record also recovers the buffer files of dead
# processes every second (cli/shm_watch.c). Checked:
#  - without buffer files (DYNFTRACE_RING_TEST_NOSHM), a forked child
#    killed by SIGKILL, or ending with _exit, and the main process ending
#    with _exit: "unflushed: PID 0 lost", and info, replay, report and
#    record say the events were lost, info's total "and more not counted";
#    the parent's calls are intact;
#  - a child that exits normally: "flushed:", nothing said;
#  - a forked child SIGKILLed while its parent keeps running: its buffer
#    files leave /dev/shm while the parent still runs, and in the end its
#    calls are all in the trace exactly once, nothing lost, said once;
#  - six children that end by _exit: recovered whole, and said in one
#    line (a pre-forking server makes thousands);
#  - a child whose main thread called pthread_exit while another thread
#    traces for longer than a scan: not taken for dead (its /proc state is
#    Z), its calls exact, nothing recovered.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup

cat >uf.c <<'EOF'
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) void f(long x)
{
	sink += x;
}

__attribute__((noinline)) void *worker(void *arg)
{
	for (int k = 0; k < 30; k++) {
		for (long i = 0; i < 1000; i++)
			f(i);
		usleep(100000);
	}
	exit(0); /* runs the destructors: a normal flush */
	return arg;
}

/* fork N kill|exit|normal | exit N | early N | zombie | forks N */
int main(int argc, char **argv)
{
	const char *mode = argv[1];
	long n = argc > 2 ? atol(argv[2]) : 0;
	int p[2], st;
	char c;

	if (!strcmp(mode, "exit")) {
		for (long i = 0; i < n; i++)
			f(i);
		_exit(3); /* no destructor: no flush */
	}
	if (!strcmp(mode, "forks")) { /* N children that each end by _exit */
		for (long k = 0; k < n; k++) {
			pid_t c = fork();
			if (c == 0) {
				for (long i = 0; i < 100; i++)
					f(i);
				_exit(0);
			}
			waitpid(c, &st, 0);
		}
		return 0;
	}
	if (!strcmp(mode, "zombie")) {
		pid_t pid = fork();
		if (pid == 0) {
			pthread_t t;
			pthread_create(&t, NULL, worker, NULL);
			pthread_exit(NULL);
		}
		f(1);
		waitpid(pid, &st, 0);
		return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	if (pipe(p))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		for (long i = 0; i < 2 * n; i++)
			f(i);
		if (!strcmp(argv[3 - !strcmp(mode, "early")], "exit"))
			_exit(0);
		if (!strcmp(argv[3 - !strcmp(mode, "early")], "normal"))
			exit(0);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	for (long i = 0; i < n; i++)
		f(i);
	if (!strcmp(mode, "early") || !strcmp(argv[3], "kill")) {
		if (read(p[0], &c, 1) != 1)
			return 1;
		kill(pid, SIGKILL);
	}
	waitpid(pid, &st, 0);
	if (!strcmp(mode, "early")) {
		/* dead child, live parent: until the test has looked (20 s at most) */
		struct pollfd in = {.fd = 0, .events = POLLIN};
		printf("%d\n", (int)pid);
		fflush(stdout);
		poll(&in, 1, 20000);
		for (long i = 0; i < n; i++)
			f(i);
	}
	return 0;
}
EOF
cc_recorded uf uf.c
record_san
ulimit -S -c 0

# calls_of DIR PID: the calls `dynftrace info` counts for thread PID of process PID
calls_of() {
	"$DFT" info -d "$1" 2>/dev/null | awk -v p="$2" '$2 == p && $3 == p { gsub(",", ""); print $5 }'
}
lost_total() {
	"$DFT" info -d "$1" 2>/dev/null | awk '/^# lost events/ { gsub(",", "", $5); print $5 }'
}

# said_lost DIR PID: info, replay, report and record say PID's buffered events were lost
said_lost() {
	local want="process $2 ended (killed, or _exit) before it could flush: events buffered in memory were lost (up to 4,096 KiB per thread, not counted)"
	"$DFT" info -d "$1" >info.txt 2>&1
	"$DFT" replay -d "$1" >replay.txt 2>&1
	"$DFT" report -d "$1" >report.txt 2>&1
	[ "$(grep -c "^unflushed: $2 " "$1/info")" = 1 ] && grep -q "^unflushed: $2 0 lost\$" "$1/info" &&
		grep -q "^# $want" info.txt && grep -q "^# $want" replay.txt && grep -q "^# $want" report.txt &&
		grep -q "^# lost events *: [0-9,]*, and more not counted" info.txt &&
		grep -q "warning: $want" err
}

N=20000
# ---- without buffer files: a child killed, a child's _exit ------------------
for how in kill exit; do
	DYNFTRACE_RING_TEST_NOSHM=1 recorded s ./uf fork $N $how
	if [ $rc -eq 0 ] && [ -n "$cpid" ] && grep -q "^noshm: $cpid $cpid\$" s/info &&
		! grep -q "^flushed: $cpid\$" s/info && grep -q "^flushed: $pid\$" s/info &&
		said_lost s "$cpid" && ! grep -q "^unflushed: $pid " s/info &&
		[ "$(calls_of s "$pid")" = $((N + 1)) ]; then
		ok "without buffer files, a forked child that ends by $how: its events said lost, the parent's $((N + 1)) calls intact"
	else
		notok "without buffer files, a forked child that ends by $how: status $rc, parent $pid, child $cpid"
		diag_file s/info 30
		diag_file info.txt 30
		diag_file err 5
	fi
done

# ---- without buffer files: the main process's _exit -------------------------
DYNFTRACE_RING_TEST_NOSHM=1 recorded s ./uf exit $N
if [ $rc -eq 3 ] && grep -q "^started: $pid [1-9][0-9]*\$" s/info && said_lost s "$pid"; then
	ok "without buffer files, the main process's _exit: its events said lost"
else
	notok "without buffer files, the main process's _exit: status $rc, pid $pid"
	diag_file s/info 30
	diag_file info.txt 30
fi

# ---- a child that exits normally: flushed, nothing to say ---------------------
for noshm in 0 1; do
	DYNFTRACE_RING_TEST_NOSHM=$noshm recorded s ./uf fork $N normal
	if [ $rc -eq 0 ] && [ -n "$cpid" ] && grep -q "^flushed: $cpid\$" s/info &&
		! grep -q '^unflushed:' s/info && ! grep -q '^salvaged:' s/info &&
		[ "$(calls_of s "$cpid")" = $((2 * N)) ] && [ "$(lost_total s)" = 0 ] && ! grep -q "could flush" err; then
		ok "a child that exits normally (NOSHM=$noshm): flushed, all its calls, nothing said"
	else
		notok "a child that exits normally (NOSHM=$noshm): status $rc, child $cpid: $(calls_of s "$cpid") calls"
		diag_file s/info 30
		diag_file err 5
	fi
done

# ---- recovered while the program still runs -----------------------------------
N=200000
rm -f in.fifo out.fifo
mkfifo in.fifo out.fifo
"$DFT" record $HIDE -d e ./uf early $N <in.fifo >out.fifo 2>err &
rpid=$!
exec 3>in.fifo
read -r cpid <out.fifo
pid=$(sed -n 's/^pid: //p' e/info | sed -n 1p)
early=1
for i in $(seq 100); do # 10 s at most; one scan a second
	if ! ls /dev/shm/dynftrace-"$rpid".*/"$cpid"-* >/dev/null 2>&1 &&
		grep -q "^salvaged: $cpid $cpid " e/info; then
		early=0
		break
	fi
	sleep 0.1
done
kill -0 "$pid" 2>/dev/null
alive=$?
echo q >&3
exec 3>&-
wait $rpid
rc=$?
check $((early + alive)) "a child SIGKILLed while its parent runs: its buffer files recovered and removed before the parent ends"
"$DFT" replay -d e --no-time >replay.txt 2>replay.err
if [ $rc -eq 0 ] && [ -n "$cpid" ] && [ ! -s replay.err ] && [ "$(calls_of e "$cpid")" = $((2 * N)) ] &&
	[ "$(calls_of e "$pid")" = $((2 * N + 1)) ] && [ "$(lost_total e)" = 0 ] &&
	[ "$(grep -c "^salvaged: $cpid " e/info)" = 1 ] &&
	[ "$(grep -c "^unflushed: $cpid " e/info)" = 1 ] && grep -q "^unflushed: $cpid 0 recovered\$" e/info &&
	! ls -d /dev/shm/dynftrace-"$rpid".* >/dev/null 2>&1; then
	ok "recovered early: the child's $((2 * N)) calls exactly once, the parent's intact, nothing lost"
else
	notok "recovered early: status $rc, child $cpid: '$(calls_of e "$cpid")' calls, parent '$(calls_of e "$pid")', lost '$(lost_total e)'"
	diag_file e/info 30
	diag_file replay.err 5
	diag_file err 5
fi

# ---- several children that end by _exit: recovered whole, said once -----------
recorded x ./uf forks 6
"$DFT" replay -d x >replay.txt 2>&1
"$DFT" info -d x >info.txt 2>&1
want="6 processes ([0-9, .]*) ended (killed, or _exit) before they could flush: dynftrace record recovered their buffers from shared memory (1,200 events"
if [ $rc -eq 0 ] && [ "$(grep -c "^unflushed: .* recovered\$" x/info)" = 6 ] && [ "$(lost_total x)" = 0 ] &&
	[ "$(grep -c "could flush" err)" = 1 ] && grep -q "warning: $want" err &&
	[ "$(grep -c "could flush" replay.txt)" = 1 ] && grep -q "^# $want" replay.txt &&
	[ "$(grep -c "could flush" info.txt)" = 1 ]; then
	ok "six children that end by _exit: recovered whole, one line for them in record, replay and info"
else
	notok "six children that end by _exit: status $rc, lost '$(lost_total x)'"
	diag_file err 10
	diag_file replay.txt 5
fi

# ---- a main thread's pthread_exit is not the process's death ------------------
recorded z ./uf zombie
"$DFT" info -d z >info.txt 2>&1
ccalls=$(awk -v p="$cpid" '$2 == p && $3 != p { gsub(",", ""); print $5 }' info.txt)
if [ $rc -eq 0 ] && [ -n "$cpid" ] && [ "$ccalls" = 30001 ] && [ "$(lost_total z)" = 0 ] &&
	! grep -q '^salvaged:\|^unflushed:' z/info && "$DFT" replay -d z >/dev/null 2>replay.err &&
	[ ! -s replay.err ]; then
	ok "a child's main thread ended, another traced for 3 s: not taken for dead, its $ccalls calls exact"
else
	notok "main thread ended: status $rc, child $cpid, worker calls '$ccalls'"
	diag_file info.txt 20
	diag_file z/info 30
	diag_file replay.err 5
fi
tap_end
