#!/usr/bin/env bash
# description: babeltrace2 reads the CTF traces the ring buffer writes, with the same events and timestamps
# config: asan
# config: tsan
#
# tests/ring/t-ring (lib/ring/ring.c compiled in) records several traces; for each,
# `babeltrace2 --clock-cycles DIR/ctf` must exit 0 with no error, and its
# events (timestamp, name, fields) must be exactly those of t-ring's own
# strict decoder (t-ring dump), which the unit modes check against what the
# writers wrote. Discarded-event warnings must add up to the reported losses
# where babeltrace2 can see them (between packets of a stream).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"

if ! command -v babeltrace2 >/dev/null; then
	notok "babeltrace2 is not installed (scripts/deps.sh test installs it)"
	exit 1
fi
build_t_ring
export T_RING_SMALL=1 # 10 times fewer events: babeltrace2 is slow

# bt_norm: babeltrace2 text to "TS NAME k=v k=v" lines (t-ring dump's form).
bt_norm() {
	sed -E -e 's/^\[0*([0-9]+)\] \([^)]*\) ([a-z_]+): \{[^}]*\}, \{ ?(.*)\}$/\1 \2 \3/' \
		-e 's/ = /=/g' -e 's/, / /g' -e 's/"//g' -e 's/ +$//' -e 's/^([0-9]+) ([a-z_]+) $/\1 \2/'
}

# check NAME DIR [discarded]: with "discarded", babeltrace2's warnings must
# count the losses between packets that t-ring's decoder finds.
check() {
	local name=$1 dir=$2 disc=$3
	babeltrace2 --clock-cycles "$dir/ctf" >"$T/bt.out" 2>"$T/bt.err"
	local rc=$?
	if [ $rc -ne 0 ] || grep -qiE 'error|CRITICAL' "$T/bt.err"; then
		notok "$name: babeltrace2 exit status $rc"
		diag_file "$T/bt.err" 15
		return
	fi
	"$T/t-ring" dump "$dir" >"$T/dump.out" 2>"$T/dump.err" || {
		notok "$name: t-ring's decoder rejects the trace"
		diag_file "$T/dump.err"
		return
	}
	bt_norm <"$T/bt.out" | LC_ALL=C sort >"$T/bt.sorted"
	LC_ALL=C sort "$T/dump.out" >"$T/dump.sorted"
	local n
	n=$(wc -l <"$T/dump.sorted")
	if [ "$n" -gt 0 ] && cmp -s "$T/bt.sorted" "$T/dump.sorted"; then
		ok "$name: babeltrace2 reads $n events without error, same timestamps and fields"
	else
		notok "$name: babeltrace2 shows other events than the writer wrote"
		diff "$T/bt.sorted" "$T/dump.sorted" | head -10 | sed -e 's/^/# /'
		return
	fi
	if [ -n "$disc" ]; then
		disc=$(sed -n 's/^discarded between packets: //p' "$T/dump.err")
		local w
		w=$(sed -nE 's/.*Tracer discarded ([0-9]+) events? .*/\1/p' "$T/bt.err" |
			awk '{s += $1} END {print s + 0}')
		if [ "$w" = "$disc" ]; then
			ok "$name: babeltrace2 reports the $disc discarded events"
		else
			notok "$name: babeltrace2 reports $w discarded events, expected $disc"
			diag_file "$T/bt.err" 5
		fi
	fi
}

t_start=$(date -u +%s)
"$T/t-ring" basic "$T/basic" >"$T/basic.log" 2>&1
t_end=$(date -u +%s)
check "5 threads, every event type" "$T/basic" discarded
# The clock's offset (real time at the session's start) makes babeltrace2
# show wall-clock times: every event lies between the run's start and end.
if babeltrace2 --clock-gmt --clock-date "$T/basic/ctf" 2>/dev/null |
	sed -nE 's/^\[([0-9-]+ [0-9:]+)\..*/\1/p' | sort -u >"$T/dates"; then
	first=$(head -1 "$T/dates") last=$(tail -1 "$T/dates")
	f=$(date -u -d "$first" +%s 2>/dev/null || echo 0)
	l=$(date -u -d "$last" +%s 2>/dev/null || echo 0)
	if [ -s "$T/dates" ] && [ "$f" -ge $((t_start - 1)) ] && [ "$l" -le $((t_end + 1)) ]; then
		ok "babeltrace2 shows wall-clock times: $first to $last UTC"
	else
		notok "babeltrace2's times '$first' to '$last' are not within the run ($(date -u -d @"$t_start") to $(date -u -d @"$t_end"))"
		grep -n offset "$T/basic/ctf/metadata" | sed 's/^/# /'
	fi
fi
"$T/t-ring" nested "$T/nested" 4096 4 >"$T/nested.log" 2>&1
check "signal handler nested in events, 4 KiB packets" "$T/nested" discarded
DYNFTRACE_RING_TEST_STALL=1 "$T/t-ring" lost "$T/lost" >"$T/lost.log" 2>&1
check "no-overwrite with losses" "$T/lost" discarded
# overwrite: the losses precede the first packet kept, whose
# events_discarded holds them: babeltrace2 gives no count for those.
DYNFTRACE_RING_TEST_STALL=1 "$T/t-ring" overwrite "$T/ow" >"$T/ow.log" 2>&1
check "overwrite (flight recorder)" "$T/ow" ""
if [ -z "$SAN" ]; then # see ring-unit.sh
	"$T/t-ring" fork "$T/fork" >"$T/fork.log" 2>&1
	check "two processes of one session (fork)" "$T/fork" ""
fi
DYNFTRACE_CLOCK=tsc "$T/t-ring" basic "$T/tsc" >"$T/tsc.log" 2>&1
check "TSC clock" "$T/tsc" ""
tap_end
