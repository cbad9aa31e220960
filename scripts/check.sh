#!/usr/bin/env bash
# Builds and runs every test (dependencies installed first on Debian 12):
# default, ASan+UBSan and TSan configurations on x86-64, then the aarch64
# cross build under qemu-user. Each run ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
./scripts/deps.sh test || exit 1
# x86-64 (every configuration), then the aarch64 backend under qemu-user
# (its unit tests and tests/cross/, default configuration: about 10 minutes
# on a loaded 2-core machine).
make check
rc=$?
make check ARCH=aarch64 || rc=1
exit $rc
