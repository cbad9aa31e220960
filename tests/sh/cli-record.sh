#!/usr/bin/env bash
# description: record/live end to end: environment, info file, exit status, signals, tracers, losses, disk full
# config:
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
#    loss. The runtime parts SKIP while the runtime does not record.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
cd "$T" || exit 1

if [ -n "$SAN" ]; then
	skip "end-to-end recording runs in the default configuration only"
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
DYNFTRACE_TIME_FILTER=10000
DYNFTRACE_TRACER=function
LD_PRELOAD=$(cd "$B" && pwd -P)/libdynftrace.so:libc.so.6
EOF
diff -u want.txt env.txt >diff.txt
check $? "record: the runtime's environment (absolute session dir, LD_PRELOAD prepended)"
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
sleep 0.5
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
$CC -O1 -g -fpatchable-function-entry=5 prog.c -o prog || { notok "build prog"; exit 1; }

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

"$DFT" record -d g -T profile ./prog 5 >/dev/null 2>&1
"$DFT" report -d g >out 2>err
awk '$NF == "leaf" && $(NF-1) == 6 { a = 1 } $NF == "slow" && $2 == "ms" { b = 1 } END { exit !(a && b) }' out
check $? "record -T profile: report reads the runtime's table (leaf called 6 times)"
[ $? -ne 0 ] && diag_file out

"$DFT" record -d g -t 1ms ./prog 3 >/dev/null 2>&1
"$DFT" replay -d g --no-time | sed -E 's/^\[ *[0-9]+\]/[TID]/' >out
printf '#     TID  FUNCTION\n[TID] | slow();\n[TID] | main();\n' | diff -u - out >diff.txt
check $? "record -t 1ms: only the calls of 1 ms or more"
[ -s diff.txt ] && diag_file diff.txt

"$DFT" record -d g ./prog -1 >/dev/null 2>err
rc=$?
check $([ $rc -eq 134 ] && grep -Eq '^exit: [0-9]+ signal 6$' g/info && echo 0 || echo 1) \
	"record: a program killed by SIGABRT: status 134, 'signal 6' in info"
if ! ls g/ctf/stream-* >/dev/null 2>&1; then
	skip "the runtime does not flush its buffers when the program dies of a signal"
else
	"$DFT" replay -d g --no-time | sed -E 's/^\[ *[0-9]+\]/[TID]/' >out
	grep -q '^\[TID\] | } /\* main \*/ (unfinished)$' out
	check $? "record: the trace of a program killed by SIGABRT is closed and marked"
fi

mkdir tmp
TMPDIR=$T/tmp "$DFT" live ./prog >out 2>err
rc=$?
grep -q '| main() {$' out && [ -z "$(ls tmp)" ] && [ $rc -eq 0 ] && [ ! -s err ]
check $? "live: prints the trace, removes its temporary session"
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
