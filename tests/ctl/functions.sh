# functions.sh - helpers for the control tests (tests/ctl/*.tc), sourced by
# tests/sh/ctl.sh before each test, in the style of the kernel's ftracetest:
# a test is a short script whose exit status says pass (0), fail (1) or
# unsupported (4: the runner reports a skip).
#
# Environment given by the runner: DFT (the dynftrace command), TARGET (the
# program of target.c, linked with the runtime), DLLIB (a traced library
# with dl_one), PEER (peer.c), SILENT (silent.c), W (this test's scratch
# directory, also XDG_RUNTIME_DIR: sockets live in $W/dynftrace), SAN.
#
#   start_target [ARGS]   start TARGET with DYNFTRACE_CONTROL=1; sets TPID,
#                         TOUT (its stdout file); commands via tcmd
#   tcmd LINE             send a command line to the target (see target.c)
#   twait PATTERN         wait until the target's output has PATTERN
#   twait_n N PATTERN     ... has N lines matching PATTERN
#   ctl ARGS...           dynftrace ctl $TPID ARGS (ctlp PID ARGS: another pid)
#   must CMD...           run CMD; fail the test when it fails
#   wait_until CMD...     retry CMD until it succeeds (fails after $WAIT s)
#   has FILE PATTERN      `ctl FILE` output matches the extended regex
#   fail MESSAGE          exit 1 with MESSAGE
#   exit_unsupported MSG  exit 4
EXIT_PASS=0
EXIT_FAIL=1
EXIT_UNSUPPORTED=4
WAIT=${WAIT:-30}
TPID=
TOUT=
TFIFO=

fail() { echo "FAIL: $*" >&2; exit $EXIT_FAIL; }
# now: seconds on a monotonic count ($SECONDS; busybox's ash, the shell of
# the emulated riscv64 guest of tests/cross/system.sh, has none: the clock)
if [ -n "${SECONDS:-}" ]; then now() { echo "$SECONDS"; }; else now() { date +%s; }; fi
exit_unsupported() { echo "UNSUPPORTED: $*" >&2; exit $EXIT_UNSUPPORTED; }

ctlp() { "$DFT" ctl "$@"; }
ctl() { "$DFT" ctl "$TPID" "$@"; }

# The output goes through a pipe, not a file rewritten at every call: on a
# disk file system, opening a file with O_TRUNC waits until the disk has
# written back the pages it drops (70 s once, on a machine with heavy I/O).
must() {
	local out
	out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; fail "command failed: $*"; }
	if [ -n "$out" ]; then printf '%s\n' "$out"; fi
}

# wait_until CMD...: poll (not a delay for synchronisation: the condition
# decides) until CMD succeeds, at most $WAIT seconds.
wait_until() {
	local end=$(($(now) + WAIT))
	while ! "$@" >/dev/null 2>&1; do
		[ "$(now)" -ge $end ] && return 1
		sleep 0.05
	done
	return 0
}

# has FILE REGEX [PID]: the file's contents match.
has() { "$DFT" ctl "${3:-$TPID}" "$1" 2>/dev/null | grep -Eq -- "$2"; }

start_target() {
	TFIFO=$W/target.in
	TOUT=$W/target.out
	rm -f "$TFIFO"
	mkfifo "$TFIFO" || fail "mkfifo"
	DYNFTRACE_CONTROL=1 "$TARGET" "$@" <"$TFIFO" >"$TOUT" 2>"$W/target.err" &
	TPID=$!
	exec 9>"$TFIFO" # keeps the target's stdin open
	twait "^ready $TPID\$" || fail "the target did not start: $(cat "$W/target.err")"
}

tcmd() { echo "$1" >&9; }

twait() { wait_until grep -Eq -- "$1" "$TOUT"; }
count_ge() { [ "$(grep -Ec -- "$2" "$TOUT")" -ge "$1" ]; }
twait_n() { wait_until count_ge "$1" "$2"; }

stop_target() {
	[ -n "$TPID" ] || return 0
	tcmd exit 2>/dev/null
	exec 9>&- 2>/dev/null
	local end=$(($(now) + 10))
	while kill -0 "$TPID" 2>/dev/null && [ "$(now)" -lt $end ]; do sleep 0.05; done
	kill -9 "$TPID" 2>/dev/null
	wait "$TPID" 2>/dev/null
	TPID=
}

# A target that printed WRONG computed something else than without tracing;
# a sanitizer report in any target's stderr fails the test too.
check_target_ok() {
	if [ -n "$TOUT" ] && grep -q WRONG "$TOUT" 2>/dev/null; then
		fail "the target computed a wrong result: $(grep WRONG "$TOUT" | head -1)"
	fi
	local f
	for f in "$W"/*.err; do
		[ -f "$f" ] || continue
		if grep -Eq 'ERROR: (Address|Thread|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$f"; then
			fail "sanitizer report in $(basename "$f"): $(grep -Em1 'Sanitizer|runtime error' "$f")"
		fi
	done
	return 0
}

sock_path() { echo "$W/dynftrace/${1:-$TPID}.sock"; }

cleanup_tc() {
	stop_target
	local p
	for p in $(jobs -p); do kill -9 "$p" 2>/dev/null; done
	check_target_ok
}
trap 'rc=$?; cleanup_tc; exit $rc' EXIT
