#!/usr/bin/env bash
# description: debian/ builds the dynftrace, libdynftrace0 and libdynftrace-dev packages with dpkg-buildpackage -us -uc from a copy of the tree, lintian reports no error or warning, and the packaged command traces a program with the packaged runtime
#
# Slow (a whole package build, then lintian): default configuration only.
# The checkout is copied first (its tracked and new files, not build/):
# the test leaves the source tree as it found it. Env: TOP CC.
. "$(dirname "$0")/../gen/common.sh"

for tool in dpkg-buildpackage dh lintian; do
	if ! command -v $tool >/dev/null; then
		skip "$tool is not installed (scripts/deps.sh test installs it)"
		exit 0
	fi
done

git_state() { git -C "$TOP" status --porcelain --untracked-files=all 2>/dev/null; }
before=$(git_state)

S=$T/src/dynftrace
mkdir -p "$S"
if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$TOP" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) | tar -xf - -C "$S"
else
	(cd "$TOP" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$S"
fi
[ -f "$S/debian/control" ]
check $? "the tree copied, with debian/"

if (cd "$S" && DEB_BUILD_OPTIONS="parallel=2 ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc) \
	>"$T/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc"
else
	notok "dpkg-buildpackage -us -uc"
	tail -30 "$T/build.log" | sed -e 's/^/# /'
	exit 1
fi
VER=$(dpkg-parsechangelog -l "$S/debian/changelog" -S Version)
debs=
for p in dynftrace libdynftrace0 libdynftrace-dev; do
	[ -f "$T/src/${p}_${VER}_amd64.deb" ] || debs="$debs $p"
done
[ -z "$debs" ]
check $? "the packages dynftrace, libdynftrace0 and libdynftrace-dev are built${debs:+ (missing:$debs)}"

# Errors and warnings fail; informational tags are listed.
lintian "$T/src/dynftrace_${VER}_amd64.changes" >"$T/lintian.out" 2>&1
grep -vx 'running with root privileges is not recommended!' "$T/lintian.out" |
	grep -E '^(E|W):' >"$T/lintian.bad"
[ ! -s "$T/lintian.bad" ] && ! grep -q '^E: .*[Ee]rror' "$T/lintian.out"
check $? "lintian: no error, no warning"
diag_file "$T/lintian.bad"
lintian -I "$T/src/dynftrace_${VER}_amd64.changes" 2>/dev/null | grep '^I:' | sed -e 's/^/# /'

d=$T/src/dynftrace_${VER}_amd64.deb
[ "$(dpkg-deb -f "$d" Recommends)" = libcapstone4 ] &&
	dpkg-deb -f "$d" Depends | grep -q "libdynftrace0 (= $VER)" &&
	[ "$(dpkg-deb -f "$T/src/libdynftrace0_${VER}_amd64.deb" Recommends)" = libcapstone4 ]
check $? "dynftrace depends on its own libdynftrace0; both recommend libcapstone4"

# The packages unpacked side by side: the command finds the runtime in the
# multiarch directory, the name attach loads it under too.
X=$T/x
for p in dynftrace libdynftrace0 libdynftrace-dev; do
	dpkg-deb -x "$T/src/${p}_${VER}_amd64.deb" "$X"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[ -f "$X/usr/lib/$ma/libdynftrace.so.$VER" ] && [ -L "$X/usr/lib/$ma/libdynftrace.so" ] &&
	[ "$(readlink -f "$X/usr/lib/$ma/dynftrace/libdynftrace-attach.so")" = "$X/usr/lib/$ma/libdynftrace.so.$VER" ] &&
	[ -f "$X/usr/share/man/man1/dynftrace-record.1.gz" ] &&
	[ -f "$X/usr/share/bash-completion/completions/dynftrace" ] &&
	[ -f "$X/usr/include/dynftrace/dynftrace.h" ] && [ -f "$X/usr/lib/$ma/pkgconfig/dynftrace.pc" ]
check $? "the packages hold the runtime in /usr/lib/$ma, the attach link, man pages, completion, headers, pkg-config"

cat >"$T/prog.c" <<'EOF'
__attribute__((noinline)) int leaf(int x)
{
	__asm__ volatile("");
	return x + 1;
}
int main(void)
{
	return leaf(1) != 2;
}
EOF
$CC -O2 $("$X/usr/bin/dynftrace" cflags) "$T/prog.c" -o "$T/prog" &&
	(cd "$T" && "$X/usr/bin/dynftrace" live -- ./prog) >"$T/live.out" 2>&1 &&
	grep -q 'leaf();' "$T/live.out"
check $? "the packaged command traces a program with the packaged runtime"
[ $? -eq 0 ] || diag_file "$T/live.out"

[ "$(git_state)" = "$before" ]
check $? "the source tree is left as it was"
tap_end
