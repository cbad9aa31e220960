#!/usr/bin/env bash
# description: under emulation: examples/wordfreq recorded with function_graph and function, replayed by the cross-built command
#
# Run by tests/run.sh for ARCH != x86_64 only. Env: B (the cross build),
# RUN_CMD (the emulator and its options). The program is started as
# `dynftrace record` would start it (the runtime preloaded, the session
# settings in its environment: the command cannot exec a guest binary
# under qemu-user without binfmt_misc), then the session is read back
# with the cross-built command under the same emulator.
set -u
read -r -a RUN <<<"$RUN_CMD"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { if eval "$1"; then ok "$2"; else notok "$2"; fi; }

prog=$B/examples/wordfreq
"${RUN[@]}" "$prog" >"$T/plain.out" 2>&1
for tracer in function_graph function; do
	d=$T/$tracer
	mkdir -p "$d"
	printf 'version: 1\ncommand: wordfreq\n' >"$d/info"
	"${RUN[@]}" -E LD_PRELOAD="$B/libdynftrace.so" -E DYNFTRACE_RECORD="$d" \
		-E DYNFTRACE_TRACER=$tracer "$prog" >"$T/$tracer.out" 2>&1
	check "[ \$? -eq 0 ] && cmp -s '$T/plain.out' '$T/$tracer.out'" \
		"$tracer: the traced program runs and prints as untraced"
	"${RUN[@]}" "$B/dynftrace" replay -d "$d" >"$T/$tracer.txt" 2>"$T/$tracer.err"
	check "[ \$? -eq 0 ]" "$tracer: replay reads the session"
	sed 's/^/#   /' "$T/$tracer.txt" | head -8
done
g=$T/function_graph.txt
# every lookup() opened returns (the return hook ran), hash() is a leaf
opens=$(grep -c 'lookup() {$' "$g")
closes=$(grep -c '} /\* lookup \*/' "$g")
check "[ $opens -gt 0 ] && [ $opens -eq $closes ]" \
	"function_graph: $opens lookup() entries, each with its return"
check "grep -q '| *hash();' '$g'" "function_graph: hash() recorded as a leaf with its duration"
check "grep -q 'main() {' '$g'" "function_graph: main() at the root"
check "grep -q 'hash' '$T/function.txt' && ! grep -q '{' '$T/function.txt'" \
	"function: the calls, no returns"
echo "1..$n"
[ "$fails" -eq 0 ]
