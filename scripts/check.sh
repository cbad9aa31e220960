#!/usr/bin/env bash
# Builds and runs every test (dependencies installed first on Debian 12):
# default, ASan+UBSan and TSan configurations on x86-64, then the aarch64
# and riscv64 cross builds under qemu-user. Each run prints its "N passed,
# N failed" (", N skipped"); the last line is the sum of all three.
set -u
cd "$(dirname "$0")/.."
./scripts/deps.sh test || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# x86-64 (every configuration), then the aarch64 and riscv64 backends under
# qemu-user (their unit tests, tests/cross/ and the shell tests not in
# tests/cross/sh-skip, default configuration: 9 to 15 minutes each on a
# loaded 2-core machine before the shell tests, which add up to 8 more;
# most of it the 100,000-function batch test and the golden traces;
# aarch64 adds about 3 minutes booting an emulated kernel for what
# qemu-user cannot run, tests/cross/system.sh).
make check 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
make check ARCH=aarch64 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
make check ARCH=riscv64 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
read -r p f < <(awk '/^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$/ { p += $1; f += $3 } END { print p + 0, f + 0 }' "$log")
# a run that failed without counting (a build error) counts as one failure
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
echo
echo "all runs (x86-64, aarch64 and riscv64): $p passed, $f failed"
echo "$p passed, $f failed"
[ "$f" -eq 0 ] || rc=1
exit "$rc"
