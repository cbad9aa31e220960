#!/usr/bin/env bash
# description: elf_load() and elf_load_entries() survive 20 seconds of libFuzzer on damaged ELF files
# config:
#
# Builds tests/fuzz/fuzz_elf.c with clang -fsanitize=fuzzer,address,undefined
# and runs it seeded with real ELF files: a traced program and library, an
# untraced one, /bin/true, a stripped untraced program (its entries come from
# .eh_frame_hdr) and one linked without .eh_frame_hdr (the .eh_frame walk).
# Skips when clang has no libFuzzer.
# Env: TOP (checkout). FUZZ_TIME overrides the 20 seconds.
set -u
. "$(dirname "$0")/../gen/fuzz.sh"

if ! clang -std=gnu11 -O1 -g -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I"$TOP/include" -iquote "$TOP/lib/core" -iquote "$TOP/lib/arch/x86_64" \
	"$TOP/tests/fuzz/fuzz_elf.c" "$TOP/lib/core/elf.c" "$TOP"/lib/arch/*/elf_site.c -o "$T/fuzz_elf" 2>"$T/build.log"; then
	echo "not ok 1 - fuzz_elf does not build"
	sed -e 's/^/# /' "$T/build.log" | head -20
	exit 1
fi

mkdir -p "$T/corpus" "$T/seeds"
S=$TOP/tests/sites
gcc -O2 -fpatchable-function-entry=5 -fcf-protection=full -fPIC -shared "$S/lib.c" \
	-o "$T/seeds/lib.so" 2>/dev/null
gcc -O2 -fpatchable-function-entry=7,2 "$S/prog.c" "$T/seeds/lib.so" -o "$T/seeds/prog" 2>/dev/null
gcc -O2 -pg -mfentry -mrecord-mcount -fno-pie -no-pie "$S/prog.c" "$T/seeds/lib.so" \
	-o "$T/seeds/fentry" 2>/dev/null
gcc -O2 "$S/lib.c" -fPIC -shared -o "$T/seeds/plain.so" 2>/dev/null
cp /bin/true "$T/seeds/true" 2>/dev/null
gcc -O2 "$TOP/tests/entries/prog.c" -o "$T/seeds/entries" 2>/dev/null
clang -O2 "$TOP/tests/entries/prog.c" -Wl,--no-eh-frame-hdr -o "$T/seeds/walk" 2>/dev/null
# Small seeds fuzz faster; strip the debug info the compiler added.
for f in "$T"/seeds/*; do strip -g "$f" 2>/dev/null; done
strip "$T/seeds/entries" "$T/seeds/walk" 2>/dev/null

fuzz_run fuzz_elf 65536
