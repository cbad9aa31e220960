# Sourced by the libFuzzer tests (fuzz-elf.sh, fuzz-trace.sh) instead of
# common.sh, whose sanitizer options are not libFuzzer's. Sets TOP and T
# (removed on exit), prints the plan (one check) and ends the test with a
# SKIP when clang has no libFuzzer. Provides:
#   fuzz_run NAME MAX_LEN [NOTE]   the check: $T/NAME run for FUZZ_TIME
#                  (default 20) seconds on $T/corpus and $T/seeds; NOTE
#                  follows the number of runs when it passes; on a crash,
#                  its report and the inputs that made it (saved in build/)
TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "1..1"

if ! command -v clang >/dev/null ||
	! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
		clang -fsanitize=fuzzer -x c - -o "$T/probe" 2>/dev/null; then
	echo "ok 1 # SKIP no libFuzzer"
	exit 0
fi

fuzz_run() {
	local name=$1 max_len=$2 note=${3:-} rc
	TMPDIR=$T "$T/$name" -max_total_time="${FUZZ_TIME:-20}" -max_len="$max_len" -timeout=120 \
		-artifact_prefix="$T/" -rss_limit_mb=1024 -print_final_stats=1 "$T/corpus" "$T/seeds" \
		>"$T/log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok 1 - no crash: $(grep -E '^stat::number_of_executed_units' "$T/log" | awk '{ print $2 }') runs$note"
		return 0
	fi
	echo "not ok 1 - $name failed with status $rc"
	grep -E 'ERROR|SUMMARY|#[0-9]+ |^    #' "$T/log" | head -30 | sed -e 's/^/# /'
	mkdir -p "$TOP/build"
	for c in "$T"/crash-* "$T"/leak-* "$T"/timeout-* "$T"/oom-*; do
		[ -f "$c" ] && mv "$c" "$TOP/build/" && echo "# input saved in build/${c##*/}"
	done
	return 1
}
