#!/usr/bin/env bash
# description: discovered sites equal the compiler's records in every build mode
# config: asan
#
# Builds tests/sites/prog.c and libsitelib.so (tests/sites/lib.c) with gcc and
# clang, PIE and non-PIE, in every site mode (patchable, patchable with a
# prefix pad, fentry, fentry with -mnop-mcount) with and without CET, and
# checks that `dynftrace sites -v` lists exactly the sites an oracle derives
# from binutils output (tests/sites/oracle.awk). Then stripped, flag-less,
# damaged and missing files. Env: TOP (checkout), B (dir holding dynftrace).
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${B:-$TOP/build}
D=$B/dynftrace
SRC=$TOP/tests/sites
# A sanitizer report must not pass for the exit status 1 of a clean error.
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=98:print_stacktrace=1}

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

n=0
nfail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
# check COND-STATUS DESCRIPTION
check() { if [ "$1" -eq 0 ]; then ok "$2"; else notok "$2"; fi; }

if [ ! -x "$D" ]; then
	echo "1..1"
	echo "not ok 1 - $D is not built"
	exit 1
fi

# oracle FILE: the expected "ADDR LEN KIND NAME" lines of FILE, sorted.
oracle() {
	local f=$1
	{
		readelf -SW "$f" | sed -e 's/^ *\[ *[0-9]*\] *//' |
			awk '$1 == "__patchable_function_entries" || $1 == "__mcount_loc" {
				print $1, $4, $5 }' |
			while read -r sec off size; do
				kind=patchable
				[ "$sec" = __mcount_loc ] && kind=fentry
				addr=$(readelf -SW "$f" | sed -e 's/^ *\[ *[0-9]*\] *//' |
					awk -v s="$sec" -v o="$off" '$1 == s && $4 == o { print $3 }')
				od -An -v -tx8 -j $((0x$off)) -N $((0x$size)) "$f" | tr -s ' ' '\n' |
					awk -v k=$kind -v a="$addr" 'NF {
						# WHERE is ADDR + 8 * index; awk adds it in hex below
						print "R", k, a, $1, i++ }' |
					while read -r _ k a v i; do
						printf 'R %s %x %s\n' "$k" $((0x$a + 8 * i)) "$v"
					done
			done
		readelf -rW "$f" | awk '$3 == "R_X86_64_RELATIVE" { print "L", $1, $4 }'
		readelf -sW "$f" | awk '/^Symbol table/ { tab = ($0 ~ /\.symtab/) }
			tab && ($4 == "FUNC" || $4 == "IFUNC") && $7 != "UND" && NF >= 8 {
				print "F", $2, $3, $5, $8 }'
		objdump -d "$f" | awk -F'\t' 'NF >= 3 && $1 ~ /^ *[0-9a-f]+:$/ {
			a = $1; gsub(/[ :]/, "", a); print "I", a, $2 }'
	} | awk -f "$SRC/oracle.awk" | sort
}

# listed OUT OBJ: the lines of `sites -v` output OUT for object OBJ ("" for
# the program), in the oracle's format, sorted.
listed() {
	if [ -z "$2" ]; then
		grep -v ' \[[^]]*\]$' "$1"
	else
		grep " \[$2\]\$" "$1" | sed -e 's/ \[[^]]*\]$//'
	fi | sort
}

# compare DESC EXPECTED ACTUAL
compare() {
	if [ -s "$2" ] && cmp -s "$2" "$3"; then
		ok "$1 ($(wc -l <"$2") sites)"
	else
		notok "$1"
		diff "$2" "$3" | sed -e 's/^/# /' | head -20
		[ -s "$2" ] || echo "# the oracle found no sites"
	fi
}

cc_has() { echo 'int x;' | $1 "${@:2}" -x c -c - -o /dev/null 2>/dev/null; }

# build DIR CC PIE MODE CET [LDFLAGS]: prog + libsitelib.so in DIR; 0 or 1.
build() {
	local dir=$1 cc=$2 pie=$3 mode=$4 cet=$5 ld=${6:-}
	local flags libflags pflags lflags
	case $mode in
	patch) flags="-fpatchable-function-entry=5" ;;
	pad) flags="-fpatchable-function-entry=7,2" ;;
	fentry) flags="-pg -mfentry -mrecord-mcount" ;;
	nop) flags="-pg -mfentry -mrecord-mcount -mnop-mcount" ;;
	none) flags="" ;;
	esac
	# -mnop-mcount cannot do PIC: the library keeps its fentry calls.
	libflags=${flags/ -mnop-mcount/}
	if [ "$pie" = pie ]; then
		pflags="-fPIE" lflags="-pie"
	else
		pflags="-fno-pie" lflags="-no-pie"
	fi
	mkdir -p "$dir"
	$cc -O2 -fcf-protection="$cet" -fPIC -shared $libflags $ld "$SRC/lib.c" \
		-o "$dir/libsitelib.so" >"$dir/build.log" 2>&1 &&
		$cc -O2 -fcf-protection="$cet" $pflags $flags -c "$SRC/prog.c" -o "$dir/prog.o" \
			>>"$dir/build.log" 2>&1 &&
		$cc $lflags $ld "$dir/prog.o" -L"$dir" -lsitelib -Wl,-rpath,"$dir" -o "$dir/prog" \
			>>"$dir/build.log" 2>&1
}

# matrix_case NAME DIR CC PIE MODE CET [LDFLAGS]: build, list, compare the
# program and the library with the oracle (two TAP lines, or one on failure).
matrix_case() {
	local name=$1 dir=$2 cc=$3 pie=$4 mode=$5 cet=$6 ld=${7:-} rc mode_lib
	if ! build "$dir" $cc $pie $mode $cet $ld; then
		notok "$name: build failed"
		sed -e 's/^/# /' "$dir/build.log" | head -10
		return
	fi
	"$D" sites -v "$dir/prog" >"$dir/out" 2>"$dir/err"
	rc=$?
	if [ $rc -ne 0 ] || [ -s "$dir/err" ]; then
		notok "$name: dynftrace sites exited with $rc"
		sed -e 's/^/# /' "$dir/err" | head -10
		return
	fi
	oracle "$dir/prog" >"$dir/prog.want"
	listed "$dir/out" "" >"$dir/prog.got"
	compare "$name: prog" "$dir/prog.want" "$dir/prog.got"
	oracle "$dir/libsitelib.so" >"$dir/lib.want"
	listed "$dir/out" libsitelib.so >"$dir/lib.got"
	mode_lib=$mode
	[ $mode = nop ] && mode_lib="fentry (no -mnop-mcount for PIC)"
	compare "${name/ $mode / $mode_lib }: libsitelib.so" "$dir/lib.want" "$dir/lib.got"
}

for cc in gcc clang; do
	command -v $cc >/dev/null || { skip "$cc is not installed"; continue; }
	for pie in pie nopie; do
		for mode in patch pad fentry nop; do
			for cet in full none; do
				name="$cc $pie $mode cet=$cet"
				if [ $mode = fentry ] || [ $mode = nop ]; then
					if ! cc_has $cc -pg -mfentry -mrecord-mcount; then
						skip "$name: $cc cannot record fentry sites"
						continue
					fi
					if [ $mode = nop ] && [ $pie = pie ]; then
						skip "$name: -mnop-mcount needs non-PIE code"
						continue
					fi
				fi
				matrix_case "$name" "$T/$cc-$pie-$mode-$cet" $cc $pie $mode $cet
			done
		done
	done
done

# Other linkers: lld leaves 0 in the record sections (only the RELA
# relocations hold the addresses); RELR packs the relative relocations.
if command -v ld.lld >/dev/null && cc_has clang -fuse-ld=lld; then
	matrix_case "clang pie patch cet=full lld" "$T/lld" clang pie patch full -fuse-ld=lld
else
	skip "clang pie patch cet=full lld: no lld"
fi
matrix_case "gcc pie pad cet=full relr" "$T/relr" gcc pie pad full -Wl,-z,pack-relative-relocs

# one_sentence ERRFILE: stderr is exactly one line starting "dynftrace: ".
one_sentence() { [ "$(wc -l <"$1")" -eq 1 ] && grep -q '^dynftrace: ' "$1"; }

# A stripped program: names from .dynsym only, same sites.
ref=$T/gcc-pie-patch-full
if [ -x "$ref/prog" ]; then
	cp "$ref/prog" "$T/stripped"
	strip "$T/stripped"
	"$D" sites -v "$T/stripped" >"$T/s.out" 2>"$T/s.err"
	rc=$?
	grep -q "stripped" "$T/s.err" && [ $rc -eq 0 ]
	check $? "stripped program: warning on stderr, exit 0"
	sed -e 's/^/# /' "$T/s.err"
	[ "$(listed "$T/s.out" "" | wc -l)" -eq "$(wc -l <"$ref/prog.want")" ] &&
		[ "$(listed "$T/s.out" "" | cut -d' ' -f1-3)" = "$(cut -d' ' -f1-3 "$ref/prog.want")" ]
	check $? "stripped program: the same sites"
else
	skip "stripped program: no reference build"
	skip "stripped program: no reference build"
fi

# No flags: no sites anywhere.
if build "$T/plain" gcc pie none full; then
	"$D" sites "$T/plain/prog" >"$T/p.out" 2>"$T/p.err"
	rc=$?
	[ $rc -eq 1 ] && [ ! -s "$T/p.out" ] && [ "$(cat "$T/p.err")" = \
		"dynftrace: $T/plain/prog has no traceable sites; rebuild it with the flags of 'dynftrace cflags'" ]
	check $? "program without flags: 'no traceable sites', exit 1"
	sed -e 's/^/# /' "$T/p.err"
else
	notok "program without flags: build failed"
fi

# damaged DESC FILE: exit 1 with one sentence, no crash.
damaged() {
	"$D" sites "$2" >/dev/null 2>"$T/d.err"
	local rc=$?
	[ $rc -eq 1 ] && one_sentence "$T/d.err"
	check $? "$1: one-sentence error, exit 1 (got $rc)"
	head -3 "$T/d.err" | sed -e 's/^/# /'
}

if [ -x "$ref/prog" ]; then
	head -c 300 "$ref/prog" >"$T/trunc300"
	damaged "truncated to 300 bytes" "$T/trunc300"
	size=$(stat -c %s "$ref/prog")
	head -c $((size / 2)) "$ref/prog" >"$T/trunchalf"
	damaged "truncated to half" "$T/trunchalf"
	shoff=$(readelf -hW "$ref/prog" | awk '/Start of section headers/ { print $5 }')
	cp "$ref/prog" "$T/badsh"
	head -c $((size - shoff)) /dev/zero | tr '\0' '\377' |
		dd of="$T/badsh" bs=1 seek="$shoff" conv=notrunc status=none
	damaged "section headers full of 0xff" "$T/badsh"
	# Random garbage: an error or a listing, but never a crash.
	crashes=0
	for i in 1 2 3 4 5 6 7 8; do
		cp "$ref/prog" "$T/rnd"
		head -c $((size - shoff)) /dev/urandom |
			dd of="$T/rnd" bs=1 seek="$shoff" conv=notrunc status=none
		"$D" sites -v "$T/rnd" >/dev/null 2>"$T/r.err"
		rc=$?
		if [ $rc -gt 1 ]; then
			crashes=$((crashes + 1))
			cp "$T/rnd" "$T/crash-$i"
			head -5 "$T/r.err" | sed -e 's/^/# /'
		fi
	done
	check $crashes "random section headers: no crash (8 files)"
	printf 'not an ELF file at all\n' >"$T/text"
	damaged "a text file" "$T/text"
else
	skip "damaged files: no reference build"
fi

"$D" sites "$T/nope" >/dev/null 2>"$T/m.err"
rc=$?
[ $rc -eq 1 ] && [ "$(cat "$T/m.err")" = "dynftrace: cannot read '$T/nope': No such file or directory" ]
check $? "missing file: 'cannot read', exit 1"

"$D" frobnicate >/dev/null 2>"$T/u.err"
rc=$?
[ $rc -eq 2 ] && [ "$(cat "$T/u.err")" = "dynftrace: unknown command 'frobnicate'; see 'dynftrace --help'" ]
check $? "unknown command: one sentence, exit 2"
"$D" sites --help | grep -q '^usage: dynftrace sites'
check $? "sites --help prints the usage"

echo "1..$n"
[ $nfail -eq 0 ]
