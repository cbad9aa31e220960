#!/usr/bin/env bash
# description: entry relocation: each rule of arch_reloc_entry, and a differential fuzz of random instruction sequences run original and relocated
# config: asan
#
# tests/reloc/t-reloc.c (the rules, the refusals' reasons, the missing
# decoder), tests/reloc/x86dec-diff.c (x86dec.c's lengths against
# capstone's over real code), tests/reloc/survey.c (every function of libc, and a few run
# through their blocks) and tests/reloc/fuzz.c (a fixed seed, then a seed of
# the day, printed) built with lib/arch/x86_64/reloc.c compiled in, as it is hidden
# in the runtime; the runtime itself must not need capstone to load.
# Env: TOP B CC SAN, RELOC_FUZZ_ITERS (default 3000), RELOC_FUZZ_SEED.
. "$(dirname "$0")/../gen/common.sh"
R=$TOP/tests/reloc

if ! echo '#include <capstone/capstone.h>' | $CC -E -x c - >/dev/null 2>&1; then
	skip "capstone headers not installed (libcapstone-dev, scripts/deps.sh)"
	exit 0
fi
if readelf -d "$B/libdynftrace.so" | grep -q 'NEEDED.*capstone'; then
	notok "libdynftrace.so needs capstone at load time"
else
	ok "libdynftrace.so does not need capstone at load time"
fi

for p in t-reloc fuzz survey; do
	# shellcheck disable=SC2086
	if ! $CC $CFLAGS_T $LIB_INC $SANFLAGS -fno-strict-aliasing "$R/$p.c" \
		"$TOP/lib/arch/x86_64/reloc.c" "$TOP/lib/arch/x86_64/x86dec.c" -o "$T/$p" \
		-lpthread -ldl 2>"$T/build.log"; then
		notok "build $p"
		diag_file "$T/build.log"
		exit 1
	fi
done

# shellcheck disable=SC2086
if ! $CC $CFLAGS_T $LIB_INC $SANFLAGS "$R/x86dec-diff.c" "$TOP/lib/arch/x86_64/x86dec.c" \
	-o "$T/x86dec-diff" -lcapstone 2>"$T/build.log"; then
	notok "build x86dec-diff"
	diag_file "$T/build.log"
	exit 1
fi

tap_prog "the relocation rules" "$T/t-reloc"
tap_prog "without capstone: -ENOENT and why" "$T/t-reloc" nodecoder
libc=$(ldd "$T/survey" | awk '$1 ~ /^libc\.so/ { print $3 }')
nm -D -S --defined-only "$libc" >"$T/libc.nm" 2>/dev/null
tap_prog --diag "libc's functions relocated, some called through their blocks" "$T/survey" "$libc" <"$T/libc.nm"
# x86dec against capstone over the code of the programs and libraries at
# hand (the C library and loader, the C++ library, the runtime, git and
# perl when installed): every instruction's length and RIP-relative operand.
objs="$libc $(ldd "$T/survey" | awk '$1 ~ /^\/.*ld-linux/ { print $1 }') $B/libdynftrace.so"
for f in /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/bin/git /usr/bin/perl; do
	[ -f "$f" ] && objs="$objs $(readlink -f "$f")"
done
# shellcheck disable=SC2086
tap_prog --diag "x86dec and capstone agree on every instruction" "$T/x86dec-diff" $objs
tap_prog --diag "x86dec on random bytes" "$T/x86dec-diff" random 300000
iters=${RELOC_FUZZ_ITERS:-3000}
tap_prog --diag "differential fuzz, seed 1, $iters sequences" "$T/fuzz" 1 "$iters"
seed=${RELOC_FUZZ_SEED:-$(date +%Y%m%d)}
tap_prog --diag "differential fuzz, seed $seed, $((iters / 3)) sequences" "$T/fuzz" "$seed" $((iters / 3))
tap_end
