#!/usr/bin/env bash
# description: sites --all lists every function entry: by symbol, and by FDE at nm's addresses once stripped
# config: asan
#
# Builds tests/entries/prog.c with plain gcc and clang (no dynftrace flags),
# -O0/-O2, PIE and non-PIE, and checks `dynftrace sites --all`: its functions
# by name; once stripped, its static functions and main as sub_ADDR@prog at
# the addresses nm gave before. Then /bin/ls and libc.so.6 (distribution
# files), a program built with sites (`site`), the .eh_frame walk without
# .eh_frame_hdr, and a damaged .eh_frame. Env: TOP B CC.
. "$(dirname "$0")/../gen/common.sh"
D=$B/dynftrace
SRC=$TOP/tests/entries/prog.c
FUNCS="st_square st_cube st_sum g_scale main"
# The relocator refuses an entry whose first instructions hold an indirect
# call: listed, with that reason (a direct call is relocated).
CALLFIRST="refused: an indirect call among its first instructions.*"

if [ ! -x "$D" ]; then
	notok "$D is not built"
	tap_end
	exit
fi

# own FILE: the lines of FILE's own entries (not its libraries').
own() { "$D" sites "$@" 2>"$T/err" | grep -v ' \[' ; }

for cc in $compilers; do
	for opt in -O0 -O2; do
		for pie in pie nopie; do
			flags="-fPIE -pie"
			[ $pie = nopie ] && flags="-fno-pie -no-pie"
			d=$T/$cc$opt$pie
			mkdir -p "$d/s"
			# shellcheck disable=SC2086
			if ! $cc $opt $flags "$SRC" -o "$d/prog" 2>"$T/build.log"; then
				notok "$cc $opt $pie: build"
				diag_file "$T/build.log"
				continue
			fi
			own --all "$d/prog" >"$d/list"
			bad=""
			for f in $FUNCS; do
				grep -qxE "$f	(entry|$CALLFIRST)" "$d/list" || bad="$bad $f"
			done
			if [ -z "$bad" ]; then
				ok "$cc $opt $pie: every function listed by name, as 'entry' (or refused for an indirect call among its first instructions)"
			else
				notok "$cc $opt $pie: missing or not 'entry':$bad"
				diag_file "$d/list"
			fi
			# nm's addresses, without the leading zeros
			nm "$d/prog" | awk '$2 ~ /^[tT]$/ { print $3, $1 }' |
				sed -e 's/ 0*/ /' | sort >"$d/nm"
			cp "$d/prog" "$d/s/prog"
			strip "$d/s/prog"
			own --all -v "$d/s/prog" >"$d/slist"
			bad=""
			for f in st_square st_cube st_sum main; do
				a=$(awk -v f=$f '$1 == f { print $2 }' "$d/nm")
				grep -qE " fde sub_$a@prog	(entry|$CALLFIRST)\$" "$d/slist" || bad="$bad $f@$a"
			done
			if [ -z "$bad" ] && [ -s "$d/nm" ]; then
				ok "$cc $opt $pie stripped: static functions and main as sub_ADDR@prog at nm's addresses"
			else
				notok "$cc $opt $pie stripped: not found:$bad"
				diag_file "$d/slist"
			fi
		done
	done
done

# A real distribution program: stripped, so mostly FDEs.
if [ -x /bin/ls ]; then
	own --all -v /bin/ls >"$T/ls"
	n=$(wc -l <"$T/ls")
	nfde=$(grep -c ' fde sub_[0-9a-f]*@ls	' "$T/ls")
	if [ "$n" -gt 100 ] && [ "$nfde" -gt 50 ]; then
		ok "/bin/ls: $n entries, $nfde from FDEs ($(grep -c ' dynsym ' "$T/ls") from .dynsym)"
	else
		notok "/bin/ls: $n entries, $nfde from FDEs"
		diag_file "$T/err"
	fi
else
	skip "no /bin/ls"
fi

libc=$(gcc -print-file-name=libc.so.6)
if [ -f "$libc" ]; then
	own --all -v "$libc" >"$T/libc"
	n=$(wc -l <"$T/libc")
	bad=""
	for f in malloc free read; do
		grep -q " $f	entry\$" "$T/libc" || bad="$bad $f"
	done
	if [ "$n" -gt 100 ] && [ -z "$bad" ]; then
		ok "libc.so.6: $n entries (symtab $(grep -c ' symtab ' "$T/libc"), dynsym $(grep -c ' dynsym ' "$T/libc"), fde $(grep -c ' fde ' "$T/libc")); malloc, free, read by name"
	else
		notok "libc.so.6: $n entries; missing:$bad"
		diag_file "$T/err"
	fi
else
	skip "no libc.so.6"
fi

# Built with sites: those functions say 'site', and plain `sites` is unchanged.
if $CC -O2 $TRACE_FLAGS "$SRC" -o "$T/traced" 2>"$T/build.log"; then
	own --all "$T/traced" >"$T/tlist"
	own "$T/traced" >"$T/plain"
	bad=""
	for f in $FUNCS; do
		grep -qx "$f	site" "$T/tlist" || bad="$bad $f"
	done
	nsite=$(grep -c '	site$' "$T/tlist")
	if [ -z "$bad" ] && [ "$nsite" -eq "$(wc -l <"$T/plain")" ]; then
		ok "built with sites: every site's function says 'site' ($nsite, as many as plain 'sites' lists)"
	else
		notok "built with sites: not 'site':$bad ($nsite sites, $(wc -l <"$T/plain") listed by plain sites)"
		diag_file "$T/tlist"
	fi
else
	notok "build with sites"
	diag_file "$T/build.log"
fi

# The .eh_frame walk: the same entries with .eh_frame_hdr's table unusable
# (its version byte changed), and FDE-only entries without section headers.
p=$T/gcc-O2pie/s/prog
if [ -f "$p" ]; then
	hdr=$(readelf -SW "$p" | sed -e 's/^ *\[ *[0-9]*\] *//' | awk '$1 == ".eh_frame_hdr" { print $4 }')
	cp "$p" "$T/walk"
	printf '\002' | dd of="$T/walk" bs=1 seek=$((0x$hdr)) conv=notrunc 2>/dev/null
	own --all -v "$T/walk" | sed -e 's/@walk/@prog/' >"$T/wlist"
	if [ -n "$hdr" ] && cmp -s "$T/wlist" "$T/gcc-O2pie/slist"; then
		ok "without .eh_frame_hdr's table, the .eh_frame walk finds the same entries"
	else
		notok "the .eh_frame walk differs from the table"
		diff "$T/gcc-O2pie/slist" "$T/wlist" | head -10 | sed -e 's/^/# /'
	fi
	# No section headers: .eh_frame_hdr is found through PT_GNU_EH_FRAME.
	cp "$p" "$T/noshdr"
	printf '\0\0\0\0\0\0\0\0' | dd of="$T/noshdr" bs=1 seek=40 conv=notrunc 2>/dev/null
	printf '\0\0\0\0' | dd of="$T/noshdr" bs=1 seek=60 conv=notrunc 2>/dev/null
	own --all -v "$T/noshdr" | sed -e 's/@noshdr/@prog/' >"$T/nlist"
	missing=$(grep ' fde ' "$T/gcc-O2pie/slist" | grep -vFxf "$T/nlist" | wc -l)
	if [ "$missing" -eq 0 ] && [ -s "$T/nlist" ]; then
		ok "without section headers, PT_GNU_EH_FRAME gives the same FDE entries"
	else
		notok "without section headers: $missing FDE entries missing"
		diag_file "$T/nlist"
	fi
	# A damaged .eh_frame: a warning, never a crash.
	read -r off size < <(readelf -SW "$p" | sed -e 's/^ *\[ *[0-9]*\] *//' |
		awk '$1 == ".eh_frame" { print $4, $5 }')
	cp "$p" "$T/damaged"
	head -c $((0x$size)) /dev/urandom | dd of="$T/damaged" bs=1 seek=$((0x$off)) conv=notrunc 2>/dev/null
	"$D" sites --all "$T/damaged" >/dev/null 2>"$T/derr"
	rc=$?
	if [ $rc -le 1 ]; then
		ok "random .eh_frame: status $rc, $(grep -c . "$T/derr") lines of warnings"
	else
		notok "random .eh_frame: status $rc"
		diag_file "$T/derr"
	fi
else
	skip "no stripped gcc program to damage"
fi
tap_end
