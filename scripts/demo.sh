#!/usr/bin/env bash
# The main job: build everything and run the bundled example under live
# patching (dependencies installed first on Debian 12).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh build
make -s -j"$(nproc)" all
exec ./build/examples/demo
