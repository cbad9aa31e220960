#!/usr/bin/env bash
# description: static keys, static calls and tracepoints inside a dlopen'd library, loaded and unloaded repeatedly
# config: asan
set -u
: "${TOP:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${B:=$TOP/build}"
: "${CC:=gcc}"
SRC=$TOP/tests/sh/static-dlopen
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
SANF=""
case "${SAN:-}" in
asan) SANF="-fsanitize=address,undefined -fno-omit-frame-pointer" ;;
esac
compilers="$CC clang"
# a sanitized runtime only mixes with objects of the same compiler; another
# ARCH: its cross gcc alone
[ -n "${SAN:-}" ] || [ "${ARCH:-x86_64}" != x86_64 ] && compilers=$CC
for cc in $compilers; do
	command -v "$cc" >/dev/null || continue
	for opt in -O0 -O2; do
		tag="$cc $opt"
		if ! $cc -std=gnu11 -Wall -Wextra -Werror $opt $SANF -fPIC -shared -I"$TOP/include" \
			"$SRC/lib.c" -o "$W/lib.so" -L"$B" -ldynftrace -Wl,-rpath,"$B" 2>"$W/err"; then
			echo "not ok - $tag: library does not build"; sed 's/^/# /' "$W/err"; continue
		fi
		if ! $cc -std=gnu11 -Wall -Wextra -Werror $opt $SANF -rdynamic -I"$TOP/include" \
			"$SRC/prog.c" -o "$W/prog" -L"$B" -ldynftrace -Wl,-rpath,"$B" -lpthread -ldl \
			2>"$W/err"; then
			echo "not ok - $tag: program does not build"; sed 's/^/# /' "$W/err"; continue
		fi
		"$W/prog" "$W/lib.so" >"$W/out" 2>&1
		rc=$?
		sed -n 's/^\(ok\|not ok\) [0-9]* - /\1 - '"$tag"': /p' "$W/out"
		grep '^#' "$W/out" | head -10
		[ $rc -eq 0 ] || echo "not ok - $tag: exit status $rc"
	done
done
