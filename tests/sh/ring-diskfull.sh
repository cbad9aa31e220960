#!/usr/bin/env bash
# description: the disk fills up while recording: whole packets stay readable, losses are exact and reported
# config: asan
# config: tsan
#
# t-ring diskfull (tests/ring/t-ring.c): two threads write 1,000,000 events
# each with the consumer writing under a file size limit (ulimit -f, so
# write() fails with EFBIG: the consumer blocks SIGXFSZ). Then:
#   - the program is not killed and its own checks pass: every stream is a
#     whole number of valid packets, written + lost == attempted per thread;
#   - one line on stderr says what happened, with the exact number lost;
#   - babeltrace2 reads what was written without error.
# With root and a mountable tmpfs, the same on a full 512 KiB tmpfs (ENOSPC).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"

build_t_ring

# full NAME DIR ERRTEXT CMD...: runs t-ring diskfull DIR through CMD.
full() {
	local name=$1 dir=$2 errtext=$3
	shift 3
	"$@" "$T/t-ring" diskfull "$dir" >"$T/out" 2>"$T/err"
	local rc=$? p f
	p=$(grep -c '^ok ' "$T/out")
	f=$(grep -c '^not ok ' "$T/out")
	if [ $rc -eq 0 ] && [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
		ok "$name: not killed; whole valid packets; written + lost == attempted ($p checks)"
	else
		notok "$name: status $rc, $f of $((p + f)) checks failed"
		cat "$T/out" "$T/err" | grep -Ev '^ok ' | head -20 | sed -e 's/^/# /'
		return
	fi
	local lost line
	lost=$(sed -n 's/^# LOST //p' "$T/out")
	line="cannot write trace to $dir/ctf: $errtext; $lost events lost"
	if [ "$(grep -c 'cannot write trace' "$T/err")" = 1 ] && grep -qF "$line" "$T/err"; then
		ok "$name: one clear line on stderr: \"$line\""
	else
		notok "$name: expected one line \"$line\" on stderr"
		diag_file "$T/err" 5
	fi
	if ! command -v babeltrace2 >/dev/null; then
		skip "babeltrace2 is not installed"
	elif babeltrace2 "$dir/ctf" >/dev/null 2>"$T/bt.err" &&
		! grep -qiE 'error|CRITICAL' "$T/bt.err"; then
		ok "$name: babeltrace2 reads what was written without error"
	else
		notok "$name: babeltrace2 fails on the cut trace"
		diag_file "$T/bt.err" 10
	fi
}

limit() { (ulimit -f 256 && "$@"); }
full "file size limit (EFBIG)" "$T/fsize" "File too large" limit

MNT=$T/mnt
mkdir -p "$MNT"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=512k tmpfs "$MNT" 2>/dev/null; then
	full "full tmpfs (ENOSPC)" "$MNT/d" "No space left on device" env
	umount "$MNT"
else
	skip "full tmpfs: cannot mount one here (not root or no permission)"
fi
tap_end
