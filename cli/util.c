// SPDX-License-Identifier: MIT
/*
 * util.c - small helpers shared by the subcommands: durations, numbers with
 * thousands separators, globs and directory removal.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dynftrace/attach.h"
/* Where an installed dynftrace finds its runtime, written by make (its
 * name is not <paths.h>, the C library's). Compiled outside make (the
 * fuzzers), the default layout. */
#if __has_include("install_paths.h")
#include "install_paths.h"
#else
#define DFT_LIBDIR_REL	    "../lib"
#define DFT_RUNTIME_SONAME  "libdynftrace.so.0"
#define DFT_RUNTIME_PRIVDIR "dynftrace"
#endif
#include "demangle.h"
#include "pattern.h"

int cli_parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *sfx;
		uint64_t mult;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {"", 1}};
	unsigned long long whole = 0, frac = 0, fdiv = 1;
	const char *p = s;
	int digits = 0;

	while (*p >= '0' && *p <= '9') {
		if (whole > (ULLONG_MAX - 9) / 10)
			return -ERANGE;
		whole = whole * 10 + (unsigned)(*p++ - '0');
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (fdiv < 1000000000ull) {
				frac = frac * 10 + (unsigned)(*p - '0');
				fdiv *= 10;
			}
			p++;
			digits++;
		}
	}
	if (!digits)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].sfx))
			continue;
		if (whole > UINT64_MAX / units[i].mult)
			return -ERANGE;
		*ns = whole * units[i].mult + frac * units[i].mult / fdiv;
		return 0;
	}
	return -EINVAL;
}

int cli_parse_seconds(const char *s, uint64_t max_s, uint64_t *ns)
{
	char buf[64];
	size_t n = strlen(s);
	if (!n || n + 2 > sizeof(buf))
		return -EINVAL;
	if ((s[n - 1] >= '0' && s[n - 1] <= '9') || s[n - 1] == '.') {
		snprintf(buf, sizeof(buf), "%ss", s); /* a plain number: seconds */
		s = buf;
	}
	int r = cli_parse_duration(s, ns);
	if (!r && *ns / 1000000000 > max_s)
		r = -ERANGE;
	return r;
}

int cli_parse_uint(const char *s, uint64_t max, uint64_t *val)
{
	unsigned long long v;
	char *end;

	if (!s[0] || s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	if (v > max)
		return -ERANGE;
	*val = v;
	return 0;
}

const char *cli_thousands(uint64_t v, char *buf, size_t size)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	size_t o = 0;

	for (int i = 0; i < n && o + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

const char *cli_fmt_duration(uint64_t ns, char *buf, size_t size)
{
	if (ns < 1000000ull)
		snprintf(buf, size, "%7.3f us", ns / 1e3);
	else if (ns < 1000000000ull)
		snprintf(buf, size, "%7.3f ms", ns / 1e6);
	else
		snprintf(buf, size, "%7.3f  s", ns / 1e9);
	return buf;
}

const char *cli_fmt_size(uint64_t bytes, char *buf, size_t size)
{
	if (bytes < 1024)
		snprintf(buf, size, "%" PRIu64 " B", bytes);
	else if (bytes < 1024 * 1024)
		snprintf(buf, size, "%.1f KiB", bytes / 1024.0);
	else if (bytes < 1024ull * 1024 * 1024)
		snprintf(buf, size, "%.1f MiB", bytes / 1048576.0);
	else
		snprintf(buf, size, "%.2f GiB", bytes / 1073741824.0);
	return buf;
}

int cli_glob_add(struct cli_globs *g, const char *arg)
{
	const char *p = arg;

	/* "a,b" gives two patterns, as the DYNFTRACE_FILTER list does. */
	while (1) {
		size_t len = strcspn(p, ",");
		char **v;

		if (len) {
			v = realloc(g->v, (g->n + 1) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			g->v = v;
			g->v[g->n] = strndup(p, len);
			if (!g->v[g->n])
				return -ENOMEM;
			g->n++;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	return 0;
}

int cli_glob_add_one(struct cli_globs *g, const char *pat)
{
	char **v = realloc(g->v, (g->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	g->v = v;
	if (!(g->v[g->n] = strdup(pat)))
		return -ENOMEM;
	g->n++;
	return 0;
}

int cli_glob_match(const struct cli_globs *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (pat_match_func(g->v[i], name))
			return 1;
	return 0;
}

int cli_glob_check(const struct cli_globs *g, const char *cmd)
{
	char why[512];

	for (size_t i = 0; i < g->n; i++) {
		const char *v = g->v[i][0] == '!' ? g->v[i] + 1 : g->v[i];
		char func[1024];
		size_t flen = strlen(v);
		const char *m = strstr(v, ":mod:"), *at = NULL;

		/* the function's part: before FUNC@OBJECT's last '@' or :mod: */
		for (const char *p = v; *p; p++) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '@')
				at = p;
		}
		if (m)
			flen = (size_t)(m - v);
		else if (at)
			flen = (size_t)(at - v);
		if (flen >= sizeof(func)) {
			cli_err("%s: pattern too long: '%.40s...'", cmd, v);
			return -1;
		}
		memcpy(func, v, flen);
		func[flen] = 0;
		if ((flen || !(m || at)) && !pat_valid(func, why, sizeof(why))) {
			cli_err("%s: %s", cmd, why);
			return -1;
		}
	}
	return 0;
}

char *cli_glob_join(const struct cli_globs *g)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < g->n; i++)
		len += strlen(g->v[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	s[0] = 0;
	for (size_t i = 0; i < g->n; i++) {
		if (i)
			strcat(s, ",");
		strcat(s, g->v[i]);
	}
	return s;
}

void cli_glob_free(struct cli_globs *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i]);
	free(g->v);
	g->v = NULL;
	g->n = 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) ? -1 : 0;
	return unlink(path) ? -1 : 0;
}

int cli_rm_tree(const char *path)
{
	/* Depth first, never following a symbolic link out of the tree. */
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return -errno;
	return 0;
}

/* The directory of the running binary. */
static int exe_dir(char *buf, size_t size)
{
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return -ENOENT;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		return -ENOENT;
	*(slash == buf ? slash + 1 : slash) = 0;
	return 0;
}

int cli_runtime(char *dir, char *preload, char *attach, size_t size)
{
	char self[PATH_MAX], d[PATH_MAX], rel[2 * PATH_MAX];
	char p[PATH_MAX + 64], a[PATH_MAX + 64];

	if (exe_dir(self, sizeof(self)))
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/libdynftrace.so", self);
	if (!access(p, R_OK)) {
		/* A build tree: everything next to the binary. */
		snprintf(d, sizeof(d), "%s", self);
		snprintf(a, sizeof(a), "%s/%s", self, DYNFTRACE_ATTACH_SONAME);
	} else {
		/* Installed: the library by its soname (the unversioned name
		 * belongs to the development files), the attach link in the
		 * runtime's private directory. */
		if (DFT_LIBDIR_REL[0] == '/')
			snprintf(rel, sizeof(rel), "%s", DFT_LIBDIR_REL);
		else
			snprintf(rel, sizeof(rel), "%s/%s", self, DFT_LIBDIR_REL);
		if (!realpath(rel, d))
			return -ENOENT;
		snprintf(p, sizeof(p), "%s/%s", d, DFT_RUNTIME_SONAME);
		if (access(p, R_OK))
			return -ENOENT;
		snprintf(a, sizeof(a), "%s/%s/%s", d, DFT_RUNTIME_PRIVDIR, DYNFTRACE_ATTACH_SONAME);
	}
	if ((dir && (size_t)snprintf(dir, size, "%s", d) >= size) ||
	    (preload && (size_t)snprintf(preload, size, "%s", p) >= size) ||
	    (attach && (size_t)snprintf(attach, size, "%s", a) >= size))
		return -ENAMETOOLONG;
	return 0;
}

int cli_info_append(const char *dir, const char *line)
{
	char path[PATH_MAX];
	size_t len = strlen(line);
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/info", dir);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, len) != (ssize_t)len)
		ret = errno ? -errno : -ENOSPC;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

void cli_out_error(void)
{
	cli_err("cannot write the output: %s", strerror(errno ? errno : EIO));
}

int cli_opt(int argc, char **argv, int *i, const char *sopt, const char *lopt, const char **val)
{
	const char *a = argv[*i];
	size_t sl = sopt ? strlen(sopt) : 0, ll = lopt ? strlen(lopt) : 0;

	if (sopt && !strcmp(a, sopt)) {
		/* "-d DIR" */
	} else if (lopt && !strcmp(a, lopt)) {
		/* "--data DIR" */
	} else if (sopt && !strncmp(a, sopt, sl) && sl == 2 && a[2]) {
		*val = a + 2; /* "-dDIR" */
		return 1;
	} else if (lopt && !strncmp(a, lopt, ll) && a[ll] == '=') {
		*val = a + ll + 1; /* "--data=DIR" */
		return 1;
	} else {
		return 0;
	}
	if (*i + 1 >= argc) {
		cli_err("%s: option '%s' needs a value; see 'dynftrace %s --help'", argv[0], a,
			argv[0]);
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

int cli_flag(const char *arg, const char *sopt, const char *lopt)
{
	return (sopt && !strcmp(arg, sopt)) || (lopt && !strcmp(arg, lopt));
}

/*
 * C++ names: the runtime's demangler (lib/core/demangle.c, libc only), in
 * the style tr_demangle asks for.
 */
char *cli_demangle(const char *name, int style)
{
	char buf[8192];

	if (strncmp(name, "_Z", 2))
		return NULL;
	if (dft_demangle(name, style == 2 ? DM_FULL : DM_SIMPLE, buf, sizeof(buf)) < 0)
		return NULL;
	return strdup(buf);
}
