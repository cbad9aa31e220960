#!/usr/bin/env bash
# description: argument and return values in the reader: replay, dump --chrome, enums.txt labels, damaged values
# config: asan
#
# A session written by tests/golden/mkstream.c from
# tests/golden/streams/args.txt (entry_args and exit_retval events with
# every kind of value, no runtime involved) is read back:
#  - replay prints them as uftrace does: "foo(-3, \"abc\") {", leaves
#    "bar(...) = -100004;", "} = \"hi\"...; /* foo */";
#  - an e:NAME value shows its label from DIR/enums.txt, else the integer;
#  - dump --chrome puts them in "args" (arg1..., fparg1..., retval), valid JSON;
#  - values that do not decode (an unknown format, a size that is not one,
#    a string running past its event, a length running past the packet)
#    end the stream with one message naming the file and offset, exit
#    status 1, what came before shown, no crash (ASan: config asan).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
S=$TOP/tests/golden/streams/args.txt

if ! $CC -std=gnu11 -O1 -g $SANFLAGS "$TOP/tests/golden/mkstream.c" -o "$T/mkstream" \
	2>"$T/build.log"; then
	notok "build mkstream"
	diag_file "$T/build.log"
	exit 1
fi
"$T/mkstream" "$T/a" <"$S" 2>"$T/mk.err" || { notok "mkstream args"; diag_file "$T/mk.err"; exit 1; }

same() {
	if diff -u "$2" "$3" >"$T/diff"; then ok "$1"; else notok "$1"; diag_file "$T/diff" 40; fi
}

cat >"$T/exp" <<'X'
#     TID  FUNCTION
[   100] | main() {
[   100] |   foo(-3, "abc", 'A', 1.500000, 5) {
[   100] |     bar(0xff, (null), (bad ptr 0x10)) = -100004;
[   100] |     baz() = 7;
[   100] |   } = "hi"...; /* foo */
[   100] | } /* main */
X
"$DFT" replay -d "$T/a" --no-time >"$T/out" 2>"$T/err"
check $? "replay of values exits 0"
same "replay: values as uftrace prints them, enums without enums.txt as integers" "$T/exp" "$T/out"

printf '# ENUMNAME VALUE LABEL\ncolor 5 GREEN\ncolor 0 RED\nother 7 SEVEN\n' >"$T/a/enums.txt"
sed -i -e 's/1.500000, 5)/1.500000, GREEN)/' "$T/exp"
"$DFT" replay -d "$T/a" --no-time >"$T/out" 2>&1
same "replay: an enum's label from enums.txt (a value it lacks stays an integer)" "$T/exp" "$T/out"

"$DFT" dump --chrome -d "$T/a" >"$T/json" 2>"$T/err"
check $? "dump --chrome exits 0"
if python3 - "$T/json" >"$T/py" 2>&1 <<'PY'; then ok "dump --chrome: values in args"; else notok "dump --chrome: values in args"; diag_file "$T/py"; fi
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
def find(ph, name):
    return [e for e in ev if e.get("ph") == ph and e.get("name") == name][0]
foo = find("B", "foo")["args"]
assert foo == {"arg1": "-3", "arg2": '"abc"', "arg3": "'A'", "fparg1": "1.500000", "arg4": "GREEN"}, foo
assert find("B", "bar")["args"] == {"arg1": "0xff", "arg2": "(null)", "arg3": "(bad ptr 0x10)"}
assert find("E", "bar")["args"] == {"retval": "-100004"}
assert find("E", "foo")["args"] == {"retval": '"hi"...'}
assert "args" not in find("B", "main") and "args" not in find("E", "main")
PY

# ---- damaged values ---------------------------------------------------
# damaged NAME 'DATA HEX' (one entry_args of foo after main's entry)
damaged() {
	local name=$1 data=$2
	rm -rf "$T/d"
	{
		grep -E '^(info|site|map|stream)' "$S"
		echo "entry 1001000 0"
		echo "entry_args 1001100 1 $data"
		echo "exit 1001200"
	} | "$T/mkstream" "$T/d" 2>"$T/mk.err" || { notok "mkstream $name"; return; }
	"$DFT" replay -d "$T/d" --no-time >"$T/out" 2>"$T/err"
	local rc=$?
	if [ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
		grep -q "stream-100-100: malformed argument values at offset" "$T/err" &&
		grep -q "main(); (unfinished)" "$T/out"; then
		ok "damaged values ($name): one message, status 1, main shown"
	else
		notok "damaged values ($name): status $rc"
		diag_file "$T/err"
		diag_file "$T/out"
	fi
}
damaged "unknown format" "7a 01 04 00 00 00 00"
damaged "integer size 3" "64 01 03 00 00 00"
damaged "string longer than its event" "73 01 00 09 61 62"
damaged "string state 9" "73 01 09"
damaged "slot 99" "64 63 01 00"
damaged "item cut after its format" "64"
damaged "enum without a name" "65 01 04 05 00 00 00 00"

# a length that runs past the packet's content
rm -rf "$T/d"
{
	grep -E '^(info|site|map|stream)' "$S"
	echo "entry 1001000 0"
	echo "raw 07 0a 00 00 00 4c 46 0f 00 00 00 00 00 01 00 00 00 ff 7f 64"
} | "$T/mkstream" "$T/d" 2>"$T/mk.err"
"$DFT" replay -d "$T/d" --no-time >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "runs past the packet's content" "$T/err"
check $? "an entry_args length past the packet: one message, status 1 ($(head -1 "$T/err"))"
tap_end
