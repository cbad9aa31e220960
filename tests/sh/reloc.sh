#!/usr/bin/env bash
# description: entry relocation: each rule of arch_reloc_entry, and a differential fuzz of random instruction sequences run original and relocated
# config: asan
#
# tests/reloc/t-reloc.c (the rules, the refusals' reasons, the missing
# decoder), tests/reloc/survey.c (every function of libc, and a few run
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
		"$TOP/lib/arch/x86_64/reloc.c" -o "$T/$p" -lpthread -ldl 2>"$T/build.log"; then
		notok "build $p"
		diag_file "$T/build.log"
		exit 1
	fi
done

tap_prog "the relocation rules" "$T/t-reloc"
tap_prog "without capstone: -ENOENT and why" "$T/t-reloc" nodecoder
libc=$(ldd "$T/survey" | awk '$1 ~ /^libc\.so/ { print $3 }')
nm -D -S --defined-only "$libc" >"$T/libc.nm" 2>/dev/null
tap_prog --diag "libc's functions relocated, some called through their blocks" "$T/survey" "$libc" <"$T/libc.nm"
iters=${RELOC_FUZZ_ITERS:-3000}
tap_prog --diag "differential fuzz, seed 1, $iters sequences" "$T/fuzz" 1 "$iters"
seed=${RELOC_FUZZ_SEED:-$(date +%Y%m%d)}
tap_prog --diag "differential fuzz, seed $seed, $((iters / 3)) sequences" "$T/fuzz" "$seed" $((iters / 3))
tap_end
