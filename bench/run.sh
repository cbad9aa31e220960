#!/usr/bin/env bash
# Runs every benchmark script in bench/ in turn (`make bench`), each with its
# default settings. Each prints its figures (markdown tables); the status is
# non-zero only if a script could not run (e.g. a build failure).
set -u
cd "$(dirname "$0")/.."
rc=0
for s in bench/*.sh; do
	[ "$s" = bench/run.sh ] && continue
	echo "=== $s"
	bash "$s" || {
		echo "($s exited with status $?)"
		rc=1
	}
	echo
done
exit $rc
