#!/usr/bin/env bash
# Builds and runs every test (dependencies installed first on Debian 12):
# default, ASan+UBSan and TSan configurations on x86-64, then the aarch64
# cross build under qemu-user. Each run prints its "N passed, N failed";
# the last line is the sum of both.
set -u
cd "$(dirname "$0")/.."
./scripts/deps.sh test || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# x86-64 (every configuration), then the aarch64 backend under qemu-user
# (its unit tests and tests/cross/, default configuration: about 10 minutes
# on a loaded 2-core machine).
make check 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
make check ARCH=aarch64 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
read -r p f < <(awk '/^[0-9]+ passed, [0-9]+ failed$/ { p += $1; f += $3 } END { print p + 0, f + 0 }' "$log")
# a run that failed without counting (a build error) counts as one failure
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
echo
echo "all runs (x86-64 and aarch64): $p passed, $f failed"
echo "$p passed, $f failed"
[ "$f" -eq 0 ] || rc=1
exit "$rc"
