#!/usr/bin/env bash
# description: record/live end to end: environment, info file, exit status, signals, tracers, losses, disk full
# config: asan
#
#  - record passes its options to the runtime through the environment
#    (checked with a script that prints it) and writes the info header;
#  - exit status: the program's, 128+N for signal N; SIGTERM sent to record
#    reaches the program; an old session is replaced;
#  - live prints the replay and removes its temporary session (--keep keeps it);
#  - with the runtime: function_graph, -F, function, profile and -t
#    recordings read back by replay/report; a tiny buffer reports its losses
#    exactly (events in the streams + lost = events the program made); a file
#    size limit (disk full) keeps what was written readable and reports the
#    loss. The runtime parts SKIP while the runtime does not record;
#  - fatal signals (also in the asan configuration, which runs only these):
#    a program killed by SIGSEGV, abort(), SIGTERM from outside still leaves
#    its trace and dies of that signal (same status, same core dump); its own
#    SIGSEGV handler runs and sigaction shows what it set; an inherited
#    SIG_IGN stays; with several threads, the workers' events are all in the
#    streams or counted lost (quiet), or all but one in flight each (while
#    they trace); the profile tracer's table is written too (report counts
#    the calls that returned before the signal, the workers' included).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
cd "$T" || exit 1

# ---- fatal signals -------------------------------------------------------
# A program killed by a signal still leaves its trace (the runtime flushes
# its buffers from a handler of its own, only where the disposition is
# SIG_DFL), and still dies of that signal. Run by the default and the asan
# configurations (under ASan, SIGSEGV belongs to ASan: those parts skip).
cat >fatal.c <<'EOF'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
volatile int sink;
volatile int *volatile nowhere;
static int nready, keep_tracing;
static long calls;
__attribute__((noinline)) void leaf(void) { sink++; }
__attribute__((noinline)) void f(void) { leaf(); sink++; }
__attribute__((noinline)) void g(void) { f(); sink++; }
__attribute__((noinline)) void crash(const char *how)
{
	if (!strcmp(how, "abort"))
		abort();
	*nowhere = 1;
}
static void handler(int sig)
{
	static const char m[] = "handler called\n";
	if (write(2, m, sizeof(m) - 1) < 0)
		sink++;
	signal(sig, SIG_DFL);
	raise(sig); /* blocked here: delivered when the handler returns */
}
static void handler_exit(int sig)
{
	static const char m[] = "handler called\n";
	if (write(2, m, sizeof(m) - 1) < 0)
		sink += sig;
	_exit(7);
}
/* What sigaction tells the program. */
static void disp(int sig)
{
	struct sigaction a;
	sigaction(sig, NULL, &a);
	printf("%s flags %#x mask %d%d\n",
	       a.sa_handler == SIG_DFL ? "SIG_DFL" : a.sa_handler == SIG_IGN ? "SIG_IGN" :
	       a.sa_handler == handler || a.sa_handler == handler_exit ? "handler" : "other",
	       (unsigned)a.sa_flags, sigismember(&a.sa_mask, sig), sigismember(&a.sa_mask, SIGUSR2));
}
static void *worker(void *arg)
{
	for (long i = 0; i < calls; i++)
		g();
	__atomic_fetch_add(&nready, 1, __ATOMIC_SEQ_CST);
	for (long i = 0; keep_tracing && i < calls; i++)
		g(); /* while main crashes, or not: at most CALLS more */
	for (;;)
		pause();
	return arg;
}
int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "segv";
	g();
	f();
	if (!strcmp(mode, "segv") || !strcmp(mode, "abort"))
		crash(mode);
	if (!strcmp(mode, "term")) {
		printf("%d\n", (int)getpid());
		fflush(stdout);
		for (long i = 0; i < 200000; i++)
			g();
		for (;;)
			pause();
	}
	if (!strncmp(mode, "handler", 7)) {
		void (*h)(int) = mode[7] ? handler_exit : handler;
		struct sigaction a;
		memset(&a, 0, sizeof(a));
		sigemptyset(&a.sa_mask);
		sigaddset(&a.sa_mask, SIGUSR2);
		disp(SIGSEGV);
		signal(SIGSEGV, h);
		disp(SIGSEGV);
		a.sa_handler = SIG_DFL;
		sigaction(SIGSEGV, &a, NULL);
		disp(SIGSEGV);
		signal(SIGSEGV, h);
		fflush(stdout);
		crash("segv");
	}
	if (!strcmp(mode, "ign")) {
		disp(SIGHUP);
		raise(SIGHUP);
		printf("alive\n");
		return 0;
	}
	/* threads N CALLS run|quiet segv|abort */
	int n = atoi(argv[2]);
	calls = atol(argv[3]);
	keep_tracing = !strcmp(argv[4], "run");
	for (int i = 0; i < n; i++) {
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
	}
	while (__atomic_load_n(&nready, __ATOMIC_SEQ_CST) < n)
		sched_yield();
	crash(argv[5]);
	return 0;
}
EOF
cat >waitst.c <<'EOF'
/* waitst PROG ARGS: how PROG ended, as its parent sees it */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int st;
	pid_t p = fork();
	if (p == 0) {
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	if (argc < 2 || waitpid(p, &st, 0) != p)
		return 1;
	if (WIFSIGNALED(st))
		printf("killed by signal %d%s\n", WTERMSIG(st), WCOREDUMP(st) ? ", core dumped" : "");
	else
		printf("exit status %d\n", WEXITSTATUS(st));
	return 0;
}
EOF

# info_num DIR FIELD: a number of `dynftrace info` ("events" or "lost")
info_num() {
	"$DFT" info -d "$1" 2>/dev/null | awk -v k="$2" '
		k == "events" && /^# events / { gsub(",", "", $4); print $4 }
		k == "lost" && /^# lost events/ { gsub(",", "", $5); print $5 }
		k == "overwritten" && /^# overwritten/ { gsub(",", "", $4); print $4 }'
}

# fatal_case NAME SIG CMD...: record CMD into f/; status 128+SIG, the runtime's
# "signal:" line and record's "exit: ... signal SIG" line, a readable trace.
fatal_case() {
	local name=$1 sig=$2 rc
	shift 2
	"$DFT" record $HIDE -d f "$@" >out 2>err
	rc=$?
	if [ $rc -eq $((128 + sig)) ] && grep -Eq "^exit: [0-9]+ signal $sig\$" f/info &&
		grep -Eq "^signal: [0-9]+ [0-9]+ $sig\$" f/info &&
		"$DFT" replay -d f --no-time >replay.txt 2>replay.err; then
		sed -E 's/^\[ *[0-9]+\]/[TID]/' replay.txt >trace.txt
		return 0
	fi
	notok "$name: record status $rc (want $((128 + sig))), or no trace"
	diag_file err 5
	diag_file f/info 20
	diag_file replay.err 5
	return 1
}

fatal_signal_tests() {
	local flags="-O1 -g $TRACE_FLAGS $SANFLAGS"
	if ! $CC $flags fatal.c -o fatal -lpthread 2>build.log || ! $CC -O1 waitst.c -o waitst 2>>build.log; then
		notok "build the fatal-signal programs"
		diag_file build.log
		return
	fi
	ulimit -S -c 0

	if [ "$SAN" = asan ]; then
		skip "SIGSEGV: ASan's own handler reports it (the program's handler wins)"
	elif fatal_case "SIGSEGV" 11 ./fatal segv; then
		cat >want <<'EOF'
#     TID  FUNCTION
[TID] | main() {
[TID] |   g() {
[TID] |     f() {
[TID] |       leaf();
[TID] |     } /* f */
[TID] |   } /* g */
[TID] |   f() {
[TID] |     leaf();
[TID] |   } /* f */
[TID] |   crash(); (unfinished)
[TID] | } /* main */ (unfinished)
EOF
		diff -u want trace.txt >diff.txt
		check $? "SIGSEGV: status 139, 'signal 11', replay shows every call up to the fault"
		[ -s diff.txt ] && diag_file diff.txt
	fi

	if fatal_case "abort()" 6 ./fatal abort; then
		grep -q '^\[TID\] |   crash(); (unfinished)$' trace.txt &&
			grep -q '^\[TID\] |     leaf();$' trace.txt && [ "$(info_num f lost)" = 0 ]
		check $? "abort(): status 134, 'signal 6', the calls before it, nothing lost"
		[ $? -ne 0 ] && diag_file trace.txt
	fi

	# The profile tracer writes its table at a fatal signal too: the calls
	# that returned before it (g once, f and leaf twice; main and crash were
	# still open), with the workers' (each called g() K times, then waits).
	local psig=11 phow=segv args rc
	[ "$SAN" = asan ] && psig=6 phow=abort
	for args in "$phow" "threads 3 1000 quiet $phow"; do
		local pg=1 pf=2
		[ "$args" = "$phow" ] || pg=3001 pf=3002
		"$DFT" record $HIDE -T profile -d p ./fatal $args >out 2>err
		rc=$?
		"$DFT" report -d p >report.txt 2>report.err
		[ $rc -eq $((128 + psig)) ] && grep -Eq "^exit: [0-9]+ signal $psig\$" p/info &&
			awk -v g=$pg -v f=$pf '$NF == "g" && $(NF-1) == g { a++ }
				$NF == "f" && $(NF-1) == f { a++ } $NF == "leaf" && $(NF-1) == f { a++ }
				$NF == "main" || $NF == "crash" { a = -9 }
				/^# profile-[0-9.]+\.txt: written at fatal signal/ { b = 1 }
				END { exit !(a == 3 && b) }' report.txt
		local bad=$?
		check $bad "profile, $args: status $((128 + psig)), report counts g $pg, f and leaf $pf (open calls left out)"
		[ $bad -ne 0 ] && { diag_file report.txt; diag_file report.err 5; diag_file err 5; }
	done

	# SIGTERM from outside, while main traces g() 200,000 times (an event
	# may be in flight: it is lost and counted) or after: the pid comes
	# through a fifo when main starts, no sleep.
	rm -f fifo
	mkfifo fifo
	"$DFT" record $HIDE -d f ./fatal term >fifo 2>err &
	local rpid=$! pid=
	read -r pid <fifo
	[ -n "$pid" ] && kill -TERM "$pid"
	wait $rpid
	local rc=$?
	if [ -n "$pid" ] && [ $rc -eq 143 ] && grep -Eq '^exit: [0-9]+ signal 15$' f/info &&
		grep -q "^signal: $pid $pid 15\$" f/info && "$DFT" replay -d f --no-time >replay.txt 2>replay.err &&
		grep -q '^\[ *[0-9]*\] |   g() {$' replay.txt; then
		ok "SIGTERM from outside: status 143, 'signal 15', the trace up to it ($(info_num f events) events, $(info_num f lost) lost)"
	else
		notok "SIGTERM from outside: pid '$pid', record status $rc"
		diag_file err 5
		diag_file f/info 20
		diag_file replay.err 5
	fi

	if [ "$SAN" = asan ]; then
		skip "own SIGSEGV handler: ASan's handler comes first"
	else
		# The program's own handler runs; sigaction says what the program set
		# (the same lines as without the runtime); when the handler puts
		# SIG_DFL back and raises, the buffers are flushed then.
		(./fatal handler >want 2>/dev/null) 2>/dev/null # the shell's "Segmentation fault"
		if fatal_case "own SIGSEGV handler" 11 ./fatal handler; then
			diff -u want out >diff.txt && grep -q '^handler called$' err &&
				grep -q '^\[TID\] |   crash() {$' trace.txt &&
				grep -q '^\[TID\] |     handler();$' trace.txt
			check $? "own SIGSEGV handler: called, sigaction shows the program's settings, trace flushed after it"
			diag_file diff.txt
		fi
		./fatal handler-exit >want 2>/dev/null
		"$DFT" record -d f ./fatal handler-exit >out 2>err
		rc=$?
		diff -u want out >diff.txt && [ $rc -eq 7 ] && grep -q '^handler called$' err &&
			grep -Eq '^exit: [0-9]+ status 7$' f/info && ! grep -q '^signal:' f/info
		check $? "own SIGSEGV handler that exits: it runs, the runtime does nothing (status 7)"
		diag_file diff.txt
	fi

	# SIG_IGN inherited through exec stays ignored.
	(trap '' HUP && "$DFT" record -d f ./fatal ign >out 2>err)
	rc=$?
	[ $rc -eq 0 ] && grep -q '^SIG_IGN ' out && grep -q '^alive$' out && ! grep -q '^signal:' f/info
	check $? "an inherited SIG_IGN stays: the program survives its raise(SIGHUP)"

	# Several threads; main crashes. quiet: the workers made N x K calls and
	# stopped, so every event is in the streams or counted lost, exactly,
	# even with a tiny buffer. run: they trace meanwhile; nobody waits for
	# them, a worker caught inside an event loses that one (<= 1 each), and
	# its calls before the crash are all there.
	local how=segv s=11 n=3 k=20000
	[ "$SAN" = asan ] && how=abort s=6
	local want=$((12 + n * (1 + 6 * k))) b ev lost over
	for b in "" "-b 8" "--overwrite -b 8"; do
		fatal_case "$n threads, $how, quiet ${b:+($b)}" $s $b ./fatal threads $n $k quiet $how || continue
		ev=$(info_num f events)
		lost=$(info_num f lost)
		over=$(info_num f overwritten)
		# Overwrite mode: every loss is an overwritten event (the threads
		# were quiet), said apart and not warned of; else none is.
		case $b in
		--overwrite*) [ "${over:-0}" -eq "$lost" ] && [ "$lost" -gt 0 ] &&
			grep -q "overwrite mode kept the newest events: [0-9,]* older ones were overwritten" err &&
			! grep -q "warning: thread .* lost" err ;;
		*) [ -z "$over" ] && ! grep -q "^overwritten:" f/info ;;
		esac
		local split=$? entries=$n
		# (overwrite mode keeps the newest: the workers' entries are gone)
		[ "${b#--overwrite}" != "$b" ] && entries=0
		[ "$(grep -c '^\[TID\] | worker() {$' trace.txt)" -eq $entries ] && [ -n "$ev" ] &&
			[ $((ev + lost)) -eq $want ] && { [ -n "$b" ] || [ "$lost" -eq 0 ]; } && [ $split -eq 0 ]
		check $? "$n threads, main killed by $how, workers quiet${b:+, $b}: $ev events + $lost lost = $want made${over:+ ($over overwritten)}"
		[ $? -ne 0 ] && { diag_file err 5; grep -E "^(lost|overwritten):" f/info | diag_file /dev/stdin; }
	done
	for i in 1 2 3; do
		fatal_case "$n threads, $how, running (run $i)" $s ./fatal threads $n $k run $how || continue
		lost=$(info_num f lost)
		"$DFT" info -d f 2>/dev/null | awk -v n=$n -v k=$k '
			/^# +[0-9]+ +[0-9]+ / { gsub(",", ""); if ($5 >= 3 * k + 1) w++ }
			END { exit !(w == n) }'
		local full=$?
		[ "$(grep -c '^\[TID\] | worker() {$' trace.txt)" -eq $n ] && [ $full -eq 0 ] &&
			[ -n "$lost" ] && [ "$lost" -le $n ]
		check $? "$n threads tracing while main dies of $how (run $i): readable, all their calls before it, $lost lost (<= $n)"
		[ $? -ne 0 ] && "$DFT" info -d f 2>&1 | sed -n '/PID/,$p' | diag_file /dev/stdin
	done

	# Death as without the runtime: same signal, same core dump (when cores
	# go to a file in the current directory). Default configuration (ASan
	# disables cores).
	local pat
	pat=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
	if [ -z "$SAN" ] && [ -n "$pat" ] && [ "${pat#|}" = "$pat" ] && [ "${pat#*/}" = "$pat" ] &&
		(ulimit -c unlimited) 2>/dev/null; then
		mkdir -p c1 c2
		local a c
		a=$(cd c1 && ulimit -c unlimited && ../waitst ../fatal segv 2>/dev/null)
		c=$(cd c2 && ulimit -c unlimited && mkdir s && printf 'version: 1\n' >s/info &&
			../waitst env DYNFTRACE_RECORD="$T/c2/s" LD_PRELOAD="$B/libdynftrace.so" \
				../fatal segv 2>/dev/null)
		[ "$a" = "$c" ] && [ -n "$(ls c2/s/ctf/stream-* 2>/dev/null)" ]
		check $? "death by SIGSEGV as without the runtime: '$c' (without: '$a')"
		rm -rf c1 c2
	else
		skip "core dumps: not written to a file here"
	fi
}

record_san
if [ "$SAN" = asan ]; then
	fatal_signal_tests
	tap_end
	exit $?
elif [ -n "$SAN" ]; then
	skip "end-to-end recording runs in the default and asan configurations only"
	exit 0
fi

cat >env.sh <<'EOF'
#!/bin/sh
env | grep -E '^(LD_PRELOAD|DYNFTRACE_[A-Z_]*)=' | grep -v '^DYNFTRACE_TEST_CONFIG=' | sort >"$OUT"
exit 3
EOF
chmod +x env.sh
OUT=$T/env.txt LD_PRELOAD=libc.so.6 "$DFT" record -d s1 -T function -F 'a*' -F b,c -N n -D 3 \
	-t 10us -b 64 --overwrite --disabled -- ./env.sh "x y" >/dev/null 2>"$T/err"
rc=$?
check $([ $rc -eq 3 ] && echo 0 || echo 1) "record: exits with the program's status (3)"
cat >want.txt <<EOF
DYNFTRACE_BUFFER_KB=64
DYNFTRACE_CONTROL=1
DYNFTRACE_DEPTH=3
DYNFTRACE_DISABLED=1
DYNFTRACE_FILTER=a*,b,c
DYNFTRACE_NOTRACE=n
DYNFTRACE_OVERWRITE=1
DYNFTRACE_RECORD=$T/s1
DYNFTRACE_RELOC_CACHE=$T/s1/cache
DYNFTRACE_SHM=/dev/shm/dynftrace-RECORDPID.XXXXXX
DYNFTRACE_TIME_FILTER=10000
DYNFTRACE_TRACER=function
LD_PRELOAD=$(cd "$B" && pwd -P)/libdynftrace.so:libc.so.6
EOF
sed -i -E 's|^(DYNFTRACE_SHM=/dev/shm/dynftrace-)[0-9]+\.[A-Za-z0-9]{6}$|\1RECORDPID.XXXXXX|' env.txt
diff -u want.txt env.txt >diff.txt
check $? "record: the runtime's environment (absolute session dir, LD_PRELOAD prepended, buffer files' directory)"
[ $? -ne 0 ] && diag_file diff.txt
grep -q "^command: ./env.sh 'x y'$" s1/info && grep -q '^tracer: function$' s1/info &&
	grep -q '^filter: a\*,b,c$' s1/info && grep -q '^notrace: n$' s1/info &&
	grep -q '^depth: 3$' s1/info && grep -q '^time_filter_ns: 10000$' s1/info &&
	grep -q '^buffer_kb: 64$' s1/info && grep -q '^overwrite: 1$' s1/info &&
	grep -Eq '^start_ns: [0-9]+$' s1/info && grep -Eq '^exit: [0-9]+ status 3$' s1/info &&
	grep -Eq '^end_ns: [0-9]+$' s1/info && [ -d s1/ctf ] && head -1 s1/info | grep -q '^version: 1$'
check $? "record: info header, exit line and end time"

touch s1/old-marker
OUT=$T/env.txt "$DFT" record -d s1 ./env.sh >/dev/null 2>&1
check $([ ! -e s1/old-marker ] && [ -f s1/info ] && echo 0 || echo 1) "record: an old session is replaced"

cat >sleeper.sh <<'EOF'
#!/bin/sh
exec sleep 30
EOF
chmod +x sleeper.sh
"$DFT" record -d s2 ./sleeper.sh >/dev/null 2>"$T/err" &
rpid=$!
# once the program runs (record set its handlers before it started it):
# not a fixed sleep, record may take long to start (a loaded machine, an
# emulator)
for _ in $(seq 300); do
	pgrep -P $rpid -x sleep >/dev/null && break
	sleep 0.1
done
kill -TERM $rpid
wait $rpid
rc=$?
check $([ $rc -eq 143 ] && grep -Eq '^exit: [0-9]+ signal 15$' s2/info && echo 0 || echo 1) \
	"record: SIGTERM is passed to the program; status 143, 'signal 15' in info"
check $([ "$(grep -c 'killed' "$T/err")" -eq 1 ] &&
	grep -q '^dynftrace: \./sleeper.sh was killed by signal 15 (Terminated)$' "$T/err" && echo 0 || echo 1) \
	"record: one sentence says the program was killed"

# ---- with the runtime ----------------------------------------------------
cat >prog.c <<'EOF'
#include <stdlib.h>
#include <time.h>
volatile int sink;
__attribute__((noinline)) void leaf(void) { sink++; }
__attribute__((noinline)) void f(void) { leaf(); sink++; }
__attribute__((noinline)) void slow(void)
{
	struct timespec ts = {0, 3000000};
	nanosleep(&ts, 0);
	sink++;
}
__attribute__((noinline)) void loop(long n)
{
	for (long i = 0; i < n; i++)
		leaf();
	sink++;
}
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	if (n < 0) {
		struct timespec ts = {0, 1000000};
		f();
		nanosleep(&ts, 0);
		abort();
	}
	f();
	slow();
	loop(n);
	return 0;
}
EOF
$CC -O1 -g $TRACE_FLAGS prog.c -o prog || { notok "build prog"; exit 1; }

"$DFT" record -d g ./prog >/dev/null 2>&1
if ! ls g/ctf/stream-* >/dev/null 2>&1; then
	skip "the runtime does not record yet: no stream after 'dynftrace record'"
	tap_end
	exit $?
fi
"$DFT" replay -d g --no-time >out 2>err
cat >want <<'EOF'
#     TID  FUNCTION
[TID] | main() {
[TID] |   f() {
[TID] |     leaf();
[TID] |   } /* f */
[TID] |   slow();
[TID] |   loop();
[TID] | } /* main */
EOF
sed -E 's/^\[ *[0-9]+\]/[TID]/' out | diff -u want - >diff.txt
check $? "record + replay: function_graph"
[ -s diff.txt ] && diag_file diff.txt

"$DFT" report -d g >out 2>err
awk '$NF == "slow" && $2 == "ms" && $1 >= 3 && $(NF-1) == 1 { found = 1 } END { exit !found }' out
check $? "report: slow() took 3 ms or more, once"

"$DFT" record -d g -F f ./prog >/dev/null 2>&1
"$DFT" replay -d g --no-time | sed -E 's/^\[ *[0-9]+\]/[TID]/' >out
printf '#     TID  FUNCTION\n[TID] | f() {\n[TID] |   leaf();\n[TID] | } /* f */\n' | diff -u - out >diff.txt
check $? "record -F f: f and its callees only"
[ -s diff.txt ] && diag_file diff.txt

"$DFT" record -d g -T function ./prog 2 >/dev/null 2>&1
"$DFT" replay -d g >out 2>err
grep -Eq '^ +[0-9]+\.[0-9]{9} \[ *[0-9]+\] leaf\(\) <- f$' out && grep -Eq '\] leaf\(\) <- loop$' out &&
	[ "$(grep -c 'leaf() <- loop' out)" -eq 2 ] && head -1 out | grep -q TIMESTAMP
check $? "record -T function: flat lines with callers"
for o in "-t 1us" "-D 1"; do
	"$DFT" replay -d g $o >out2 2>err
	cmp -s out out2 && grep -q "warning: g: the function tracer records no durations or depths: -t and -D do nothing" err
	check $? "replay $o on a function-tracer session: said to do nothing"
done
"$DFT" report -d g >out 2>&1
[ "$(awk 'NR == 3 { print $NF }' out)" = leaf ]
check $? "report of a function-tracer session: most calls first (no durations to sort by)"
"$DFT" record --force -d many -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do ./prog 1; done' >/dev/null 2>&1
"$DFT" info -d many >out 2>&1
line=$(grep '^# processes' out)
[ "$(echo "$line" | wc -w)" -le 24 ] && echo "$line" | grep -Eq ' \.\.\. 2[0-9] in all$'
check $? "info names 16 processes and counts the rest ($line)"

"$DFT" record -d g -T profile ./prog 5 >/dev/null 2>&1
"$DFT" report -d g >out 2>err
awk '$NF == "leaf" && $(NF-1) == 6 { a = 1 } $NF == "slow" && $2 == "ms" { b = 1 } END { exit !(a && b) }' out
check $? "record -T profile: report reads the runtime's table (leaf called 6 times)"
[ $? -ne 0 ] && diag_file out
for v in "graph leaf" "dump --chrome -o x.json"; do
	"$DFT" $v -d g >out 2>err
	rc=$?
	[ $rc -eq 1 ] && [ ! -s out ] &&
		grep -q "was recorded by the profile tracer, which keeps a table .*see 'dynftrace report -d g'" err
	check $? "${v%% *} on a profile session: says that only report reads it (status $rc)"
done
"$DFT" record -d g -t 1us -A 'leaf@arg1' -A 'nosuch_fn@arg1' ./prog 5 >/dev/null 2>err
grep -q "warning: with -t, calls are recorded whole, without their values: -A, -R and --auto-args are ignored" err &&
	grep -q "warning: -A/-R 'nosuch_fn' matched no function traced in this run" err &&
	! grep -q "'leaf' matched no" err
check $? "record -t -A: the values are said to be ignored, an -A that matched nothing is named"

# A recursive function's total counts its outermost calls only (as from a
# function_graph trace), never more than its caller's; the average is over
# every call, so it is below the total of the one outermost call.
cat >rec.c <<'EOF'
#include <stdio.h>
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void) { printf("%ld\n", fib(16)); return 0; }
EOF
$CC -O1 -g $TRACE_FLAGS rec.c -o rec || { notok "build rec"; exit 1; }
"$DFT" record -d g -T profile ./rec >/dev/null 2>&1
"$DFT" report -d g >out 2>err
# the total column in ns (its unit is the word after the number)
awk 'function ns(v, u) { return u == "s" ? v * 1e9 : u == "ms" ? v * 1e6 : u == "us" ? v * 1e3 : v }
	$NF == "fib" { ft = ns($1, $2); fa = ns($5, $6); fc = $(NF-1) }
	$NF == "main" { mt = ns($1, $2) }
	END { exit !(fc == 3193 && ft > 0 && ft <= mt && fa < ft) }' out
check $? "record -T profile: a recursive function's total counts its outermost call only"
[ $? -ne 0 ] && diag_file out

"$DFT" record -d g -t 1ms ./prog 3 >/dev/null 2>&1
"$DFT" replay -d g --no-time | sed -E 's/^\[ *[0-9]+\]/[TID]/' >out
printf '#     TID  FUNCTION\n[TID] | main() {\n[TID] |   slow();\n[TID] | } /* main */\n' | diff -u - out >diff.txt
check $? "record -t 1ms: only the calls of 1 ms or more, nested"
[ -s diff.txt ] && diag_file diff.txt

"$DFT" record -d g ./prog -1 >/dev/null 2>err
rc=$?
check $([ $rc -eq 134 ] && grep -Eq '^exit: [0-9]+ signal 6$' g/info && echo 0 || echo 1) \
	"record: a program killed by SIGABRT: status 134, 'signal 6' in info"
"$DFT" replay -d g --no-time | sed -E 's/^\[ *[0-9]+\]/[TID]/' >out
grep -q '^\[TID\] |   f() {$' out && grep -q '^\[TID\] | } /\* main \*/ (unfinished)$' out
check $? "record: the trace of a program killed by SIGABRT is flushed, closed and marked"

fatal_signal_tests

mkdir tmp
TMPDIR=$T/tmp "$DFT" live ./prog >out 2>err
rc=$?
grep -q '| main() {$' out && [ -z "$(ls tmp)" ] && [ $rc -eq 0 ] && [ ! -s err ]
check $? "live: prints the trace, removes its temporary session"
# A reader that leaves early (| head): the session still goes, and live
# ends as a pipeline's writer does (SIGPIPE).
TMPDIR=$T/tmp "$DFT" live ./prog 20000 2>err | head -2 >out
rc=${PIPESTATUS[0]}
[ "$(wc -l <out)" -eq 2 ] && [ -z "$(ls tmp)" ] && [ $rc -eq 141 ] && [ ! -s err ]
check $? "live | head: the temporary session is removed all the same (status $rc)"
TMPDIR=$T/tmp "$DFT" live --keep --no-time ./prog >out 2>err
kept=$(ls -d tmp/dynftrace-live.* 2>/dev/null)
[ -n "$kept" ] && [ -f "$kept/info" ] && grep -q "the trace is kept in '$T/$kept'" err &&
	grep -q '^\[ *[0-9]*\] | main() {$' out
check $? "live --keep: the session stays and its place is said"

# Losses: a tiny buffer; every event made is either in the streams or lost.
N=200000
"$DFT" record -d g -b 8 ./prog $N >/dev/null 2>err
"$DFT" info -d g >out 2>/dev/null
ev=$(awk '/^# events / { gsub(",", "", $4); print $4 }' out)
lost=$(awk '/^# lost events/ { gsub(",", "", $5); print $5 }' out)
want=$((2 * (N + 5))) # main f leaf slow loop, N more leaf
if [ -n "$ev" ] && [ -n "$lost" ] && [ "$lost" -gt 0 ] && [ $((ev + lost)) -eq $want ]; then
	ok "-b 8: $ev events recorded + $lost lost = $want made"
else
	notok "-b 8: events $ev + lost $lost should be $want, lost > 0"
	diag_file out 30
fi
grep -q 'warning: thread [0-9]* lost [0-9,]* events' err && "$DFT" replay -d g | grep -q '^# thread [0-9]* lost [0-9,]* events$'
check $? "-b 8: record warns of the losses, replay sums them up"
grep -q "of them were dropped because a thread's buffer was full.*-b KB, now 8" err &&
	"$DFT" info -d g | grep -q "^# dropped        : [0-9,]* of them: a thread's buffer was full"
check $? "-b 8: record and info say the losses were drops from a full buffer, and what helps"

# Exits dropped with a full buffer: the runtime owes them and writes one
# exit_lost before its next entry or exit, so that the reader never closes
# a call with another's exit: every call shows under a caller it has (a
# call whose entry was dropped is not shown: its callees go one up).
cat >nest.c <<'EOF2'
volatile int sink;
__attribute__((noinline)) void leaf(void) { sink++; }
__attribute__((noinline)) void inner(void) { leaf(); leaf(); }
__attribute__((noinline)) void outer(void) { inner(); leaf(); }
int main(void)
{
	for (int i = 0; i < 300000; i++)
		outer();
	return 0;
}
EOF2
if $CC -O1 $TRACE_FLAGS nest.c -o nest 2>build.log; then
	bad=0
	for i in 1 2 3; do
		"$DFT" record -b 8 -d nl ./nest >/dev/null 2>err || bad=1
		"$DFT" replay -d nl --no-time >out 2>&1 || bad=1
		awk '/\| / {
			l = $0; sub(/^.*\| /, "", l); match(l, /^ */); d = RLENGTH / 2
			l = substr(l, RLENGTH + 1)
			if (l ~ /^[}.]/) next
			n = l; sub(/\(.*/, "", n); p = d ? st[d - 1] : ""
			if ((n == "leaf" && p != "inner" && p != "outer" && p != "main") ||
			    (n == "inner" && p != "outer" && p != "main") || (n == "outer" && p != "main")) {
				print "line " NR ": " n " under " p; bad = 1; exit
			}
			st[d] = n
		} END { exit bad }' out >bad.txt || bad=1
		[ $bad = 0 ] || break
	done
	[ $bad = 0 ]
	check $? "-b 8, nested calls: no exit closes another call (each call under a caller it has)"
	[ $bad = 0 ] || { diag_file err 5; diag_file bad.txt; grep -c 'exit lost' out; }
else
	notok "build nest.c"
	diag_file build.log
fi

# The recording ends at exit: a worker that still calls traced functions
# while the runtime flushes (paced: its buffer never fills) loses nothing.
cat >tail.c <<'EOF2'
#include <pthread.h>
#include <time.h>
volatile int sink;
__attribute__((noinline)) void tick(void) { sink++; }
static void *worker(void *a)
{
	struct timespec ts = {0, 20000};
	for (;;) {
		for (int i = 0; i < 20; i++)
			tick();
		nanosleep(&ts, NULL);
	}
	return a;
}
int main(void)
{
	pthread_t t;
	struct timespec ts = {0, 100000000};
	pthread_create(&t, NULL, worker, NULL);
	nanosleep(&ts, NULL);
	return 0;
}
EOF2
if $CC -O1 $TRACE_FLAGS tail.c -o tail -lpthread 2>build.log; then
	bad=0
	for i in 1 2 3; do
		"$DFT" record -d tl ./tail >/dev/null 2>err || bad=1
		"$DFT" info -d tl >out 2>&1 || bad=1
		grep -q '^# lost events    : 0$' out && ! grep -q 'lost' err || bad=1
		[ $bad = 0 ] || break
	done
	[ $bad = 0 ]
	check $? "calls made after the recording ended (process exit) are not counted lost"
	[ $bad = 0 ] || { diag_file err 5; diag_file out 25; }
else
	notok "build tail.c"
	diag_file build.log
fi

# Disk full: a 64 KiB file size limit while recording many calls.
(ulimit -f 64 && "$DFT" record -d full ./prog 300000 >/dev/null 2>err)
rc=$?
"$DFT" replay -d full >out 2>rerr
rrc=$?
"$DFT" info -d full >info.txt 2>/dev/null
lost=$(awk '/^# lost events/ { gsub(",", "", $5); print $5 }' info.txt)
if [ $rc -eq 0 ] && [ $rrc -eq 0 ] && [ -n "$lost" ] && [ "$lost" -gt 0 ] && grep -q '| main() {' out &&
	grep -q '^# thread [0-9]* lost [0-9,]* events$' out; then
	ok "disk full: what was written replays, $lost events reported lost"
else
	notok "disk full: record $rc, replay $rrc, lost '$lost'"
	diag_file rerr
	diag_file info.txt 30
fi
tap_end
