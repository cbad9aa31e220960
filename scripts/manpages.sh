#!/bin/sh
# Writes dynftrace's man pages into OUTDIR from the command's own --help
# (scripts/help2man.awk): dynftrace.1, and dynftrace-COMMAND.1 for each
# command `dynftrace --help` lists. A command or option added to the help
# is in the pages at the next build; tests/sh/install.sh checks that every
# option of every --help is in its rendered page.
#   scripts/manpages.sh DYNFTRACE OUTDIR LIBDIR SONAME
# The date is SOURCE_DATE_EPOCH's when set (reproducible builds).
set -eu
exe=$1 out=$2 libdir=$3 soname=$4
awkf=$(dirname "$0")/help2man.awk
mkdir -p "$out"
version=$("$exe" --version | sed -n 's/^dynftrace //p')
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
else
	date=$(date -u +%Y-%m-%d)
fi
help=$out/help.txt main=$out/main.txt
"$exe" --help >"$main"
# "Commands:" then "  NAME   what it does" lines up to a blank line
cmds=$(awk '/^Commands:$/ { c = 1; next } c && /^$/ { c = 0 } c && /^  [a-z]/ { print $1 }' "$main")
if [ -z "$cmds" ]; then
	echo "manpages: '$exe --help' lists no commands" >&2
	exit 1
fi
cmds=$(echo $cmds)
awk -f "$awkf" -v page=dynftrace -v desc= -v version="$version" -v date="$date" \
	-v commands="$cmds" -v libdir="$libdir" -v soname="$soname" "$main" >"$out/dynftrace.1"
for c in $cmds; do
	desc=$(awk -v c="$c" '/^Commands:$/ { s = 1; next } s && $1 == c {
		sub(/^ *[^ ]+ +/, ""); print; exit }' "$main")
	if ! "$exe" "$c" --help >"$help" 2>&1; then
		echo "manpages: '$exe $c --help' failed" >&2
		exit 1
	fi
	awk -f "$awkf" -v page="dynftrace-$c" -v desc="$desc" -v version="$version" \
		-v date="$date" -v commands="$cmds" "$help" >"$out/dynftrace-$c.1"
done
rm -f "$help" "$main"
