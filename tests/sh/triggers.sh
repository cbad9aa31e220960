#!/usr/bin/env bash
# description: triggers: only the sites that carry one leave the graph shortcut (x86-64), what each does to the trace; bad triggers and regexes are refused with a sentence
# config: asan
#
# tests/progs/trig-routes.c, recorded with -T, prints each tr_* site's
# route. On x86-64 a trigger that acts at run time (depth=, time=,
# trace_on, trace_off, finish) takes its site off the "graph" route;
# filter, notrace and backtrace (graph lists and the reader) change no
# route, and no other site's. aarch64 and riscv64 have no graph shortcut:
# every site stays on the per-ops trampoline ("tramp"). On each, the
# replay of every recording shows what the trigger did to tr_a -> tr_b ->
# tr_c (the trigger goldens, tests/golden/s-trig-*, check the actions on
# a larger program). Then the command's refusals: an unknown action,
# uftrace's actions dynftrace does not have, a trigger without an action,
# a tracer name with a typo, a regex that does not compile (record,
# replay), a trigger with the function tracer. Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san
if ! cc_prog "$T/trig-routes" $TRACE_FLAGS "$TOP/tests/progs/trig-routes.c" 2>build.log; then
	notok "build tests/progs/trig-routes.c"
	diag_file build.log
	exit 1
fi

# The route of a site the graph tracer alone wants: x86-64's graph
# shortcut; aarch64 and riscv64 have no shortcut (ARCH_THUNK_SIZE 0), their
# sites take the per-ops trampoline, the route a site with a run-time
# trigger takes on x86-64 too. So there the routes do not tell the sites
# apart, and what the triggers do is checked in the replay below.
case "$ARCH" in
x86_64) G=graph ;;
*) G=tramp ;;
esac
all="tr_a $G tr_b $G tr_c $G"

# routes TRIGGER...: "tr_a ROUTE tr_b ROUTE tr_c ROUTE" under record -T ...,
# the recording left in d
routes() {
	local args=() t
	for t in "$@"; do args+=(-T "$t"); done
	rm -rf d
	"$DFT" record $HIDE -d d "${args[@]}" "$T/trig-routes" >out 2>err || return 1
	sort out | tr '\n' ' ' | sed 's/ $//'
}
# calls: the replay of d as its tr_* calls, "tr_a() { tr_b(); " (a call
# with children opens a brace, a leaf ends with ';')
calls() {
	"$DFT" replay $HIDE -d d --no-time 2>>err | grep -oE 'tr_[abc]\(\)( \{|;)' | tr '\n' ' '
}
# effect WHAT WANT: the replay of d is WANT
effect() {
	local c
	c=$(calls)
	if [ "$c" = "$2" ]; then
		ok "$1: the replay shows '$c'"
	else
		notok "$1: the replay shows '$c', expected '$2'"
		diag_file err
	fi
}
full="tr_a() { tr_b() { tr_c(); "

r=$(routes)
if [ "$r" = "$all" ]; then
	ok "no trigger: every site takes the $G route"
else
	notok "no trigger: routes '$r', expected '$all'"
	diag_file err
fi
effect "no trigger" "$full"
# What each trigger on tr_b does to the trace of tr_a -> tr_b -> tr_c:
# depth=1 keeps tr_b but not its callee; time=10s hides the call (and its
# callees) that took less; trace_off and finish stop the trace at tr_b;
# trace_on (the trace is on already) and depth=2 change nothing here.
for tw in "depth=1:tr_a() { tr_b(); " "time=10s:tr_a(); " "trace_on:$full" "trace_off:tr_a(); " \
	"finish:tr_a(); " "depth=2,trace_on:$full"; do
	t=${tw%%:*}
	r=$(routes "tr_b@$t")
	if [ "$G" = graph ]; then
		case $r in
		"$all" | "" | *"tr_a "[!g]* | *"tr_c "[!g]*)
			notok "tr_b@$t: routes '$r' (tr_b must leave the shortcut, tr_a and tr_c keep it)"
			diag_file err
			;;
		*) ok "tr_b@$t: only tr_b leaves the shortcut ($r)" ;;
		esac
	elif [ "$r" = "$all" ]; then
		ok "tr_b@$t: every site stays on the per-ops trampoline (no graph shortcut on $ARCH)"
	else
		notok "tr_b@$t: routes '$r', expected '$all'"
		diag_file err
	fi
	effect "tr_b@$t" "${tw#*:}"
done
# filter, notrace and backtrace act in the graph lists and the reader: no
# route changes.
for tw in "filter:tr_b() { tr_c(); " "notrace:tr_a(); " "backtrace:$full"; do
	t=${tw%%:*}
	r=$(routes "tr_b@$t")
	if [ "$r" = "$all" ]; then
		ok "tr_b@$t: no route changes (graph lists, the reader)"
	else
		notok "tr_b@$t: routes '$r'"
		diag_file err
	fi
	effect "tr_b@$t" "${tw#*:}"
	if [ "$t" = backtrace ]; then
		if "$DFT" replay $HIDE -d d --no-time 2>>err | grep -q 'backtrace: tr_b <- tr_a <- main'; then
			ok "tr_b@backtrace: the replay shows tr_b's backtrace"
		else
			notok "tr_b@backtrace: no 'backtrace: tr_b <- tr_a <- main' in the replay"
			diag_file err
		fi
	fi
done
r=$(routes 'tr_[bc]@depth=1')
if [ "$G" = graph ]; then
	case $r in
	"tr_a graph tr_b "*" tr_c "*) [ "${r#*tr_b graph}" = "$r" ] && [ "${r#*tr_c graph}" = "$r" ] &&
		ok "a trigger pattern: every site it matches leaves the shortcut ($r)" ||
		notok "a trigger pattern (tr_[bc]): routes '$r'" ;;
	*) notok "a trigger pattern (tr_[bc]): routes '$r'" ;;
	esac
else
	check $([ "$r" = "$all" ]; echo $?) "a trigger pattern: routes '$r' (all $G)"
fi
# tr_b's depth=1 would hide tr_c, but tr_c matches too: its own trigger
# shows it under its own depth=1
effect "a trigger pattern (tr_[bc]@depth=1)" "$full"

# refusals: exit 2 and one sentence naming what is wrong
refused() {
	local what=$1 want=$2
	shift 2
	"$@" >out 2>err
	local rc=$?
	if [ $rc -eq 2 ] && grep -q -- "$want" err; then
		ok "$what: refused ($(head -1 err))"
	else
		notok "$what: exit $rc, expected 2 and '$want'"
		diag_file err
	fi
}
refused "unknown action" "unknown action 'jump'" "$DFT" record -d d -T 'tr_b@jump' "$T/trig-routes"
refused "uftrace's read= action" "'read=proc/statm' action is not supported" \
	"$DFT" record -d d -T 'tr_b@read=proc/statm' "$T/trig-routes"
refused "no action" "give FUNC@ACTION" "$DFT" record -d d --trigger 'tr_b' "$T/trig-routes"
refused "bad depth" "unknown action 'depth=0'" "$DFT" record -d d -T 'tr_b@depth=0' "$T/trig-routes"
refused "a tracer name with a typo" "unknown tracer 'functon'" \
	"$DFT" record -d d -T functon "$T/trig-routes"
refused "triggers with the function tracer" "function_graph tracer only" \
	"$DFT" record -d d -T function -T 'tr_b@depth=1' "$T/trig-routes"
refused "record: a regex that does not compile" "bad regular expression 'tr_(b'" \
	"$DFT" record -d d -F 'tr_(b' "$T/trig-routes"
refused "record: a bad regex in a trigger" "bad regular expression '^tr_(b'" \
	"$DFT" record -d d -T '^tr_(b@depth=1' "$T/trig-routes"
refused "replay: a regex that does not compile" "bad regular expression 'x{2'" \
	"$DFT" replay -d d -F 'x{2'
refused "replay: a trigger it does not take" "replay takes FUNC@backtrace" \
	"$DFT" replay -d d -T 'tr_b@depth=1'
refused "--match with another word" "bad --match 'perl'" \
	"$DFT" record -d d --match=perl "$T/trig-routes"
# --match: 'tr_c*' is a glob by itself (tr_c alone), a regex with
# --match=regex ("tr_" then any 'c's: every tr_ function)
for m in auto regex; do
	rm -rf d
	if [ $m = auto ]; then
		"$DFT" record -d d -F 'tr_c*' "$T/trig-routes" >out 2>err
	else
		"$DFT" record -d d --match=regex -F 'tr_c*' "$T/trig-routes" >out 2>err
	fi
	"$DFT" replay -d d --no-time >rep 2>>err
	first=$(grep -m1 -o 'tr_[abc]()' rep)
	want='tr_c()'
	[ $m = regex ] && want='tr_a()'
	if [ "$first" = "$want" ]; then
		ok "--match=$m: -F 'tr_c*' selects from $want"
	else
		notok "--match=$m: -F 'tr_c*' shows '$first' first, expected $want"
		diag_file rep
		diag_file err
	fi
done
tap_end
