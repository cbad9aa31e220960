#!/usr/bin/env bash
# description: views of a recorded program: graph and folded stacks exact, Perfetto decoded, the SVG flame graph run in headless Chromium
# config:
#
# A small known program is recorded (function_graph): main calls work(3),
# work(2) and idle(); work calls leaf() n times. Times vary, so they are
# left out of the comparisons; calls and paths are exact:
#  - graph work: its backtrace (main, work; hit 2) and "(2) work +-(5) leaf";
#  - dump --flame-graph: the four call paths, each with a positive value;
#  - dump --perfetto: protoc decodes it, main, work twice, leaf five times, idle: 9 slices begun and ended,
#    the four names interned once on the thread's sequence;
#  - dump --svg in headless Chromium (Debian package chromium): the page's
#    script ran without an error (it marks the document data-ready, an
#    error handler marks data-error), a zoom on work (#zoom=work) hides
#    idle and widens work to the whole width; the PNG screenshot is not
#    blank (pixels of the frames' colours counted by tests/perfetto/pngstat.py).
# SKIPs the browser part only when chromium cannot run at all.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup
PROTO_DIR=$TOP/tests/perfetto

cat >prog.c <<'EOS'
volatile int sink;
__attribute__((noinline)) void leaf(void) { sink++; }
__attribute__((noinline)) void work(int n)
{
	for (int i = 0; i < n; i++)
		leaf();
}
__attribute__((noinline)) void idle(void) { sink++; }
int main(void)
{
	work(3);
	work(2);
	idle();
	return 0;
}
EOS
cc_recorded prog prog.c
recorded d ./prog
if [ "$rc" -ne 0 ]; then
	notok "record: exit status $rc"
	diag_file err
	exit 1
fi

# graph: times out, calls and paths kept
"$DFT" graph -d d work >out 2>err
rc=$?
sed -E 's/^ *[0-9.]+ [um]?s +[0-9.]+ [um]?s :/T :/; s/time +[0-9.]+ [um]?s$/time T/' out >got
cat >exp <<'EOS'
# Function call graph of 'work'
=============== BACKTRACE ===============
 backtrace #0: hit 2, time T
   [0] main
   [1] work

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   SELF TIME  FUNCTION
T : (2) work
T :  +-(5) leaf
EOS
if [ $rc -eq 0 ] && diff -u exp got >diff; then
	ok "graph work: backtrace, calls below"
else
	notok "graph work: exit status $rc"
	diag_file diff
	diag_file err
fi

"$DFT" dump --flame-graph -d d >out 2>err
rc=$?
awk '$NF > 0 { print $1 }' out >got
printf '%s\n' main 'main;idle' 'main;work' 'main;work;leaf' >exp
if [ $rc -eq 0 ] && diff -u exp got >diff && [ "$(wc -l <out)" -eq 4 ]; then
	ok "flame-graph: the four call paths, positive self times"
else
	notok "flame-graph: exit status $rc"
	diag_file diff
	diag_file out
fi

if command -v protoc >/dev/null; then
	"$DFT" dump --perfetto -d d -o d.pb 2>err &&
		protoc --decode=perfetto.protos.Trace --proto_path="$PROTO_DIR" perfetto_subset.proto \
			<d.pb >d.txt 2>>err
	rc=$?
	names=$(grep -A1 'iid:' d.txt | sed -n 's/^ *name: "\(.*\)"/\1/p' | sort | tr '\n' ' ')
	[ $rc -eq 0 ] && [ "$(grep -c TYPE_SLICE_BEGIN d.txt)" -eq 9 ] &&
		[ "$(grep -c TYPE_SLICE_END d.txt)" -eq 9 ] && [ "$names" = "idle leaf main work " ]
	check $? "perfetto: 9 slices begun and ended, names interned once ($names)"
	[ $rc -eq 0 ] || diag_file err
else
	skip "protoc is not installed (Debian package protobuf-compiler, scripts/deps.sh test)"
fi

"$DFT" dump --svg -d d -o flame.svg 2>err
check $? "svg: written"

# ---- headless Chromium -------------------------------------------------
browser=
for c in chromium chromium-browser google-chrome; do
	command -v $c >/dev/null && browser=$c && break
done
# as root the sandbox cannot start; no GPU; a new profile each time (a
# second instance on a profile in use would hand its work to the first)
nrun=0
chrome() {
	nrun=$((nrun + 1))
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$T/profile$nrun" --hide-scrollbars "$@" 2>>"$T/chrome.err"
}
if [ -z "$browser" ]; then
	skip "no chromium to run the SVG in (Debian package chromium, scripts/deps.sh test)"
	tap_end
	exit
fi
if ! chrome --dump-dom about:blank >/dev/null; then
	skip "$browser cannot run here: $(tail -1 "$T/chrome.err")"
	tap_end
	exit
fi

chrome --dump-dom "file://$T/flame.svg" >dom.txt
head -1 dom.txt >root.txt
grep -q 'data-ready="5"' root.txt && ! grep -q 'data-error' root.txt
check $? "svg: the script ran in $browser without error (5 frames)"
grep -q 'data-error' root.txt && diag_file root.txt

chrome --dump-dom "file://$T/flame.svg#zoom=work" >zoom.txt
# idle hidden, work as wide as the graph (1200 - 2 x 10), leaf inside it
grep -A1 '<title>idle$' zoom.txt | head -1 | grep -q 'display: none' &&
	grep -A1 '<title>work$' zoom.txt | grep -q 'width="1180.00"' &&
	! grep -B1 '<title>leaf$' zoom.txt | grep -q 'display: none' &&
	! head -1 zoom.txt | grep -q 'data-error'
check $? "svg: a click's zoom (#zoom=work) hides idle, widens work, keeps leaf"

chrome --screenshot="$T/flame.png" --window-size=1200,300 "file://$T/flame.svg" >/dev/null
if [ -s "$T/flame.png" ] && command -v python3 >/dev/null; then
	n=$(python3 "$PROTO_DIR/pngstat.py" "$T/flame.png" 2>"$T/png.err")
	# 5 frames 15 px high, the narrowest a few pixels wide: thousands of
	# coloured pixels; a blank or unstyled page has none
	[ -n "$n" ] && [ "$n" -gt 5000 ]
	check $? "svg: the screenshot shows the frames ($n coloured pixels)"
	diag_file "$T/png.err"
else
	notok "svg: no screenshot (or no python3 to read it)"
	diag_file "$T/chrome.err"
fi

tap_end
