#!/usr/bin/env bash
# description: functions with a symbol version in .symtab (.symver: glibc's fclose@@GLIBC_2.2.5) go by their plain name
# config: asan
#
# A library defines vfoo twice, the old version vfoo@V_1 and the default
# vfoo@@V_2, as glibc does for many of its functions (its .symtab, in
# libc6-dbg, names them so). `dynftrace sites` lists them as vfoo, and a
# filter naming vfoo@libv.so traces the call, shown as vfoo().
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san

cat >v.c <<'EOF2'
__attribute__((noinline)) int vfoo_1(int x) { return x + 1; }
__attribute__((noinline)) int vfoo_2(int x) { return x + 2; }
__asm__(".symver vfoo_1, vfoo@V_1");
__asm__(".symver vfoo_2, vfoo@@V_2");
EOF2
printf 'V_1 { global: vfoo; local: *; };\nV_2 { global: vfoo; } V_1;\n' >v.map
printf 'int vfoo(int);\nint main(void) { return vfoo(1) == 3 ? 0 : 1; }\n' >m.c
# shellcheck disable=SC2086
if ! $CC -O1 -g -fPIC -shared $TRACE_FLAGS $SANFLAGS v.c -Wl,--version-script=v.map -o libv.so 2>build.log ||
	! $CC -O1 -g $SANFLAGS m.c -L. -lv -Wl,-rpath,"$T" -o m 2>>build.log; then
	notok "build the versioned library and its program"
	diag_file build.log
	exit 1
fi
if ! readelf -sW libv.so | grep -q 'vfoo@@V_2'; then
	skip "the linker wrote no versioned names into .symtab"
	exit 0
fi

"$DFT" sites libv.so >sites 2>&1
n=$(grep -cx vfoo sites)
[ "$n" -eq 2 ] && ! grep -q '@' sites
check $? "sites: both versions of vfoo are listed as vfoo"
[ "$n" -eq 2 ] || diag_file sites

recorded r -F 'vfoo@libv.so' -- ./m
"$DFT" replay --no-time -d r >replay 2>&1
[ "$rc" -eq 0 ] && grep -q '| vfoo();$' replay
check $? "record -F 'vfoo@libv.so': the call is traced and shown as vfoo()"
[ "$rc" -eq 0 ] && grep -q '| vfoo();$' replay || { diag_file err; diag_file replay; }

tap_end
