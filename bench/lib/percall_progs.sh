# Sourced by bench/percall.sh and bench/pathlen.sh: builds bench/percall.c
# into $T as pc (compiler sites), pcp (no sites: relocated entries) and,
# with FUNTRACE=DIR (a checkout of github.com/yosefk/funtrace), pcf
# (funtrace's gcc method: -pg -mfentry -minstrument-return=call, its
# runtime linked in). A funtrace that does not build is said and FUNTRACE
# emptied; a failure of the others exits.
gcc -O2 -fpatchable-function-entry=5 bench/percall.c -o "$T/pc" || exit 1
gcc -O2 bench/percall.c -o "$T/pcp" || exit 1
if [ -n "${FUNTRACE:-}" ]; then
	{ gcc -O2 -g -pg -mfentry -minstrument-return=call -c bench/percall.c -o "$T/pcf.o" &&
		g++ -O2 -g -pthread "$T/pcf.o" "$FUNTRACE/funtrace.cpp" "$FUNTRACE/funtrace_pg.S" \
			-I"$FUNTRACE" -Wl,--dynamic-list="$FUNTRACE/funtrace.dyn" -ldl -o "$T/pcf"; } \
		>"$T/funtrace-build.log" 2>&1 || { echo "funtrace did not build: $T/funtrace-build.log" >&2; FUNTRACE=; }
fi
