#!/usr/bin/env bash
# description: the runtime discovers exactly the sites `dynftrace sites` reads from the files, in every build mode
# config: asan
#
# Builds tests/sites/prog.c + libsitelib.so in each mode, runs the program with
# the runtime linked in, and compares the sites the runtime found in memory
# (tests/rtsites/dump.c prints them at exit) with the CLI's file-based
# listing, per object. The CLI's listing is itself checked against binutils
# by sites-matrix.sh.
set -u
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
B=${B:-$TOP/build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $*"; }
san=""
[ "${SAN:-}" = asan ] && san="-fsanitize=address,undefined"

for cc in gcc clang; do
	for pie in pie nopie; do
		for mode in patchable pad fentry nopmcount; do
			for cet in full none; do
				name="$cc-$pie-$mode-cet$cet"
				pflags="-fPIE"; plink="-pie"
				[ $pie = nopie ] && { pflags="-fno-pie"; plink="-no-pie"; }
				case $mode in
				patchable) f="-fpatchable-function-entry=5" ;;
				pad) f="-fpatchable-function-entry=7,2" ;;
				fentry) f="-pg -mfentry -mrecord-mcount" ;;
				nopmcount) f="-pg -mfentry -mrecord-mcount -mnop-mcount" ;;
				esac
				if [ $cc = clang ] && [ $mode = fentry -o $mode = nopmcount ]; then
					skip "$name: clang 14 has no -mrecord-mcount on x86"; continue
				fi
				if [ $cc = clang ] && [ -n "$san" ]; then
					skip "$name: the ASan runtime of gcc and clang differ"; continue
				fi
				if [ $mode = nopmcount ] && [ $pie = pie ]; then
					skip "$name: gcc has no -mnop-mcount for PIE"; continue
				fi
				d=$T/$name
				mkdir -p "$d"
				libf=$f
				[ $mode = nopmcount ] && libf="-fpatchable-function-entry=5"
				if ! $cc -O2 -fcf-protection=$cet -fPIC -shared $libf $san \
					"$TOP/tests/sites/lib.c" -o "$d/libsitelib.so" 2>"$d/log" ||
					! $cc -O2 -fcf-protection=$cet $pflags $f $san -c "$TOP/tests/sites/prog.c" \
						-o "$d/prog.o" 2>>"$d/log" ||
					! $cc -O2 $pflags $san -I"$TOP/include" -c "$TOP/tests/rtsites/dump.c" \
						-o "$d/dump.o" 2>>"$d/log" ||
					! $cc $plink $san "$d/prog.o" "$d/dump.o" -o "$d/prog" -L"$d" -lsitelib \
						-L"$B" -ldynftrace -Wl,-rpath,"$d:$B" 2>>"$d/log"; then
					notok "$name: build failed: $(head -3 "$d/log" | tr '\n' ' ')"
					continue
				fi
				if ! RTSITES_OUT=$d/rt "$d/prog" >/dev/null 2>"$d/err"; then
					notok "$name: program failed: $(head -3 "$d/err" | tr '\n' ' ')"
					continue
				fi
				sort -u "$d/rt" >"$d/rt.s"
				"$B/dynftrace" sites -v "$d/prog" 2>/dev/null |
					awk '{ obj = "prog"; if ($NF ~ /^\[.*\]$/) { obj = substr($NF, 2, length($NF) - 2) }
						if (obj == "prog" || obj == "libsitelib.so") {
							a = $1; sub(/^0+/, "", a); if (a == "") a = "0";
							print obj, a, $4 } }' | sort -u >"$d/cli.s"
				if [ -s "$d/rt.s" ] && cmp -s "$d/rt.s" "$d/cli.s"; then
					ok "$name: $(wc -l <"$d/rt.s") sites, runtime == file"
				else
					notok "$name: runtime and file listings differ"
					diff "$d/rt.s" "$d/cli.s" | head -8 | sed 's/^/# /'
				fi
			done
		done
	done
done
echo "1..$n"
