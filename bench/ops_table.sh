#!/usr/bin/env bash
# ops_table.sh - the CALL_OPS table for dynftrace: the cost of a
# traced call against the number of relevant and irrelevant tracers, for the
# list function only, per-ops trampolines, CALL_OPS and per-ops trampolines
# of DYNFTRACE_OPS_FL_GPR_ONLY ops (the light body); where the time of one
# traced call goes; callgrind instruction counts per call. Prints markdown;
# never fails a test. Method: docs/PERFORMANCE.md, "Per-ops trampolines and
# CALL_OPS".
#
# Usage: bench/ops_table.sh [REPS] [PARTS_REPS]   (defaults 11 and 31)
# Needs: a built runtime and CLI (make), gcc; valgrind for the counts.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
REPS=${1:-11}
PREPS=${2:-31}
CC=${CC:-gcc}
B=${B:-$TOP/build}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -f "$B/libdynftrace.so" ] && [ -x "$B/dynftrace" ] || make -C "$TOP" -s lib cli || exit 1

S=$TOP/bench/ops_table.c
CF="-std=gnu11 -O2 -g -I$TOP/include"
# shellcheck disable=SC2046,SC2086
{
	$CC $CF $("$B/dynftrace" cflags --call-ops) -DOT_WORK -DPFX=co_ -c "$S" -o "$W/co.o" &&
		$CC $CF $("$B/dynftrace" cflags) -DOT_WORK -DOT_DUMMIES -DPFX=pl_ -c "$S" -o "$W/pl.o" &&
		$CC $CF "$S" "$W/co.o" "$W/pl.o" -o "$W/ops_table" -L"$B" -ldynftrace -Wl,-rpath,"$B"
} || {
	echo "ops_table.sh: build failed" >&2
	exit 1
}
OT=$W/ops_table

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "# dynftrace ops table (CALL_OPS rows), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# $(nproc) CPUs, $cpu, Linux $(uname -r), $($CC --version | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

"$OT" table "$REPS" >"$W/table" || exit 1
# val MODE R I FIELD: FIELD 5 median, 6 min, 7 max (ns for 100,000 calls)
val() { awk -v m="$1" -v r="$2" -v i="$3" -v f="$4" '$1 == "row" && $2 == m && $3 == r && $4 == i { print $f }' "$W/table"; }
per() { awk -v a="$1" 'BEGIN { printf "%.2f", a / 100000 }'; }

MODES="list tramp callops trampgpr callopsgpr"
for m in $MODES; do
	case $m in
	list) d="list function only (dynftrace_set_routes(0)), pl_target" ;;
	tramp) d="per-ops trampolines (DYNFTRACE_ROUTE_TRAMP), pl_target" ;;
	callops) d="CALL_OPS (DYNFTRACE_ROUTE_CALL_OPS), co_target built with --call-ops" ;;
	trampgpr) d="per-ops trampolines of GPR_ONLY ops (DYNFTRACE_OPS_FL_GPR_ONLY: light body), pl_target" ;;
	callopsgpr) d="CALL_OPS with GPR_ONLY ops (light CALL_OPS body), co_target built with --call-ops" ;;
	esac
	base=$(val $m 0 0 5)
	echo "## Mode: $d"
	echo
	echo "| relevant | irrelevant | total ns, 100,000 calls | ns per call | overhead ns | per call min-max |"
	echo "|---|---|---|---|---|---|"
	awk -v m=$m -v b="$base" '$1 == "row" && $2 == m {
		o = ($3 == 0 && $4 == 0) ? "-" : sprintf("%.2f", ($5 - b) / 100000)
		printf "| %d | %d | %d | %.2f | %s | %.2f-%.2f |\n", $3, $4, $5, $5 / 100000, o, $6 / 100000, $7 / 100000
	}' "$W/table"
	echo
done
echo "Callbacks counted: $(awk '$1 == "hits" { print $2 " (want " $4 ")" }' "$W/table")."
echo

echo "## Goals"
echo
echo "| mode | 1/0 overhead ns | 1/200 overhead ns | 1/200 vs 1/0 | 1/0 overhead vs list function's |"
echo "|---|---|---|---|---|"
lo=$(awk -v a="$(val list 1 0 5)" -v b="$(val list 0 0 5)" 'BEGIN { print (a - b) / 100000 }')
for m in $MODES; do
	b=$(val $m 0 0 5)
	awk -v m=$m -v b="$b" -v one="$(val $m 1 0 5)" -v two="$(val $m 1 200 5)" -v lo="$lo" 'BEGIN {
		o1 = (one - b) / 100000; o2 = (two - b) / 100000
		printf "| %s | %.2f | %.2f | %+.1f%% | %.2f |\n", m, o1, o2, (o2 / o1 - 1) * 100, o1 / lo
	}'
done
echo

"$OT" parts "$PREPS" >"$W/parts" || exit 1
pv() { awk -v k="$1" -v f="${2:-3}" '$1 == "part" && $2 == k { print $f }' "$W/parts"; }
echo "## Where one traced call's time goes (ns per call, median of $PREPS interleaved loops of 100,000 calls)"
echo
echo "| path (empty callback unless said) | ns per call (min-max) | step | step ns |"
echo "|---|---|---|---|"
prev=
for k in site_nop site_calls_ret save_restore_direct_cb save_gpr_direct_cb empty_callops empty_tramp empty_trampgpr empty_callopsgpr empty_list inc_callops inc_tramp inc_trampgpr inc_callopsgpr inc_list; do
	case $k in
	site_nop) d="site is a NOP (0/0)" s="-" ;;
	site_calls_ret) d="site calls a bare \`ret\` (hand-written)" s="call + ret" p=site_nop ;;
	save_restore_direct_cb) d="site calls a copy of the trampoline's save/restore around a direct call of the callback (hand-written)" s="save/restore 9 GPRs + 8 XMM, frame, indirect call" p=site_calls_ret ;;
	save_gpr_direct_cb) d="site calls a copy of the light body's save/restore around a direct call of the callback (hand-written)" s="vs the full save: no XMM" p=save_restore_direct_cb ;;
	empty_trampgpr) d="per-ops trampoline, GPR_ONLY ops (light body), 1/0" s="vs per-ops trampoline: no XMM save, the C entry's common case in assembly" p=empty_tramp ;;
	empty_callopsgpr) d="CALL_OPS, GPR_ONLY ops (light CALL_OPS body), 1/0" s="vs light per-ops body: no stub, the literal instead of the site check" p=empty_trampgpr ;;
	inc_callopsgpr) d="CALL_OPS, GPR_ONLY ops, 1/0, incrementing callback" s="vs empty callback" p=empty_callopsgpr ;;
	inc_trampgpr) d="per-ops trampoline, GPR_ONLY ops, 1/0, incrementing callback" s="vs empty callback" p=empty_trampgpr ;;
	empty_callops) d="CALL_OPS, 1/0" s="C entry: recursion guard, thread state, RCU read side, endbr test, literal load, ops->func" p=save_restore_direct_cb ;;
	empty_tramp) d="per-ops trampoline, 1/0" s="vs CALL_OPS: stub push+jmp, stub index to ops" p=empty_callops ;;
	empty_list) d="list function only, 1/0" s="vs CALL_OPS: dispatch_ops, list walk, filter bsearch" p=empty_callops ;;
	inc_callops) d="CALL_OPS, 1/0, incrementing callback" s="vs empty callback" p=empty_callops ;;
	inc_tramp) d="per-ops trampoline, 1/0, incrementing callback" s="vs empty callback" p=empty_tramp ;;
	inc_list) d="list function only, 1/0, incrementing callback" s="vs empty callback" p=empty_list ;;
	esac
	st="-"
	[ "$k" != site_nop ] && st=$(awk -v a="$(pv $k)" -v b="$(pv $p)" 'BEGIN { printf "%+.2f", a - b }')
	echo "| $d | $(pv $k) ($(pv $k 4)-$(pv $k 5)) | $s | $st |"
done
echo
echo "Against the kernel's arm64 CALL_OPS (2.81 ns per call against a 0.94 ns baseline:"
echo "+1.87 ns), empty callback over the NOP site, 1/0:"
echo
echo "| route | ns per call | over the NOP | x arm64's +1.87 |"
echo "|---|---|---|---|"
for k in empty_callops empty_tramp empty_trampgpr empty_callopsgpr empty_list; do
	awk -v k=$k -v a="$(pv $k)" -v b="$(pv site_nop)" 'BEGIN {
		printf "| %s | %.2f | +%.2f | %.1f |\n", substr(k, 7), a, a - b, (a - b) / 1.87
	}'
done
echo

if ! command -v valgrind >/dev/null; then
	echo "(valgrind not installed: no instruction counts)"
	exit 0
fi
N=10000
# cgrun MODE R I CB: instructions per call, and the annotate file
cgrun() {
	local f=$W/cg.$1.$2.$3.$4
	valgrind --tool=callgrind --smc-check=all --toggle-collect=run_calls \
		--callgrind-out-file="$f.out" "$OT" cg "$1" "$2" "$3" "$4" $N >/dev/null 2>"$f.err"
	callgrind_annotate --inclusive=no --auto=no --threshold=100 "$f.out" 2>/dev/null >"$f.ann"
	awk -v n=$N '/Collected :/ { printf "%.1f", $NF / n }' "$f.err"
}
echo "## Instructions per call (callgrind, $N calls; incrementing callback)"
echo
echo "| relevant/irrelevant | list | tramp | callops | trampgpr | callopsgpr |"
echo "|---|---|---|---|---|---|"
for ri in "0 0" "1 0" "1 10" "1 200" "2 0" "10 0"; do
	set -- $ri
	echo "| $1/$2 | $(cgrun list $1 $2 inc) | $(cgrun tramp $1 $2 inc) | $(cgrun callops $1 $2 inc) | $(cgrun trampgpr $1 $2 inc) | $(cgrun callopsgpr $1 $2 inc) |"
done
echo
# Breakdown of 1/0 with an empty callback, by function (self cost per call).
echo "## Instructions per call by part, 1/0, empty callback (callgrind self cost)"
echo
for m in nop ret save savegpr list tramp callops trampgpr callopsgpr; do cgrun $m 1 0 empty >"$W/ir.$m"; done
# part FILE REGEX: self instructions per call of the functions matching REGEX
part() {
	awk -v n=$N -v re="$2" 'match($0, /^ *[0-9,]+ +\( *[0-9.]+%\) +/) {
		c = $1; gsub(",", "", c); f = substr($0, RLENGTH + 1)
		if (f ~ re) s += c
	} END { printf "%.1f", s / n }' "$1"
}
echo "| part | hand-written: ret | hand-written: save/restore | hand-written: GPR save/restore | list | tramp | callops | trampgpr | callopsgpr |"
echo "|---|---|---|---|---|---|---|---|---|"
row() {
	local d=$1 re=$2 out="| $1 |"
	for m in ret save savegpr list tramp callops trampgpr callopsgpr; do
		out="$out $(part "$W/cg.$m.1.0.empty.ann" "$re") |"
	done
	echo "$out"
}
row "traced function + loop" "_loop |_target |loop_|mim_(nop|ret|save|savegpr) "
row "trampoline and stub (generated code; hand-written copy)" "^[?][?][?]:0x[0-9a-f]+ [[][?][?][?][]]|mim_tramp|mim_bare_ret"
row "C entry (dft_dispatch / dft_stub_entry / dft_callops_entry; the light bodies have none)" "ops.c:dft_"
row "RCU read side (inlined from internal.h)" "internal.h:"
row "list function + filter test" "list_func|filter_wants|set_has"
row "callback" "empty_cb "
echo "| total | $(cat "$W/ir.ret") | $(cat "$W/ir.save") | $(cat "$W/ir.savegpr") | $(cat "$W/ir.list") | $(cat "$W/ir.tramp") | $(cat "$W/ir.callops") | $(cat "$W/ir.trampgpr") | $(cat "$W/ir.callopsgpr") |"
echo
echo "(site as a NOP: $(cat "$W/ir.nop") instructions per call)"
