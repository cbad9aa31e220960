#!/usr/bin/env bash
# description: functions built without sites traced through relocated entries: plain gcc/clang programs (-O0/-O2, with and without CET's endbr64, PIE or not, stripped or not) and libc's malloc/free/read from threads, every register kept
#
# tests/entries/plain.c is built with no dynftrace flags. Recorded with
# -P (the entries relocated), its output must be the untraced one with
# every tracer and on the graph tracer's slow path: gcc -O2's callers keep
# values in call-clobbered registers across calls to local functions
# (-fipa-ra), general and vector ones, so a route that changed a register
# changes the result. The replay holds every call of leaf and dleaf;
# loop_head (a loop's head in its first bytes) is refused, reported by
# `sites --all`, and runs untraced. Stripped, the functions are named
# sub_ADDR@plain and -P 'sub_*' patches them. With main patched too, the
# call tree of 3 calls each must be tests/entries/plain.golden. tests/entries/libc_calls.c:
# 4 threads x 1000 calls of malloc, free and read, patched in libc.so.6
# (-P FUNC@libc): read's count is exact, malloc's and free's at least the
# program's (libc calls them itself). tests/entries/regs.c checks every
# general, vector and mask register on each route. A fork with the whole C
# library patched shows none of the runtime's own calls from its fork
# handlers. Needs libcapstone4.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
S=$TOP/tests/entries
D=$B/dynftrace
if ! ls /usr/lib/x86_64-linux-gnu/libcapstone.so.4 >/dev/null 2>&1 &&
	! ldconfig -p 2>/dev/null | grep -q libcapstone.so.4; then
	skip "libcapstone4 is not installed"
	tap_end
	exit 0
fi
N=100
for cc in $compilers; do
	for opt in -O0 -O2 "-O2 -fcf-protection=full"; do
		for pie in pie no-pie; do
			p=$T/plain-$cc${opt// /}-$pie
			# shellcheck disable=SC2086
			if ! $cc $opt -g -$pie $([ $pie = pie ] && echo -fPIE) "$S/plain.c" -o "$p" 2>"$T/build.log"; then
				notok "$cc $opt $pie: build"
				diag_file "$T/build.log"
				continue
			fi
			want=$("$p" $N)
			bad=
			for how in "" "-T function" "-T profile" "-t 1ns" "DYNFTRACE_GRAPH_SHORTCUT=0"; do
				envs=() opts=()
				case $how in DYNFTRACE*) envs=("$how") ;; *) read -ra opts <<<"$how" ;; esac
				rm -rf "$T/d"
				got=$(env "${envs[@]}" "$D" record -d "$T/d" "${opts[@]}" -P leaf -P dleaf \
					-P 'sum_*' -P loop_head -- "$p" $N 2>"$T/err")
				[ "$got" = "$want" ] || bad="$bad [${how:-function_graph}: '$got']"
			done
			rm -rf "$T/d"
			"$D" record -d "$T/d" -P leaf -P dleaf -P 'sum_*' -P loop_head -- "$p" $N >/dev/null 2>"$T/err"
			"$D" replay -d "$T/d" >"$T/replay" 2>&1
			nl=$(grep -c ' leaf();' "$T/replay")
			nd=$(grep -c ' dleaf();' "$T/replay")
			nh=$(grep -c 'loop_head' "$T/replay")
			"$D" info -d "$T/d" >"$T/info" 2>&1
			grep -q '^# patched (-P)   : 4 functions in 1 object, 1 refused' "$T/info" &&
				grep -q '^#   refused      : loop_head in .*: a branch at' "$T/info" ||
				bad="$bad [info: $(grep -E 'patched|refused' "$T/info")]"
			if [ -z "$bad" ] && [ "$nl" -eq $N ] && [ "$nd" -eq $N ] && [ "$nh" -eq 0 ]; then
				ok "$cc $opt $pie: output as untraced with every tracer; $nl leaf and $nd dleaf calls, loop_head untraced, info says so"
			else
				notok "$cc $opt $pie: $bad; leaf $nl, dleaf $nd, loop_head $nh (want $N, $N, 0)"
				diag_file "$T/err"
				diag_file "$T/replay"
			fi
			# the golden call tree (tests/entries/plain.golden), main patched too
			rm -rf "$T/d"
			"$D" record -d "$T/d" -P main -P leaf -P dleaf -P 'sum_*' -P loop_head -- "$p" 3 \
				>/dev/null 2>"$T/err"
			"$D" replay --no-time -d "$T/d" 2>&1 | sed -n 's/^\[ *[0-9]*\] | //p' >"$T/tree"
			if cmp -s "$T/tree" "$S/plain.golden"; then
				ok "$cc $opt $pie: the call tree is the golden one"
			else
				notok "$cc $opt $pie: the call tree differs from tests/entries/plain.golden"
				diag_file <(diff "$S/plain.golden" "$T/tree")
				diag_file "$T/err"
			fi
			verdict=$("$D" sites --all "$p" 2>&1 | grep -P '^loop_head\t')
			case $verdict in *"refused: a branch at "*", inside the relocated bytes"*)
				ok "$cc $opt $pie: sites --all refuses loop_head: ${verdict#*	}" ;;
			*) notok "$cc $opt $pie: sites --all on loop_head: '$verdict'" ;;
			esac
			# stripped: FDE entries, named sub_ADDR@plain-...
			cp "$p" "$p.s" && strip "$p.s"
			rm -rf "$T/d"
			got=$("$D" record -d "$T/d" -P 'sub_*' -- "$p.s" $N 2>"$T/err")
			"$D" replay -d "$T/d" >"$T/replay" 2>&1
			ns=$(grep -c 'sub_[0-9a-f]*@' "$T/replay")
			if [ "$got" = "$want" ] && [ "$ns" -ge $((2 * N)) ]; then
				ok "$cc $opt $pie stripped: -P 'sub_*' output as untraced, $ns calls of sub_ADDR functions"
			else
				notok "$cc $opt $pie stripped: '$got' (want '$want'), $ns sub_ calls"
				diag_file "$T/err"
			fi
		done
	done
done
# a function that begins with a call (sub; call) is relocated; exceptions
# thrown by its callee unwind through it (the callee returns into it)
if g++ -O2 "$TOP/tests/entries/callfirst.cc" -o "$T/callfirst" 2>"$T/build.log"; then
	rm -rf "$T/d"
	got=$("$D" record -d "$T/d" -P 'mid*' -P 'thrower*' -- "$T/callfirst" 9 2>"$T/err")
	"$D" replay -d "$T/d" >"$T/replay" 2>&1
	nm=$(grep -c '^.*| mid() {' "$T/replay")
	nu=$(grep -c '} /\* mid \*/ (unwound)' "$T/replay")
	verdict=$("$D" sites --all "$T/callfirst" 2>/dev/null | grep '^_Z3midi')
	if [ "$got" = "60 3" ] && [ "$nm" -eq 9 ] && [ "$nu" -eq 3 ] &&
		[ "${verdict#*	}" = entry ]; then
		ok "a function beginning with a call: relocated, 9 calls, 3 unwound by exceptions, output as untraced"
	else
		notok "a function beginning with a call: '$got' (want '60 3'), $nm mid() (want 9), $nu unwound (want 3), verdict '$verdict'"
		diag_file "$T/err"
		diag_file "$T/replay"
	fi
	# the same with every function of the C++ and unwinder libraries
	# relocated: the unwinder's entry points are refused by name, the
	# function that starts the unwinding from its own return address
	# (libgcc's uw_init_context_1, unnamed when stripped) by its code
	rm -rf "$T/d"
	got=$("$D" record -d "$T/d" -P '*' --patch-libs -- "$T/callfirst" 9 2>"$T/err")
	"$D" replay -d "$T/d" >"$T/replay" 2>&1
	nm=$(grep -c '| *mid() {' "$T/replay")
	nu=$(grep -c '} /\* mid \*/ (unwound)' "$T/replay")
	nt=$(grep -c '__cxa_throw() {' "$T/replay")
	if [ "$got" = "60 3" ] && [ "$nm" -eq 9 ] && [ "$nu" -eq 3 ] && [ "$nt" -eq 3 ] &&
		grep -q 'refused	_Unwind_RaiseException.*unwinds the stack from its own frame' "$T"/d/patch-*.txt &&
		grep -q 'libgcc_s.*reads its own return address' "$T"/d/patch-*.txt; then
		ok "exceptions with libstdc++ and libgcc_s relocated: output as untraced, 9 mid(), 3 unwound, 3 __cxa_throw()"
	else
		notok "exceptions, -P '*' --patch-libs: '$got' (want '60 3'), $nm mid() (want 9), $nu unwound (want 3), $nt __cxa_throw (want 3)"
		diag_file "$T/err"
		grep -h 'Unwind\|return address' "$T"/d/patch-*.txt | diag_file /dev/stdin
	fi
else
	notok "build tests/entries/callfirst.cc"
	diag_file "$T/build.log"
fi
# executable segments with unmapped pages between them (node: .init and
# .plt, then .text two pages on): the sweeps stop at a segment's end
if $CC -O1 -no-pie -Wl,--section-start=.text=0x600000 "$S/plain.c" -o "$T/gap" 2>"$T/build.log"; then
	rm -rf "$T/d"
	want=$("$T/gap" 5)
	got=$("$D" record -d "$T/d" -P '*' -- "$T/gap" 5 2>"$T/err")
	rc=$?
	nl=$("$D" replay -d "$T/d" 2>/dev/null | grep -c '| *leaf();')
	[ $rc -eq 0 ] && [ "$got" = "$want" ] && [ "$nl" -eq 5 ]
	check $? "code in two segments with a hole between: -P '*' runs (status $rc), 5 leaf() calls ($nl)"
else
	notok "build plain.c with .text apart"
	diag_file "$T/build.log"
fi
# hand-written code without unwind information is refused, with it relocated
if $CC -O1 "$S/asmfuncs.c" -o "$T/asmfuncs" 2>"$T/build.log"; then
	rm -rf "$T/d"
	got=$("$D" record -d "$T/d" -P 'asm_*' -- "$T/asmfuncs" 4 2>"$T/err")
	nc=$("$D" replay -d "$T/d" 2>/dev/null | grep -c 'asm_cfi();')
	nn=$("$D" replay -d "$T/d" 2>/dev/null | grep -c 'asm_nocfi')
	verdict=$("$D" sites --all "$T/asmfuncs" 2>/dev/null | grep -P '^asm_nocfi\t')
	if [ "$got" = 20 ] && [ "$nc" -eq 4 ] && [ "$nn" -eq 0 ] &&
		grep -q 'refused	asm_nocfi	.*no unwind information' "$T"/d/patch-*.txt &&
		[ "${verdict#*no unwind information}" != "$verdict" ] &&
		! grep -q '^dynftrace\[' "$T/err" &&
		grep -q "^dynftrace: 1 function named by -P could not be patched (in 1 object): 'dynftrace info' lists them" "$T/err"; then
		ok "assembly: with CFI relocated (4 calls), without refused by a glob: no unwind information; record says so once, the program's stderr is left alone"
	else
		notok "assembly: output '$got' (want 20), asm_cfi $nc calls (want 4), asm_nocfi $nn (want 0), sites --all: '$verdict'"
		diag_file "$T/err"
		grep -h asm_ "$T"/d/patch-*.txt | diag_file /dev/stdin
	fi
	rm -rf "$T/d"
	got=$("$D" record -d "$T/d" -P asm_nocfi -- "$T/asmfuncs" 4 2>"$T/err")
	nn=$("$D" replay -d "$T/d" 2>/dev/null | grep -c 'asm_nocfi();')
	[ "$got" = 20 ] && [ "$nn" -eq 4 ]
	check $? "assembly without CFI, named exactly: relocated (output '$got', $nn calls)"
else
	notok "build tests/entries/asmfuncs.c"
	diag_file "$T/build.log"
fi
# a -P pattern that matched no function is reported; one that did is not,
# nor an exclusion (its functions have no site by design)
rm -rf "$T/d"
"$D" record -d "$T/d" -P leaf -P 'sum_*' -P '!sum_dbls' -P 'nosuch_p*' -- \
	"$T/plain-${compilers%% *}-O2-pie" 2 >/dev/null 2>"$T/err"
if grep -q "warning: -P 'nosuch_p\*' matched no function" "$T/err" &&
	[ "$(grep -c 'matched no function' "$T/err")" -eq 1 ]; then
	ok "-P 'nosuch_p*' (matching nothing) is reported, -P leaf and -P '!sum_dbls' are not"
else
	notok "-P 'nosuch_p*' (matching nothing) is reported, -P leaf and -P '!sum_dbls' are not"
	diag_file "$T/err"
fi
# the same program stripped: its static functions have no name to match,
# and the warning says so (the common case with distribution binaries)
cp "$T/plain-${compilers%% *}-O2-pie" "$T/plain-stripped" && strip "$T/plain-stripped"
rm -rf "$T/d"
"$D" record -d "$T/d" -P 'sum_*' -- "$T/plain-stripped" 2 >/dev/null 2>"$T/err"
grep -q "warning: -P 'sum_\*' matched no function traced in this run ($T/plain-stripped is stripped: only the functions it exports have names, the others are sub_ADDRESS" "$T/err"
check $? "-P on a stripped program: the warning says that it is stripped"
[ $? -ne 0 ] && diag_file "$T/err"
# libc's own functions, from 4 threads
# tests/entries/regs.c: every general, vector and mask register the CPU
# has comes back from target_fn as it was, on each route and path: the
# graph thunk's fast and slow paths (-t), untraced through it (-D 1 with
# outer_fn traced), the preserving trampoline (-T function, -T profile, the
# shortcut off).
if ! $CC -O2 "$S/regs.c" -o "$T/regs" 2>"$T/build.log"; then
	notok "build regs"
	diag_file "$T/build.log"
else
	for how in "" "-t 1ns" "-D 1" "-T function" "-T profile" "DYNFTRACE_GRAPH_SHORTCUT=0"; do
		envs=() opts=()
		case $how in DYNFTRACE*) envs=("$how") ;; *) read -ra opts <<<"$how" ;; esac
		rm -rf "$T/d"
		got=$(env "${envs[@]}" "$D" record -d "$T/d" "${opts[@]}" -P target_fn -P outer_fn -- \
			"$T/regs" 2000 outer 2>"$T/err")
		"$D" report -d "$T/d" >"$T/report" 2>&1
		# traced: target_fn, but with -D 1 only outer_fn
		seen=target_fn unseen=none
		[ "$how" = "-D 1" ] && seen=outer_fn unseen=target_fn
		if [ "$got" = "ok 2000" ] && grep -q "$seen" "$T/report" && ! grep -q "$unseen" "$T/report"; then
			ok "every register kept through a relocated entry (${how:-function_graph})"
		else
			notok "registers through a relocated entry (${how:-function_graph}): $got"
			diag_file "$T/err"
		fi
	done
fi
# The same through the API: a GPR_ONLY callback (the light body), a full
# one (the preserving trampoline), both (the list); exact counts.
if ! cc_prog "$T/regs-api" "$S/regs.c" -O2 -DREGS_API -I"$TOP/include" 2>"$T/build.log"; then
	notok "build regs with the API"
	diag_file "$T/build.log"
else
	got=$(DYNFTRACE_PATCH=target_fn "$T/regs-api" 2000 api 2>"$T/err")
	[ "$got" = "ok 2000" ]
	check $? "every register kept, every call counted, through callbacks on a relocated entry: light, full and both ($got)"
	[ "$got" = "ok 2000" ] || diag_file "$T/err"
fi

if ! $CC -O2 "$S/libc_calls.c" -o "$T/lc" -lpthread 2>"$T/build.log"; then
	notok "build libc_calls"
	diag_file "$T/build.log"
else
	for tr in function function_graph; do
		rm -rf "$T/d"
		out=$("$D" record -d "$T/d" -T $tr -P malloc@libc -P free@libc -P read@libc -- "$T/lc" 4 1000 2>"$T/err")
		"$D" report -d "$T/d" >"$T/report" 2>&1
		cnt() { awk -v f="$1" '$NF == f { print $(NF - 1) }' "$T/report"; }
		m=$(cnt malloc) f=$(cnt free) r=$(cnt read)
		if [ "$out" = "calls 4000" ] && [ "$r" = 4000 ] && [ "${m:-0}" -ge 4000 ] && [ "${m:-0}" -le 4016 ] &&
			[ "${f:-0}" -ge 4000 ] && [ "${f:-0}" -le 4016 ]; then
			ok "$tr: libc.so.6's read $r calls (exact), malloc $m, free $f (the program's 4000 and libc's own)"
		else
			notok "$tr: '$out', read '$r', malloc '$m', free '$f' (want 4000, >= 4000)"
			diag_file "$T/err"
			diag_file "$T/report"
		fi
	done
fi
# A filter serves as -P where compiler sites cannot: -F FUNC@OBJECT
# patches that object's function; on a program without any site, plain -F
# patterns patch the program's functions. Exact counts, and nothing else.
if [ -x "$T/lc" ]; then
	rm -rf "$T/d"
	out=$("$D" record -d "$T/d" -F read@libc -- "$T/lc" 2 500 2>"$T/err")
	"$D" report -d "$T/d" >"$T/report" 2>&1
	r=$(awk '$NF == "read" { print $(NF - 1) }' "$T/report")
	others=$(awk '$NF ~ /^[a-z_]+$/ && $NF != "read" && $NF != "NAME"' "$T/report" | wc -l)
	[ "$out" = "calls 1000" ] && [ "$r" = 1000 ] && [ "$others" = 0 ]
	check $? "-F read@libc alone: read patched and traced, $r calls (want 1000), no other function ($others)"
	[ "$r" = 1000 ] || { diag_file "$T/err"; diag_file "$T/report"; }
fi
p=$T/plain-${compilers%% *}-O0-pie
rm -rf "$T/d"
got=$("$D" record -d "$T/d" -F leaf -F 'free@libc' -- "$p" 7 2>"$T/err")
rc=$?
"$D" report -d "$T/d" >"$T/report" 2>&1
nl=$(awk '$NF == "leaf" { print $(NF - 1) }' "$T/report")
nd=$(awk '$NF == "dleaf" { print $(NF - 1) }' "$T/report")
[ $rc -eq 0 ] && [ "$got" = "$("$p" 7)" ] && [ "$nl" = 7 ] && [ -z "$nd" ]
check $? "a program without sites: -F leaf patches leaf (7 calls: '$nl'), dleaf untraced ('$nd')"
[ "$nl" = 7 ] || { diag_file "$T/err"; diag_file "$T/report"; }
# The whole C library patched (-P '*@libc.so*'): a shell pipeline (fork,
# exec, pipes, signals) and its children run as untraced, with every
# tracer; the main thread's first traced call is the program's
# (__libc_start_main), none of the runtime's own start-up.
want=$(bash -c 'for i in 3 1 2; do echo $i; done | sort -r; ls / >/dev/null && echo ok')
for how in "" "-T function" "-T profile"; do
	read -ra opts <<<"$how"
	rm -rf "$T/d"
	got=$("$D" record -d "$T/d" "${opts[@]}" -P '*@libc.so*' -- \
		bash -c 'for i in 3 1 2; do echo $i; done | sort -r; ls / >/dev/null && echo ok' 2>"$T/err")
	rc=$?
	[ $rc -eq 0 ] && [ "$got" = "$want" ]
	check $? "the whole C library patched, ${how:-function_graph}: a pipeline runs as untraced (status $rc)"
	[ $rc -eq 0 ] && [ "$got" = "$want" ] || diag_file "$T/err"
done
rm -rf "$T/d"
"$D" record -d "$T/d" -P '*@libc.so*' -- "$T/plain-${compilers%% *}-O2-pie" 2 >/dev/null 2>"$T/err"
first=$("$D" replay -d "$T/d" 2>/dev/null | sed -n 's/^.*| \([^ ]*\)().*$/\1/p' | head -1)
calls=$("$D" info -d "$T/d" 2>/dev/null | sed -n 's/^# events  *: .*(\([0-9,]*\) calls)$/\1/p')
case $first in __libc_start_main*) r=0 ;; *) r=1 ;; esac
check $r "the first traced call is the program's ($first), of $calls"
# The sweep of the C library for branches into entries runs once per
# recording: the first image keeps it in the session's cache/, the images
# exec'd after it read it. Their refusals are the same as a sweep's, and a
# cache file that does not parse is swept again and replaced.
rm -rf "$T/d"
DYNFTRACE_VERBOSE=1 "$D" record -d "$T/d" -P '*@libc.so*' -- \
	bash -c '/bin/true; /bin/true' >/dev/null 2>"$T/err"
rc=$?
hits=$(grep -c 'libc.so.6: the sweep for relocated entries from the cache' "$T/err")
first=$(sed -n 's/^pid: //p' "$T/d/info" | head -1)
libc_refused() { grep "	/.*libc.so.6	" "$1" | sort; }
libc_refused "$T/d/patch-$first.txt" >"$T/swept"
same=1
for f in "$T"/d/patch-*.1.txt; do
	libc_refused "$f" | cmp -s - "$T/swept" || same=0
done
[ $rc -eq 0 ] && [ "$hits" = 2 ] && [ -s "$T/swept" ] && [ $same = 1 ] &&
	ls "$T"/d/cache/sweep-*.txt >/dev/null 2>&1
check $? "the C library's sweep is kept for the recording: 2 exec'd images read it ($hits), with the same $(wc -l <"$T/swept") refusals"
[ "$hits" = 2 ] || diag_file "$T/err"
for c in "$T"/d/cache/sweep-*.txt; do
	printf 'dynftrace-sweep 1 1 2 3 4 5 1\nzz\n' >"$c"
done
DYNFTRACE_VERBOSE=1 DYNFTRACE_RELOC_CACHE=$T/d/cache LD_PRELOAD=$B/libdynftrace.so \
	DYNFTRACE_PATCH='*@libc.so*' /bin/true 2>"$T/err3"
rc=$?
! grep -q 'from the cache' "$T/err3" && grep -q '^dynftrace-sweep 1 [0-9]* [0-9]*' "$T"/d/cache/sweep-*.txt &&
	! grep -q '^zz' "$T"/d/cache/sweep-*.txt
check $? "a cache file that does not match is swept again and replaced (status $rc)"
# A fork with the whole C library patched: the runtime's fork handlers
# (the recorder's and the control endpoint's) run libc's functions, which
# are the runtime's own and not traced; the program calls none of these.
cat >"$T/forker.c" <<'EOF'
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	int bad = 0;
	for (int i = 0; i < 3; i++) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		int st;
		waitpid(c, &st, 0);
		bad |= !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return bad;
}
EOF
if $CC -O2 "$T/forker.c" -o "$T/forker" 2>"$T/build.log"; then
	rm -rf "$T/d"
	"$D" record -d "$T/d" -P '*@libc.so*' -- "$T/forker" 2>"$T/err"
	rc=$?
	"$D" replay -d "$T/d" >"$T/replay" 2>&1
	# Before: __run_prefork_handlers() { pthread_mutex_lock(); nanosleep() ...
	# in the parent, fork() { pthread_mutex_unlock(); fstat(); close(); ...
	# in the child.
	own=$(grep -c '__run_prefork_handlers() {' "$T/replay")
	pre=$(grep -c '__run_prefork_handlers();' "$T/replay")
	leaves=$(grep -cE '\| +fork\(\);' "$T/replay")
	[ $rc -eq 0 ] && [ "$own" = 0 ] && [ "$pre" = 3 ] && [ "$leaves" -ge 3 ]
	check $? "fork with the whole C library patched: the fork handlers' calls are the runtime's, not traced (the prefork handlers and the child's fork are leaves: $pre, $leaves)"
	[ "$pre" = 3 ] && [ "$leaves" -ge 3 ] || grep -n -A12 'fork() {' "$T/replay" | head -30 | sed 's/^/# /'
	# The exit of the function that ran the prepare handlers comes in the
	# fork's window, where the forking thread has no buffer: it is kept
	# and written by the parent's handler. Lost, the parent's tree nested
	# one fork deeper at each fork, none of them closed.
	par=$(sed -n 's/^pid: //p' "$T/d/info" | head -1)
	closed=$(grep -cE "\[ *$par\] \|     \} /\* fork \*/\$" "$T/replay")
	lost=$("$D" info -d "$T/d" 2>/dev/null | sed -n 's/^# lost events *: //p')
	[ "$closed" = 3 ] && [ "$lost" = 0 ] && ! grep -qE 'lost [0-9,]+ event' "$T/replay"
	check $? "fork with the whole C library patched: the parent's 3 forks each close at their depth ($closed), 0 events lost ($lost)"
	[ "$closed" = 3 ] || grep -n -B2 -A3 'fork' "$T/replay" | head -40 | sed 's/^/# /'
else
	notok "build the forking program"
	diag_file "$T/build.log"
fi
tap_end
