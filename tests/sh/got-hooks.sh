#!/usr/bin/env bash
# description: GOT hooks (a runtime loaded late): wrappers reached through every slot while threads call, dlopen after install, remove restores and never writes into an unloaded object; dft_real under RTLD_LOCAL
# config: asan tsan
#
# 1. tests/progs/got-harness.c is lib/core/got.c alone with counting wrappers,
#    in a library. tests/progs/got-prog.c, not linked with it, loads it
#    RTLD_LOCAL and installs/removes the hooks while threads call through
#    the slots (see its header), built with full RELRO (-z now), with lazy
#    binding (-z lazy) and with -fno-plt (GLOB_DAT slots; gcc for riscv64
#    ignores the flag and calls through the PLT); also with clang (x86-64)
#    when there is no sanitizer.
# 2. tests/progs/got-cxx.cc: the unwinder's wrappers (libgcc_s, libstdc++:
#    found by dft_real's global fallback) while threads throw and catch.
# 3. tests/progs/got-realrt.c: the runtime itself dlopened RTLD_LOCAL: its
#    wrappers reach libc's functions, and its signal() its own sigaction.
# 4. Every wrapper the runtime exports has its hidden alias dft_NAME at the
#    same address and an entry in the dft_got_hooks table.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
P=$TOP/tests/progs
LIBF="-fPIC -shared -fvisibility=hidden -fno-strict-aliasing $LIB_INC"

# build_harness CC DIR: DIR/libgh.so and DIR/libgotlib.so.
build_harness() {
	# shellcheck disable=SC2086
	$1 $CFLAGS_T $SANFLAGS $LIBF "$TOP/lib/core/got.c" "$TOP/lib/core/log.c" "$P/got-harness.c" \
		-o "$2/libgh.so" -lpthread &&
		$1 $CFLAGS_T $SANFLAGS -fPIC -shared -Wl,-z,relro,-z,now "$P/got-lib.c" \
			-o "$2/libgotlib.so"
}

for cc in $compilers; do
	mkdir -p "$T/$cc"
	if ! build_harness "$cc" "$T/$cc" 2>"$T/build.log"; then
		notok "build the GOT harness with $cc"
		diag_file "$T/build.log"
		continue
	fi
	for v in relro lazy noplt; do
		case $v in
		relro) flags="-Wl,-z,relro,-z,now" ;;
		lazy) flags="-Wl,-z,lazy" ;;
		noplt) flags="-fno-plt -Wl,-z,lazy" ;;
		esac
		# shellcheck disable=SC2086
		if ! $cc $CFLAGS_T $SANFLAGS $flags "$P/got-prog.c" -o "$T/$cc/got-$v" -lpthread \
			2>"$T/build.log"; then
			notok "build got-prog ($v, $cc)"
			diag_file "$T/build.log"
			continue
		fi
		tap_prog --diag "$cc, $v: install and remove while threads call through the slots" \
			"$T/$cc/got-$v" "$T/$cc/libgh.so" "$T/$cc/libgotlib.so"
	done
	[ -n "$SAN" ] && break # the sanitizer runtimes are $CC's
done

cxx=${CC%gcc}g++
[ "$CC" = clang ] && cxx=clang++
if command -v $cxx >/dev/null; then
	# shellcheck disable=SC2086
	if $cxx -std=gnu++17 -O2 -g -Wall -Wextra $SANFLAGS "$P/got-cxx.cc" -o "$T/got-cxx" \
		-lpthread 2>"$T/build.log"; then
		tap_prog "C++: the unwinder's wrappers through GOT hooks while threads throw" \
			"$T/got-cxx" "$T/$CC/libgh.so"
	else
		notok "build got-cxx"
		diag_file "$T/build.log"
	fi
else
	skip "no $cxx"
fi

# shellcheck disable=SC2086
if $CC $CFLAGS_T $SANFLAGS "$P/got-realrt.c" -o "$T/got-realrt" 2>"$T/build.log"; then
	tap_prog "the runtime dlopened RTLD_LOCAL: its wrappers reach libc's functions" \
		"$T/got-realrt" "$B/libdynftrace.so"
else
	notok "build got-realrt"
	diag_file "$T/build.log"
fi

# The runtime's exported wrappers (the map's global names but the API and
# the __fentry__/mcount stubs), each with its alias and its table entry.
wrappers=$(sed -n '/^{/,/^}/p' "$TOP/lib/libdynftrace.map" | sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' |
	grep -vxE 'dynftrace_.*|__fentry__|mcount|_mcount')
# riscv64's runtime has no _Unwind_Resume wrapper (lib/trace/graph.c says why)
[ "$ARCH" = riscv64 ] && wrappers=$(printf '%s\n' $wrappers | grep -vx _Unwind_Resume)
nm "$B/libdynftrace.so" >"$T/nm" 2>/dev/null
bad=
n=0
for w in $wrappers; do
	n=$((n + 1))
	a=$(awk -v s="$w" '$3 == s && $2 == "T" { print $1 }' "$T/nm")
	b=$(awk -v s="dft_$w" '$3 == s && $2 == "t" { print $1 }' "$T/nm")
	[ -n "$a" ] && [ "$a" = "$b" ] || bad="$bad $w"
done
size=$(readelf -SW "$B/libdynftrace.so" | awk '$2 == "dft_got_hooks" { print $6 }')
if [ -z "$bad" ] && [ "$n" -gt 0 ] && [ -n "$size" ] && [ $((16#$size)) -eq $((16 * n)) ]; then
	ok "the $n exported wrappers have a hidden alias and a hook table entry"
else
	notok "wrappers without a hidden alias:${bad:- none}; table: ${size:-none} bytes for $n"
fi
tap_end
