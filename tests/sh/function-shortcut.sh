#!/usr/bin/env bash
# description: the function tracer on the graph shortcut writes 8-byte function_near events for near callers (compiler sites and relocated entries), the whole address for far ones, the same calls and callers as its per-ops route
# config: asan
#
# tests/function/near.c calls leaf() from main, cmp() from the C library's
# qsort (a far caller) and from_handler() from a signal handler; it runs on
# after the runtime's TSC clock is calibrated, so both the assembly entry
# and its C slow path write events. Recorded with -T function on the graph
# shortcut (the default), the per-ops route (DYNFTRACE_GRAPH_SHORTCUT=0)
# and, built without sites, on relocated entries (-P): every run must end
# as untraced (status 0, its counts printed), its sites must be on the expected
# route, replay must show every call of leaf and cmp (the counts the
# program prints) and exactly the same callers in every run (address space
# randomisation off: a far caller's address is the same), babeltrace2 must
# read the shortcut's trace with function_near events for leaf and
# `function` events for cmp, and the relocated run's with function_near
# events for leaf. Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san

if ! command -v babeltrace2 >/dev/null; then
	notok "babeltrace2 is not installed (scripts/deps.sh test installs it)"
	exit 1
fi
norand=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norand=(setarch "$(uname -m)" -R)
fi
if ! cc_prog near "$TOP/tests/function/near.c" $TRACE_FLAGS 2>build.log ||
	! cc_prog near-plain "$TOP/tests/function/near.c" 2>>build.log; then
	notok "build the test program"
	diag_file build.log
	exit 1
fi
# the counts depend on the time the loop ran: the names only
want=$(./near 20 | cut -d' ' -f1)

# run NAME ROUTE PROG ENV... -- RECORD-OPTS...: record into d-NAME; the
# program's output, the routes, the calls of leaf and cmp in replay.
run() {
	local name=$1 route=$2 prog=$3
	shift 3
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rm -rf "d-$name"
	# shellcheck disable=SC2086
	# -b: every call is counted against the replay, so none may be lost
	# when a loaded machine's consumer falls behind (20 MB of events)
	"${norand[@]}" env ROUTES=1 DYNFTRACE_CONTROL=0 "${envs[@]}" "$DFT" record $HIDE -T function \
		-b 65536 -d "d-$name" "$@" -- "./$prog" 20 >"out-$name" 2>"err-$name"
	local rc=$? got
	got=$(cut -d' ' -f1 "out-$name")
	if [ $rc -ne 0 ] || [ "$got" != "$want" ]; then
		notok "$name: runs as untraced (status $rc)"
		diag_file "err-$name"
		return 1
	fi
	local bad n
	bad=$(grep '^route ' "err-$name" | grep -v " $route\$")
	n=$(grep -c "^route .* $route\$" "err-$name")
	"$DFT" replay -d "d-$name" >"replay-$name" 2>&1
	local nleaf ncmp nh
	nleaf=$(grep -c '] leaf() <- main$' "replay-$name")
	ncmp=$(grep -c '] cmp() <- ' "replay-$name")
	nh=$(grep -c '] from_handler() <- on_alarm$' "replay-$name")
	[ $rc -eq 0 ] && [ -z "$bad" ] && [ "$n" -ge 3 ] &&
		[ "$nleaf" = "$(sed -n 's/^leaf //p' "out-$name")" ] &&
		[ "$ncmp" = "$(sed -n 's/^cmp //p' "out-$name")" ] &&
		[ "$nh" -le "$(sed -n 's/^from_handler //p' "out-$name")" ] &&
		! grep -qE '] from_handler\(\) <- [^o]' "replay-$name"
	check $? "$name: runs as untraced, sites on the $route route, every call of leaf ($nleaf) and cmp ($ncmp) in replay with its caller"
	# the distinct "function <- caller" pairs, without the times and tids;
	# not the handler's: a signal that lands inside the tracer is not
	# traced (recursion), so a run may have none of them
	sed -nE 's/^ *[0-9.]+ \[ *[0-9]+\] //p' "replay-$name" | grep -Ev '^(from_handler|on_alarm)\(' |
		LC_ALL=C sort -u >"pairs-$name"
	return 0
}

run shortcut graph near -- && {
	ok=0
	grep -qE '] cmp\(\) <- 0x[0-9a-f]+$' replay-shortcut || ok=1
	check $ok "shortcut: cmp's caller is the C library's address"
	babeltrace2 d-shortcut/ctf >bt.out 2>bt.err
	rc=$?
	near=$(grep -cE '\) function_near: .*func = [0-9]+, parent_off = -?[0-9]+ \}$' bt.out)
	far=$(grep -cE '\) function: .*parent_ip = [0-9]+ \}$' bt.out)
	nleaf=$(sed -n 's/^leaf //p' out-shortcut)
	check $([ $rc -eq 0 ] && ! grep -qiE 'error|critical' bt.err && [ "$near" -ge "$nleaf" ] &&
		[ "$far" -ge "$(sed -n 's/^cmp //p' out-shortcut)" ]
	echo $?) "shortcut: babeltrace2 reads $near function_near and $far function events"
}
run per-ops tramp near DYNFTRACE_GRAPH_SHORTCUT=0 -- &&
	{ diff -u pairs-shortcut pairs-per-ops >diff.txt; check $? "per-ops route: the same callers as the shortcut"; }
[ -s diff.txt ] && diag_file diff.txt
rm -f diff.txt
run relocated graph near-plain -- -P 'main,leaf,cmp,on_alarm,from_handler' && {
	diff -u pairs-per-ops pairs-relocated >diff.txt
	check $? "relocated entries: the same callers"
	# the preserving thunk finds the function's address in the entry's
	# block: leaf's near caller takes the 8-byte event there too
	babeltrace2 d-relocated/ctf >bt-rel.out 2>bt-rel.err
	rc=$?
	near=$(grep -cE '\) function_near: .*func = [0-9]+, parent_off = -?[0-9]+ \}$' bt-rel.out)
	nleaf=$(sed -n 's/^leaf //p' out-relocated)
	check $([ $rc -eq 0 ] && ! grep -qiE 'error|critical' bt-rel.err && [ "$near" -ge "$nleaf" ]
	echo $?) "relocated entries: babeltrace2 reads $near function_near events for $nleaf calls of leaf"
}
[ -s diff.txt ] && diag_file diff.txt
tap_end
