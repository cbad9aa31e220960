#!/usr/bin/env bash
# Builds and runs every test (dependencies installed first on Debian 12):
# default, ASan+UBSan and TSan configurations. Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
./scripts/deps.sh test || exit 1
exec make check
