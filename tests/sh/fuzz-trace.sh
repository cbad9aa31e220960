#!/usr/bin/env bash
# description: the trace reader and replay/report/dump (all formats)/graph/info survive 20 seconds of libFuzzer
# config:
#
# Builds tests/fuzz/fuzz_trace.c with clang -fsanitize=fuzzer,address,undefined
# and runs it seeded with valid streams written by tests/golden/mkstream.c
# from tests/golden/streams/*.txt. Skips when clang has no libFuzzer.
# Env: TOP. FUZZ_TIME overrides the 20 seconds.
set -u
. "$(dirname "$0")/../gen/fuzz.sh"

if ! clang -std=gnu11 -O1 -g -D_GNU_SOURCE -DDYNFTRACE_LIBDIR='""' \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$TOP/include" -iquote "$TOP/lib/core" -iquote "$TOP/lib/ring" -iquote "$TOP/lib/trace" \
	-iquote "$TOP/lib/arch/x86_64" -iquote "$TOP/cli" \
	"$TOP/tests/fuzz/fuzz_trace.c" "$TOP"/cli/trace_session.c "$TOP"/cli/trace_stream.c \
	"$TOP"/cli/trace_merge.c "$TOP/cli/util.c" "$TOP/cli/read_opts.c" \
	"$TOP/cli/cmd_replay.c" "$TOP/cli/cmd_report.c" "$TOP/cli/cmd_dump.c" \
	"$TOP/cli/cmd_info.c" "$TOP/cli/calltree.c" "$TOP/cli/strtab.c" "$TOP/cli/dump_flame.c" \
	"$TOP/cli/dump_perfetto.c" "$TOP/cli/dump_ctf.c" "$TOP/cli/cmd_graph.c" "$TOP/cli/args_fmt.c" "$TOP/lib/trace/argspec.c" "$TOP/lib/core/elf.c" \
	"$TOP/lib/core/pattern.c" "$TOP/lib/core/demangle.c" "$TOP"/lib/arch/*/elf_site.c -ldl -o "$T/fuzz_trace" 2>"$T/build.log" ||
	! clang -std=gnu11 -O1 "$TOP/tests/golden/mkstream.c" -o "$T/mkstream" 2>>"$T/build.log"; then
	echo "not ok 1 - fuzz_trace does not build"
	sed -e 's/^/# /' "$T/build.log" | head -20
	exit 1
fi

# Seeds: the reader tests' streams, rewritten for pid 100 / tid 100 (the
# harness's session), with function ids folded into 0-7.
mkdir -p "$T/corpus" "$T/seeds"
for s in "$TOP"/tests/golden/streams/*.txt; do
	n=$(basename "$s" .txt)
	awk '
		$1 == "stream" { print "stream 100 100"; next }
		$1 == "site" || $1 == "map" || $1 == "info" { next }
		($1 == "entry" || $1 == "function" || $1 == "call" || $1 == "entry_args") { $3 = $3 % 8 }
		{ print }' "$s" | "$T/mkstream" "$T/s-$n" >/dev/null 2>&1 || continue
	i=0
	for f in "$T/s-$n"/ctf/stream-*; do
		cp "$f" "$T/seeds/$n-$i"
		i=$((i + 1))
	done
done

# Inputs that once crashed the reader (kept as regression seeds).
for f in "$TOP"/tests/fuzz/regress/trace-*; do
	[ -f "$f" ] && cp "$f" "$T/seeds/"
done

fuzz_run fuzz_trace 16384 " from $(ls "$T/seeds" | wc -l) seeds"
