# Sourced after common.sh by the tests that attach to targets they start
# (attach.sh, attach-seccomp.sh). Provides:
#   pids           the targets started, killed on exit (with $T removed)
#   start NAME ARGS...   run a target that says "ready" when it is: output
#                  in $T/NAME.out, its pid in $pid; waits at most
#                  START_TRIES (default 300) times 0.05 s, else fails
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

start() {
	local name=$1
	shift
	"$@" >"$T/$name.out" 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq "${START_TRIES:-300}"); do
		grep -q '^ready' "$T/$name.out" && return 0
		sleep 0.05
	done
	return 1
}
