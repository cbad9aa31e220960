#!/usr/bin/env bash
# description: string and character values with bytes from 0x80 up and control characters: valid UTF-8 printed as is, every other byte \xNN, in replay and in valid JSON from dump --chrome
# config: asan
#
# A session written by tests/golden/mkstream.c holds one call whose
# values are strings of valid UTF-8 (2, 3 and 4 bytes), of bytes that are
# not (a stray byte, an overlong form, a surrogate, a sequence cut by the
# 64-byte limit), control characters (ESC, DEL, newline), a quote, a
# backslash, and a character value 0xe9:
#  - replay keeps the valid UTF-8 and escapes the rest as \xNN (C escapes
#    for \n, \" and \\), so no raw byte reaches the terminal;
#  - dump --chrome is valid JSON (python3 reads it as UTF-8) whose args
#    hold exactly the text replay shows.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace

if ! $CC -std=gnu11 -O1 -g $SANFLAGS "$TOP/tests/golden/mkstream.c" -o "$T/mkstream" \
	2>"$T/build.log"; then
	notok "build mkstream"
	diag_file "$T/build.log"
	exit 1
fi
# kinds (lib/ring/format.h): c 11, str 15, str_cut 16
cat >"$T/s.txt" <<'X'
info command: ./prog
info tracer: function_graph
info start_ns: 1000000
info pid: 100
info exit: 100 status 0
info end_ns: 1100000
site 100 0 401000 32 main /t/prog
site 100 1 401020 16 foo /t/prog
map 100 401000 402000 0 /t/prog
stream 100 100
entry 1001000 0
entry_args 1001100 1 06 15 01 68 c3 a9 e2 82 ac f0 9f 98 80 00 15 02 ff 41 c0 af 42 00 15 03 1b 5b 33 31 6d 7f 0a 00 15 04 ed a0 80 22 5c 00 16 05 61 e2 82 00 11 06 e9
exit 1001200
exit 1003000
X
"$T/mkstream" "$T/a" <"$T/s.txt" 2>"$T/mk.err" || { notok "mkstream"; diag_file "$T/mk.err"; exit 1; }

cat >"$T/exp" <<'X'
#     TID  FUNCTION
[   100] | main() {
[   100] |   foo("hé€😀", "\xffA\xc0\xafB", "\x1b[31m\x7f\n", "\xed\xa0\x80\"\\", "a\xe2\x82"..., '\xe9');
[   100] | } /* main */
X
"$DFT" replay -d "$T/a" --no-time >"$T/out" 2>"$T/err"
check $? "replay exits 0"
if cmp -s "$T/exp" "$T/out"; then
	ok "replay: valid UTF-8 as is, other bytes and control characters escaped"
else
	notok "replay: valid UTF-8 as is, other bytes and control characters escaped"
	od -c "$T/out" | head -20 | sed -e 's/^/# /'
fi

"$DFT" dump --chrome -d "$T/a" >"$T/json" 2>"$T/err"
check $? "dump --chrome exits 0"
python3 -m json.tool "$T/json" >/dev/null 2>"$T/py"
check $? "dump --chrome: valid JSON"
if python3 - "$T/json" "$T/out" >"$T/py" 2>&1 <<'PY'; then ok "dump --chrome: args are replay's text"; else notok "dump --chrome: args are replay's text"; diag_file "$T/py"; fi
import json, sys
ev = json.load(open(sys.argv[1], encoding="utf-8"))["traceEvents"]
foo = [e for e in ev if e.get("ph") == "B" and e.get("name") == "foo"][0]["args"]
line = open(sys.argv[2], encoding="utf-8").read().splitlines()[2]
want = line[line.index("foo(") + 4:line.rindex(");")]
got = ", ".join(foo["arg%d" % i] for i in range(1, 7))
assert got == want, (got, want)
PY
tap_end
