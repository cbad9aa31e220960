#!/usr/bin/env bash
# description: C++ objects whose site records gcc tied to a dropped COMDAT group: their functions are sites all the same, recorded and nested
#
# gcc 12 writes one __patchable_function_entries section per object, tied
# (SHF_LINK_ORDER) to its first function. When that function is an inline
# function or template another object also emitted, the linker drops its
# group and the object's whole section with it: b.cc's fb() and main() keep
# their entry NOPs but have no record. The reader (lib/core/elf.c,
# recover_sites) finds them at the entries of an object with records. A
# function built without a site (notrace) must stay without one. First, a
# C PIE's records, relocated by the reader for every architecture.
# Env: TOP B CC SAN ARCH.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san
case "$CC" in
*clang*) CXX=${CC/clang/clang++} ;;
*gcc*) CXX=${CC%gcc}g++ ;;
*) CXX=g++ ;;
esac
if ! command -v "$CXX" >/dev/null; then
	skip "no C++ compiler $CXX"
	echo "1..$tap_n"
	exit 0
fi
# A C program, PIE as the compiler builds it by default: its records hold
# their addresses only through dynamic relocations, which `sites` applies
# by the architecture's types (they were x86-64's alone: on aarch64 and
# riscv64 every record read 0).
cat >p.c <<'EOF'
__attribute__((noinline)) int f1(int x) { return x + 1; }
__attribute__((noinline)) int f2(int x) { return f1(x) * 2; }
int main(void) { return f2(1) - 4; }
EOF
# shellcheck disable=SC2086
if $CC -O1 $TRACE_FLAGS -pie -fpie p.c -o p 2>build.log; then
	"$DFT" sites p >p.sites 2>&1
	if [ "$(sort p.sites | tr '\n' ' ')" = "f1 f2 main " ]; then
		ok "sites of a PIE: its three functions, from the relocated records"
	else
		notok "sites of a PIE: its three functions, from the relocated records"
		diag_file p.sites
	fi
else
	notok "build a C PIE"
	diag_file build.log
fi
cat >h.h <<'EOF'
struct S {
	int v;
	S(int x) : v(x) {}
	~S();
	int get() const { return v * 2; }
};
inline S::~S() { v = 0; }
template <class T> T tw(T a) { return a + 1; }
EOF
cat >a.cc <<'EOF'
#include "h.h"
int fa(int x) { S s(x); return tw(s.get()) + tw<long>(x); }
EOF
cat >b.cc <<'EOF'
#include <stdio.h>
#include "h.h"
int fa(int);
__attribute__((patchable_function_entry(0, 0), noinline)) int untraced(int x) { return x - 1; }
int fb(int x) { S s(x); return tw(s.get()) + fa(x) + untraced(x); }
int main() { printf("%d\n", fb(3)); return 0; }
EOF
# shellcheck disable=SC2086
if ! $CXX -O0 $TRACE_FLAGS $SANFLAGS -c a.cc -o a.o 2>build.log ||
	! $CXX -O0 $TRACE_FLAGS $SANFLAGS -c b.cc -o b.o 2>>build.log ||
	! $CXX $SANFLAGS a.o b.o -o ab 2>>build.log; then
	notok "build the C++ program"
	diag_file build.log
	exit 1
fi
"$DFT" sites ab >sites.out 2>sites.err
check $? "sites reads the program"
grep -qx '_Z2fai' sites.out && grep -qx '_Z2fbi' sites.out && grep -qx 'main' sites.out
check $? "fa, fb and main are sites"
! grep -qx '_Z8untracedi' sites.out
check $? "a function built without a site is none"
# Did this compiler and linker drop b.o's records? (clang keeps them.)
size=$(readelf -SW ab | awk '$2 == "__patchable_function_entries" { print $6 }')
recs=$((16#${size:-0} / 8))
nsites=$(wc -l <sites.out)
if [ "$recs" -lt "$nsites" ]; then
	ok "the linker dropped records ($recs records, $nsites sites): the case is exercised"
else
	skip "$CXX kept every record ($recs records, $nsites sites)"
fi
recorded r ./ab
[ "$rc" -eq 0 ] && grep -qx 20 out
check $? "the program runs traced with the right result"
"$DFT" replay -d r >replay.out 2>&1
awk '/main\(\) \{/ { m = 1 } m && /fb\(\) \{/ { b = 1 } b && /fa\(\) \{/ { a = 1 }
	a && /\} \/\* fa \*\// { e = 1 } END { exit !(m && b && a && e) }' replay.out
check $? "replay nests fa in fb in main"
# Fully demangled, a name carries its parameter list: an entry prints
# without "()" after it, as uftrace does (it used to be "fb(int)() {").
"$DFT" replay -d r --demangle=full >full.out 2>&1
grep -q '^.*| *fb(int) {$' full.out && grep -q '} /\* fb(int) \*/' full.out
check $? "replay --demangle=full: fb(int) {"
if ! grep -q untraced replay.out; then
	ok "the site-less function is not in the trace"
else
	notok "the site-less function is not in the trace"
	diag_file replay.out
fi
echo "1..$tap_n"
tap_end
