#!/usr/bin/env bash
# description: static key / static call / tracepoint unit tests rebuilt with gcc and clang at -O0 and -O2 (inline call sites found everywhere)
set -u
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${B:=$TOP/build}"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
for cc in gcc clang; do
	command -v $cc >/dev/null || continue
	for opt in -O0 -O2; do
		for t in t-static-key t-static-call t-tracepoint; do
			tag="$t $cc $opt"
			if ! $cc -std=gnu11 $opt -g -Wall -Wextra -Wno-unused-parameter -Werror -D_GNU_SOURCE \
				-fpatchable-function-entry=5 -I"$TOP/include" -I"$TOP/tests/unit" \
				"$TOP/tests/unit/$t.c" -o "$W/$t" -L"$B" -ldynftrace -Wl,-rpath,"$B" \
				-lpthread -ldl 2>"$W/err"; then
				echo "not ok - $tag: does not build"
				sed 's/^/# /' "$W/err" | head -10
				continue
			fi
			"$W/$t" >"$W/out" 2>&1
			rc=$?
			nok=$(grep -c '^ok' "$W/out")
			if [ $rc -eq 0 ] && ! grep -q '^not ok' "$W/out"; then
				echo "ok - $tag ($nok checks)"
			else
				echo "not ok - $tag (exit $rc)"
				grep -E "^not ok|^#" "$W/out" | tail -5; tail -3 "$W/out" | sed "s/^/# tail: /"
			fi
			grep '^# sites' "$W/out" | sed "s/^# /# $tag: /"
		done
	done
done
