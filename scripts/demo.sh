#!/usr/bin/env bash
# The main job: build everything, trace the bundled example program and show
# its function graph; then the live-patching demo (dependencies installed
# first on Debian 12).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh build
make -s -j"$(nproc)" all
echo "== dynftrace live -- build/examples/wordfreq"
./build/dynftrace live -- ./build/examples/wordfreq
echo
echo "== build/examples/demo: tracing switched on and off in a running program"
exec ./build/examples/demo
