#!/usr/bin/env bash
# description: make install into a DESTDIR, then only the installed files: the command finds its installed runtime (live, cflags, attach), man pages render without warnings and hold every option of every --help, the completion offers commands, options, values and control pids, pkg-config builds an API program that runs; uninstall removes it all
#
# Installed with a layout unlike the build tree's (PREFIX=/opt/dft,
# LIBDIR=/opt/dft/lib64) from a scratch build that is deleted before the
# installed files are used: nothing can come from build/. Env: TOP CC.
. "$(dirname "$0")/../gen/common.sh"
. "$(dirname "$0")/../gen/attach.sh"

ROOT=$T/root
PFX=/opt/dft
R=$ROOT$PFX
D=$R/bin/dynftrace
VER=$(sed -n 's/^#define DYNFTRACE_VERSION "\(.*\)"/\1/p' "$TOP/include/dynftrace/dynftrace.h")
MK=(make -s -C "$TOP" B_OVERRIDE="$T/b" PREFIX=$PFX LIBDIR=$PFX/lib64 DESTDIR="$ROOT")

# The build's objects are reused (cp -a keeps their times): only what the
# install layout changes is rebuilt (util.c's install_paths.h, the links, the pages).
mkdir -p "$T/b"
for d in obj cliobj; do
	[ -d "$B/$d" ] && cp -a "$B/$d" "$T/b/"
done
if ! "${MK[@]}" -j2 install >"$T/install.log" 2>&1; then
	notok "make install"
	diag_file "$T/install.log"
	exit 1
fi
ok "make install PREFIX=$PFX LIBDIR=$PFX/lib64 DESTDIR=..."
rm -rf "$T/b"

# ---- the files
missing=
for f in bin/dynftrace lib64/libdynftrace.so.$VER lib64/libdynftrace.so.0 lib64/libdynftrace.so \
	lib64/dynftrace/libdynftrace-attach.so lib64/pkgconfig/dynftrace.pc \
	include/dynftrace/dynftrace.h include/dynftrace/static_key.h \
	include/dynftrace/arch/x86_64/static_key.h share/man/man1/dynftrace.1 \
	share/man/man1/dynftrace-record.1 share/bash-completion/completions/dynftrace; do
	[ -e "$R/$f" ] || missing="$missing $f"
done
[ -z "$missing" ]
check $? "installed: command, runtime and its links, headers, pkg-config, man pages, completion${missing:+ (missing:$missing)}"
readelf -d "$R/lib64/libdynftrace.so.$VER" | grep -q 'SONAME.*\[libdynftrace\.so\.0\]'
check $? "the runtime's soname is libdynftrace.so.0"
[ "$(readlink -f "$R/lib64/dynftrace/libdynftrace-attach.so")" = "$(readlink -f "$R/lib64/libdynftrace.so.$VER")" ]
check $? "libdynftrace-attach.so is a link to the installed runtime"

# ---- the command finds its runtime
[ "$("$D" --version)" = "dynftrace $VER" ]
check $? "the installed command runs (--version)"
ldf=$("$D" cflags --ldflags)
[ "$ldf" = "-L$R/lib64 -ldynftrace -Wl,-rpath,$R/lib64" ]
check $? "cflags --ldflags names the installed library directory ($ldf)"

cat >"$T/prog.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int step(int i)
{
	__asm__ volatile("");
	return i * 3 + 1;
}

int main(int argc, char **argv)
{
	volatile int s = 0;
	char line[4096];

	if (argc > 1 && !strcmp(argv[1], "loop")) {
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			s += step(s);
			usleep(1000);
		}
	}
	for (int i = 0; i < 3; i++)
		s += step(i);
	/* the runtime this process was given */
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libdynftrace")) {
			printf("runtime %s", p);
			break;
		}
	}
	return 0;
}
EOF
if ! $CC -O2 $("$D" cflags) "$T/prog.c" -o "$T/prog" 2>"$T/cc.log"; then
	notok "a program built with \$(dynftrace cflags)"
	diag_file "$T/cc.log"
	exit 1
fi
(cd "$T" && "$D" live -- ./prog) >"$T/live.out" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c 'step();' "$T/live.out")" -eq 3 ] &&
	grep -qx "runtime $(readlink -f "$R/lib64/libdynftrace.so.$VER")" "$T/live.out"
check $? "live -- prog: the installed runtime preloaded, the calls shown (status $rc)"
[ $? -eq 0 ] || diag_file "$T/live.out"

# attach loads the runtime by its installed attach link; detach unloads it
if ! start target "$T/prog" loop; then
	notok "the attach target started"
else
	"$D" attach "$pid" >"$T/attach.out" 2>&1 &&
		grep -q "libdynftrace.so.$VER" "/proc/$pid/maps" &&
		"$D" ctl "$pid" current_tracer function >/dev/null 2>&1 &&
		"$D" ctl "$pid" tracing_on 1 >/dev/null 2>&1
	st=$?
	check $st "attach with the installed runtime, ctl switches tracing on"
	[ $st -eq 0 ] || diag_file "$T/attach.out"
	for _ in $(seq 100); do
		"$D" ctl "$pid" trace 2>/dev/null | grep -v '^#' | grep -q 'step' && break
		sleep 0.05
	done
	"$D" ctl "$pid" trace 2>/dev/null | grep -v '^#' | grep -q 'step'
	check $? "the attached process's trace shows its calls"
	attached=$pid
fi

# ---- man pages
cmds=$("$D" --help | awk '/^Commands:$/ { c = 1; next } c && /^$/ { c = 0 } c && /^  [a-z]/ { print $1 }')
[ "$(echo "$cmds" | wc -w)" -ge 10 ]
check $? "dynftrace --help lists the commands ($(echo $cmds))"
man_bad=
for page in dynftrace $(printf 'dynftrace-%s ' $cmds); do
	f=$R/share/man/man1/$page.1
	if [ ! -f "$f" ]; then
		man_bad="$man_bad $page(missing)"
		continue
	fi
	w=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" 2>&1 >/dev/null)
	w="$w$(groff -man -ww -z "$f" 2>&1)"
	if [ -n "$w" ]; then
		man_bad="$man_bad $page"
		echo "$w" | sed -e "s|^|# $page: |" | head -5
	fi
	lexgrog "$f" 2>&1 | grep -q ": \"$page - " || man_bad="$man_bad $page(whatis)"
done
[ -z "$man_bad" ]
check $? "every man page renders without a warning, NAME as whatis reads it${man_bad:+ (bad:$man_bad)}"

# Every option any --help names is in the rendered page: a command or an
# option added to the help and lost on the way would fail here.
drift=
nopt=0
opts_of() {
	grep -oE -- '(^|[ ,[|(])(--[a-z][a-z0-9-]*|-[A-Za-z])([] ,=|)]|$)' |
		sed -E 's/^[] ,[|(]*//; s/[] ,=|)]*$//' | sort -u
}
for c in "" $cmds; do
	page=dynftrace${c:+-$c}
	MANWIDTH=200 man -l "$R/share/man/man1/$page.1" 2>/dev/null >"$T/page.txt"
	for o in $("$D" ${c:+"$c"} --help | opts_of); do
		grep -qe "$o" "$T/page.txt" || drift="$drift $page:$o"
		nopt=$((nopt + 1))
	done
done
[ -z "$drift" ] && [ $nopt -ge 50 ]
check $? "every option of every --help ($nopt) is in its man page${drift:+ (missing:$drift)}"
MANWIDTH=200 man -l "$R/share/man/man1/dynftrace.1" 2>/dev/null >"$T/page.txt"
grep -q 'dynftrace-record(1)' "$T/page.txt" && grep -qF "$PFX/lib64/libdynftrace.so.0" "$T/page.txt"
check $? "dynftrace(1) points to the command pages and names the installed runtime"

# ---- bash completion, from the installed file, of the installed command
cat >"$T/comp.sh" <<'EOF'
. "$1"
c() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_dynftrace
	echo "${COMPREPLY[*]}"
}
EOF
comp() { PATH=$R/bin:$PATH bash -c ". '$T/comp.sh' '$R/share/bash-completion/completions/dynftrace'; c $*"; }
got=" $(comp dynftrace "''") "
nc=0
for c in $cmds; do [[ $got == *" $c "* ]] || nc=1; done
check $nc "completion offers every command"
cdrift=
for c in $cmds; do
	got=" $(comp dynftrace "$c" -) "
	for o in $("$D" "$c" --help | grep -E '^ {2,8}-' | opts_of | grep -- '^--'); do
		[[ $got == *" $o "* ]] || cdrift="$cdrift $c:$o"
	done
done
[ -z "$cdrift" ]
check $? "completion offers every long option of every command${cdrift:+ (missing:$cdrift)}"
[ "$(comp dynftrace record -T "''")" = "function_graph function profile" ] &&
	[ "$(comp dynftrace report --sort = "''")" = "total self calls avg" ]
check $? "completion offers the values an option's help lists (--tracer, --sort)"
[ "$(comp dynftrace record -d "$T/ro")" = "$T/root" ]
check $? "completion offers directories for -d DIR"
if [ -n "${attached:-}" ]; then
	got=" $(comp dynftrace ctl "''") "
	[[ $got == *" $attached "* ]]
	check $? "completion offers the attached process's pid for ctl"
	got=" $(comp dynftrace ctl "$attached" "''") "
	[[ $got == *" current_tracer "* && $got == *" set_ftrace_filter "* ]]
	check $? "completion offers the process's control files for ctl PID"
	got=" $(comp dynftrace ctl "$attached" current_tracer "''") "
	[[ $got == *" function_graph "* ]]
	check $? "completion offers the process's tracers for ctl PID current_tracer"
	"$D" detach "$attached" >"$T/detach.out" 2>&1 && ! grep -q libdynftrace "/proc/$attached/maps"
	check $? "detach unloads the installed runtime"
fi

# ---- pkg-config and a program using the API
export PKG_CONFIG_PATH=$R/lib64/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT
[ "$(pkg-config --modversion dynftrace)" = "$VER" ]
check $? "pkg-config --modversion dynftrace"
flags=$(pkg-config --cflags --libs dynftrace)
[[ " $flags " == *" -I$R/include "* && " $flags " == *" -L$R/lib64 "* && " $flags " == *" -ldynftrace "* ]]
check $? "pkg-config --cflags --libs dynftrace: $flags"
cat >"$T/api.c" <<'EOF'
#include <stdio.h>
#include <dynftrace/dynftrace.h>

static unsigned long hits;

static void count(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
		  struct dynftrace_regs *regs)
{
	(void)ip, (void)parent_ip, (void)ops, (void)regs;
	__atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) int work(int x)
{
	__asm__ volatile("");
	return x + 1;
}

int main(void)
{
	static struct dynftrace_ops ops = {.func = count};
	volatile int s = 0;
	int r = dynftrace_set_filter(&ops, "work", 1);

	if (!r)
		r = dynftrace_register_ops(&ops);
	if (r) {
		printf("error %d\n", r);
		return 1;
	}
	for (int i = 0; i < 1000; i++)
		s = work(s);
	dynftrace_unregister_ops(&ops);
	dynftrace_free_filter(&ops);
	for (int i = 0; i < 10; i++)
		s = work(s);
	printf("%s hits %lu\n", DYNFTRACE_VERSION, hits);
	return hits != 1000;
}
EOF
if $CC -O2 -Wall -Wextra "$T/api.c" -o "$T/api" $flags 2>"$T/api.log"; then
	out=$(LD_LIBRARY_PATH=$R/lib64 "$T/api" 2>&1)
	[ "$out" = "$VER hits 1000" ]
	check $? "a program built with \$(pkg-config --cflags --libs dynftrace) traces its own calls ($out)"
	LD_LIBRARY_PATH=$R/lib64 ldd "$T/api" | grep -q "libdynftrace.so.0 => $R/lib64/libdynftrace.so.0"
	check $? "it needs libdynftrace.so.0, found installed"
else
	notok "a program built with \$(pkg-config --cflags --libs dynftrace)"
	diag_file "$T/api.log"
fi
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# ---- uninstall
"${MK[@]}" uninstall >"$T/uninstall.log" 2>&1
left=$(find "$ROOT" ! -type d)
[ $? -eq 0 ] && [ -z "$left" ]
check $? "make uninstall removes every installed file${left:+ (left: $(echo $left))}"
tap_end
