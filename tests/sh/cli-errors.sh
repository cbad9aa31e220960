#!/usr/bin/env bash
# description: every command-line error is one sentence on stderr and a non-zero exit
# config: asan
#
# record: program not found (path, PATH), not executable (mode, directory),
# setuid, setgid, no traceable sites (and --force), statically linked, not
# an ELF program, output directory not writable (a path under /proc, a
# parent that is a regular file, an existing directory or file that is not
# a session), usage errors. replay/report/info/dump: missing directory, not
# a directory, no info file, a damaged or unsupported info file.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace

# fails NAME STATUS 'PATTERN' CMD...: exits STATUS, one stderr line matching
# the extended regex PATTERN, starting with "dynftrace: "
fails() {
	local name=$1 want=$2 pat=$3
	shift 3
	"$@" >"$T/out" 2>"$T/err" </dev/null
	local rc=$?
	local lines=$(wc -l <"$T/err")
	if [ $rc -ne "$want" ]; then
		notok "$name: exit status $rc, not $want"
		diag_file "$T/err"
	elif [ "$lines" -ne 1 ]; then
		notok "$name: $lines lines on stderr, not one"
		diag_file "$T/err"
	elif ! grep -Eq "^dynftrace: $pat" "$T/err"; then
		notok "$name: unexpected message"
		echo "# want: dynftrace: $pat"
		diag_file "$T/err"
	else
		ok "$name: $(cut -c12- "$T/err")"
	fi
}

cd "$T" || exit 1
cat >traced.c <<'EOF'
__attribute__((noinline)) int f(int x) { return x + 1; }
int main(void) { return f(0) - 1; }
EOF
$CC -O1 $TRACE_FLAGS traced.c -o traced || { notok "build traced"; exit 1; }
$CC -O1 traced.c -o plain || { notok "build plain"; exit 1; }

fails "record: program not found (path)" 1 "program './nope' not found$" \
	"$DFT" record -d "$T/d" ./nope
fails "record: program not found (PATH)" 1 "program 'dynftrace-no-such-program' not found in PATH$" \
	"$DFT" record -d "$T/d" dynftrace-no-such-program
cp traced noexec && chmod 0644 noexec
fails "record: not executable" 1 "program '\./noexec' is not executable$" \
	"$DFT" record -d "$T/d" ./noexec
mkdir adir
fails "record: a directory" 1 "program '\./adir' is not executable$" "$DFT" record -d "$T/d" ./adir
fails "record: not executable (PATH)" 1 "program 'noexec' is not executable$" \
	env PATH="$T" "$DFT" record -d "$T/d" noexec
cp traced suid && chmod u+s suid
fails "record: setuid" 1 "\./suid is setuid: the loader ignores LD_PRELOAD for it, so it cannot be traced$" \
	"$DFT" record -d "$T/d" ./suid
cp traced sgid && chmod g+s sgid
fails "record: setgid" 1 "\./sgid is setgid: the loader ignores LD_PRELOAD for it, so it cannot be traced$" \
	"$DFT" record -d "$T/d" ./sgid
fails "record: no traceable sites" 1 "\./plain has no traceable sites, nor have its libraries: rebuild it with the flags of 'dynftrace cflags'" \
	"$DFT" record -d "$T/d" ./plain
check $([ ! -e "$T/d" ] && echo 0 || echo 1) "record: nothing created when the program is refused"
if $CC -O1 -static $TRACE_FLAGS traced.c -o static 2>/dev/null; then
	fails "record: statically linked" 1 "\./static is statically linked: the runtime cannot be preloaded into it" \
		"$DFT" record -d "$T/d" ./static
else
	skip "record: statically linked (no static libc)"
fi
printf 'garbage, not a program\n' >garbage && chmod +x garbage
fails "record: not an ELF program" 1 "cannot trace \./garbage: not an ELF file \(--force runs it anyway\)$" \
	"$DFT" record -d "$T/d" ./garbage
fails "record --force: exec fails" 1 "cannot run '\./garbage': Exec format error$" \
	"$DFT" record --force -d "$T/d" ./garbage

# output directory (tests run as root: permissions are no obstacle, so use
# places where no directory can be made)
fails "record: output directory under /proc" 1 "cannot create the output directory '/proc/dynftrace-x': " \
	"$DFT" record -d /proc/dynftrace-x ./traced
touch afile
fails "record: output directory below a regular file" 1 "cannot create the output directory '$T/afile/sub': Not a directory$" \
	"$DFT" record -d "$T/afile/sub" ./traced
fails "record: output directory is a regular file" 1 "'afile' exists and is not a dynftrace session: remove it or choose another directory with -d$" \
	"$DFT" record -d afile ./traced
mkdir notours && touch notours/keep
fails "record: existing directory not a session" 1 "'notours' exists and is not a dynftrace session" \
	"$DFT" record -d notours ./traced
check $([ -e notours/keep ] && echo 0 || echo 1) "record: a directory that is not a session is left alone"
if [ "$(id -u)" -ne 0 ]; then
	mkdir ro && chmod 0500 ro
	fails "record: read-only parent" 1 "cannot create the output directory 'ro/d': Permission denied$" \
		"$DFT" record -d ro/d ./traced
fi

# usage errors: status 2
fails "record: no program" 2 "record: no program given" "$DFT" record -d "$T/d"
fails "record: unknown option" 2 "record: unknown option '--bogus'" "$DFT" record --bogus ./traced
fails "record: bad tracer" 2 "record: unknown tracer 'fast'" "$DFT" record -T fast ./traced
fails "record: bad duration" 2 "record: bad duration '10 parsecs'" "$DFT" record -t '10 parsecs' ./traced
fails "record: bad depth" 2 "record: bad depth '0'" "$DFT" record -D 0 ./traced
fails "record: option without value" 2 "record: option '-d' needs a value" "$DFT" record -d
fails "live: -d is not an option" 2 "live: unknown option '-d'" "$DFT" live -d x ./traced
fails "replay: bad option" 2 "replay: unknown option '-x'" "$DFT" replay -x
fails "report: bad sort key" 2 "report: unknown sort key 'speed'" "$DFT" report -s speed
fails "dump: no format" 2 "dump: give the output format, --chrome" "$DFT" dump

# reading commands on missing or damaged sessions
for cmd in replay report info "dump --chrome"; do
	fails "$cmd: missing directory" 1 "there is no trace in '$T/none': it does not exist \(record one with 'dynftrace record'\)$" \
		"$DFT" $cmd -d "$T/none"
done
fails "replay: not a directory" 1 "'afile' is not a dynftrace session: it is not a directory$" \
	"$DFT" replay -d afile
mkdir empty
fails "report: no info file" 1 "'empty' is not a dynftrace session: it has no info file$" \
	"$DFT" report -d empty
mkdir badinfo && printf 'hello\n' >badinfo/info
fails "info: damaged info file" 1 "badinfo/info: line 1 is not a 'key: value' line$" "$DFT" info -d badinfo
fails "info: session directory as a word" 2 "info: 'badinfo' is a session directory: give it with -d badinfo$" \
	"$DFT" info badinfo
mkdir newinfo && printf 'version: 7\n' >newinfo/info
fails "replay: unsupported version" 1 "newinfo/info: format version 7 is not supported by this dynftrace \(version 1\)$" \
	"$DFT" replay -d newinfo
mkdir badnum && printf 'version: 1\ndepth: many\n' >badnum/info
fails "dump: bad value in info" 1 "badnum/info: line 2: bad value for 'depth'$" "$DFT" dump --chrome -d badnum
mkdir badsites && printf 'version: 1\n' >badsites/info && printf '0 zz 1 f /p\n' >badsites/sites-1.txt
fails "replay: damaged sites file" 1 "badsites/sites-1.txt: line 1 is not 'ID ADDR SIZE NAME OBJECT'$" \
	"$DFT" replay -d badsites
tap_end
