#!/usr/bin/env bash
# rdtsc_shadow.sh - how many instructions hide behind a cycle-counter read
# on this CPU (bench/rdtsc_shadow.c), pinned to one CPU. x86-64 only.
set -u
cd "$(dirname "$0")/.."
[ "$(uname -m)" = x86_64 ] || {
	echo "rdtsc_shadow: x86-64 only"
	exit 0
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
gcc -O2 bench/rdtsc_shadow.c -o "$T/rs" || exit 1
echo "## Work behind two rdtsc ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg))"
echo
if command -v taskset >/dev/null; then taskset -c 1 "$T/rs"; else "$T/rs"; fi
