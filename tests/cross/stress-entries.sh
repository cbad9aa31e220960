#!/usr/bin/env bash
# description: under emulation: workers call 1,000 functions built without sites, their entries relocated at start-up, while two ops are (un)registered and refiltered
#
# tests/sh/stress-entries.sh for a cross-built ARCH: tests/stress/stress.c
# linked with 1,000 functions from tests/gen/genfuncs.sh built with plain
# gcc -O2 (no site flags), DYNFTRACE_PATCH naming them, so every call goes
# through a relocated entry's block and the preserving trampoline; run
# under the emulator with the checks of tests/cross/stress.sh (every
# callback counted against a model of the filters in quiet windows, one
# sync per batch). riscv64 adds -falign-functions=4: gcc aligns functions
# to 2 bytes with RVC, and an entry on a 2-byte boundary is refused (one
# aligned store must patch it), which the model would count as missing
# calls (tests/cross/reloc.sh checks that refusal). STRESS_ARGS (default
# "-n 1000 -W 50": every kind of check, fewer changes than the native
# run's 5,000). Env: TOP B ARCH RUN_CMD, CC_CROSS (default
# ARCH-linux-gnu-gcc).
set -u
read -r -a RUN <<<"$RUN_CMD"
CC=${CC_CROSS:-$ARCH-linux-gnu-gcc}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
align=
[ "$ARCH" = riscv64 ] && align=-falign-functions=4
if ! bash "$TOP/tests/gen/genfuncs.sh" 1000 >"$T/funcs.c" ||
	! $CC -std=gnu11 -O2 $align -c "$T/funcs.c" -o "$T/funcs.o" 2>"$T/build.log" ||
	! $CC -std=gnu11 -O2 -g -D_GNU_SOURCE -I"$TOP/include" "$TOP/tests/stress/stress.c" \
		"$T/funcs.o" -o "$T/stress" -L"$B" -Wl,--no-as-needed -ldynftrace -Wl,--as-needed \
		-Wl,-rpath,"$B" -lpthread 2>>"$T/build.log"; then
	echo "not ok 1 - build the stress program"
	sed 's/^/# /' "$T/build.log" | head -20
	exit 1
fi
# shellcheck disable=SC2086
DYNFTRACE_PATCH='[fgh]_[0-9]*' "${RUN[@]}" "$T/stress" ${STRESS_ARGS:--n 1000 -W 50}
rc=$?
[ $rc -eq 0 ] || echo "# stress exited with status $rc"
exit $rc
