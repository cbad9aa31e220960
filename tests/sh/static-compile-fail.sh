#!/usr/bin/env bash
# description: static_call_update with a function of the wrong type fails to compile (gcc, clang, g++); the control compiles
set -u
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
D=$TOP/tests/compile-fail
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
compilers=""
for c in gcc clang g++; do command -v $c >/dev/null && compilers="$compilers $c"; done
for f in "$D"/*.c; do
	name=$(basename "$f" .c)
	expect=$(sed -n 's|^// expect: ||p' "$f")
	for cc in $compilers; do
		lang=""
		std=-std=gnu11
		if [ "$cc" = g++ ]; then lang="-x c++"; std=-std=gnu++17; fi
		$cc $std $lang -Wall -Wextra -I"$TOP/include" -I"$D" -c "$f" -o "$W/o.o" >"$W/err" 2>&1
		rc=$?
		if [ "$name" = control ]; then
			if [ $rc -eq 0 ]; then echo "ok - control compiles with $cc"
			else echo "not ok - control does not compile with $cc"; sed 's/^/# /' "$W/err" | head -8; fi
		elif [ $rc -eq 0 ]; then
			echo "not ok - $name compiles with $cc (must fail)"
		elif [ -n "$expect" ] && ! grep -qE "$expect" "$W/err"; then
			echo "not ok - $name fails with $cc, but not for the expected reason"
			sed 's/^/# /' "$W/err" | head -8
		else
			echo "ok - $name fails to compile with $cc"
		fi
	done
done
