// SPDX-License-Identifier: MIT
/*
 * trace_session.c - opening a session directory: the info file, the sites,
 * maps and tracepoints files of each process image, the uuid of the CTF
 * metadata, and the stream files mapped (decoded by trace_stream.c). See
 * trace_session.h for the contract and docs/FORMAT.md for the layout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf.h"
#include "cli.h"
#include "args_fmt.h"
#include "trace_session.h"

#define MAX_TEXT_FILE (256u << 20) /* info, sites and maps files */

void tr_set_err(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, TR_ERR_LEN, fmt, ap);
	va_end(ap);
}

/* Read a whole text file (NUL-terminated copy). 0 or -errno. */
static int read_text(const char *path, char **text, size_t *len)
{
	struct stat st;
	size_t done = 0;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_TEXT_FILE) {
		int err = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;

		close(fd);
		return err;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shrank meanwhile: take what is there */
		done += (size_t)n;
	}
	close(fd);
	buf[done] = 0;
	*text = buf;
	*len = done;
	return 0;
}

/* Split TEXT into lines in place; calls FN(line, lineno). Stops at non-zero. */
static int for_each_line(char *text, size_t len, int (*fn)(char *line, unsigned no, void *d),
			 void *d)
{
	unsigned no = 0;
	char *p = text, *end = text + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		int ret;

		if (!nl)
			nl = end;
		*nl = 0;
		no++;
		if (memchr(p, 0, (size_t)(nl - p)))
			return -(int)no; /* a NUL byte inside a line */
		if (nl > p && nl[-1] == '\r')
			nl[-1] = 0;
		ret = fn(p, no, d);
		if (ret)
			return ret;
		p = nl + 1;
	}
	return 0;
}

/* for_each_line() on TEXT, the file PATH, with its failure said in S->err:
 * 0, -EINVAL or -ENOMEM. */
static int parse_lines(struct tr_session *s, const char *path, char *text, size_t len,
		       int (*fn)(char *line, unsigned no, void *d), void *d)
{
	int err = for_each_line(text, len, fn, d);

	if (err < 0 && err != -EINVAL && err != -ENOMEM) {
		tr_set_err(s->err, "%s: line %d holds a NUL byte", path, -err);
		err = -EINVAL;
	}
	if (err == -ENOMEM)
		tr_set_err(s->err, "out of memory reading %s", path);
	return err;
}

static int parse_u64(const char *s, int base, uint64_t *v, const char **end)
{
	unsigned long long x;
	char *e;

	if (!((*s >= '0' && *s <= '9') ||
	      (base == 16 && ((*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &e, base);
	if (errno)
		return -EINVAL;
	*v = x;
	*end = e;
	return 0;
}

/* A whole decimal token ending at a space or the end. */
static int parse_dec_tok(const char **s, uint64_t *v)
{
	const char *e;

	if (parse_u64(*s, 10, v, &e) || (*e && *e != ' '))
		return -EINVAL;
	*s = *e ? e + 1 : e;
	return 0;
}

/* "123" or "123.4": a process key. Returns its length, 0 if none. */
static size_t key_len(const char *s)
{
	size_t n = strspn(s, "0123456789");

	if (!n || n > 10)
		return 0;
	if (s[n] == '.') {
		size_t m = strspn(s + n + 1, "0123456789");

		if (m > 10)
			return 0;
		if (m)
			n += 1 + m;
	}
	return n;
}

/* A key token ending at a space or the end; *PID its pid part. */
static int parse_key_tok(const char **s, uint64_t *pid)
{
	size_t n = key_len(*s);

	if (!n || ((*s)[n] && (*s)[n] != ' '))
		return -EINVAL;
	*pid = strtoull(*s, NULL, 10);
	*s += (*s)[n] ? n + 1 : n;
	return 0;
}

/* ---- info ------------------------------------------------------------- */

struct info_ctx {
	struct tr_session *s;
	const char *path;
	int seen_version;
};

static int info_strdup(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

static int info_line(char *line, unsigned no, void *d)
{
	struct info_ctx *c = d;
	struct tr_info *in = &c->s->info;
	const char *v;
	char *colon;
	uint64_t a, b, n;

	if (!line[0])
		return 0;
	colon = strchr(line, ':');
	if (!colon || colon == line) {
		tr_set_err(c->s->err, "%s: line %u is not a 'key: value' line", c->path, no);
		return -EINVAL;
	}
	*colon = 0;
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (!c->seen_version) {
		if (strcmp(line, "version")) {
			tr_set_err(c->s->err, "%s: the first line is not 'version: N'", c->path);
			return -EINVAL;
		}
		if (parse_dec_tok(&v, &n) || n > 1000) {
			tr_set_err(c->s->err, "%s: line %u: bad version", c->path, no);
			return -EINVAL;
		}
		if (n != 1) {
			tr_set_err(c->s->err,
				   "%s: format version %" PRIu64
				   " is not supported by this dynftrace (version 1)",
				   c->path, n);
			return -EINVAL;
		}
		in->version = (int)n;
		c->seen_version = 1;
		return 0;
	}
#define NUM(key, field)                                                                            \
	if (!strcmp(line, key)) {                                                                  \
		if (parse_dec_tok(&v, &n))                                                         \
			goto bad;                                                                  \
		in->field = n;                                                                     \
		return 0;                                                                          \
	}
	NUM("depth", depth)
	NUM("time_filter_ns", time_filter_ns)
	NUM("buffer_kb", buffer_kb)
#undef NUM
	if (!strcmp(line, "command"))
		return info_strdup(&in->command, v);
	if (!strcmp(line, "tracer"))
		return info_strdup(&in->tracer, v);
	if (!strcmp(line, "filter"))
		return info_strdup(&in->filter, v);
	if (!strcmp(line, "notrace"))
		return info_strdup(&in->notrace, v);
	if (!strcmp(line, "trigger"))
		return info_strdup(&in->trigger, v);
	if (!strcmp(line, "argument"))
		return info_strdup(&in->argument, v);
	if (!strcmp(line, "overwrite")) {
		if (parse_dec_tok(&v, &n) || n > 1)
			goto bad;
		in->overwrite = (int)n;
		return 0;
	}
	if (!strcmp(line, "start_ns") || !strcmp(line, "end_ns")) {
		if (parse_dec_tok(&v, &n))
			goto bad;
		if (line[0] == 's') {
			in->start_ns = n;
			in->has_start = 1;
		} else {
			in->end_ns = n;
			in->has_end = 1;
		}
		return 0;
	}
	if (!strcmp(line, "pid")) {
		/* "PID", or "PID.K" for the K-th image exec'd in that pid */
		size_t kl = key_len(v);
		char(*p)[32];

		if (!kl || (v[kl] && v[kl] != ' ') || !strtoul(v, NULL, 10))
			goto bad;
		p = realloc(in->pids, (in->npids + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		in->pids = p;
		memcpy(in->pids[in->npids], v, kl);
		in->pids[in->npids++][kl] = 0;
		return 0;
	}
	if (!strcmp(line, "attached") || !strcmp(line, "detached")) {
		int att = line[0] == 'a';
		if (parse_dec_tok(&v, &a) || !a || a > INT32_MAX)
			goto bad;
		/* KEY VALUE pairs; unknown keys are skipped (later versions) */
		while (*v) {
			size_t kl = strcspn(v, " ");
			char key[32];
			if (!kl || kl >= sizeof(key))
				goto bad;
			memcpy(key, v, kl);
			key[kl] = 0;
			v += kl;
			while (*v == ' ')
				v++;
			if (!att && !strcmp(key, "ended")) {
				in->detach_ended = 1;
				continue;
			}
			if (parse_dec_tok(&v, &n))
				goto bad;
			if (att && !strcmp(key, "at_ns"))
				in->attach_ns = n;
			else if (att && !strcmp(key, "stopped_ns"))
				in->attach_stop_ns = n;
			else if (att && !strcmp(key, "sites"))
				in->attach_sites = n;
			else if (!att && !strcmp(key, "end_ns"))
				in->detach_ns = n;
			else if (!att && !strcmp(key, "stopped_ns"))
				in->detach_stop_ns = n;
			else if (!att && !strcmp(key, "children"))
				in->detach_children = n;
		}
		if (att) {
			in->has_attach = 1;
			in->attach_pid = (pid_t)a;
		} else {
			in->has_detach = 1;
		}
		return 0;
	}
	if (!strcmp(line, "exit")) {
		int sig;

		if (parse_dec_tok(&v, &a) || !a || a > INT32_MAX)
			goto bad;
		if (!strncmp(v, "status ", 7))
			sig = 0;
		else if (!strncmp(v, "signal ", 7))
			sig = 1;
		else
			goto bad;
		v += 7;
		if (parse_dec_tok(&v, &n) || n > 255)
			goto bad;
		in->has_exit = 1;
		in->exit_pid = (pid_t)a;
		in->exit_signaled = sig;
		in->exit_code = (int)n;
		return 0;
	}
	if (!strcmp(line, "lost")) {
		struct tr_lost_line *l;

		/* the pid may be an image key "PID.K": its pid counts */
		if (parse_key_tok(&v, &a) || parse_dec_tok(&v, &b) || parse_dec_tok(&v, &n) || !a ||
		    a > INT32_MAX || !b || b > INT32_MAX)
			goto bad;
		l = realloc(in->lost, (in->nlost + 1) * sizeof(*l));
		if (!l)
			return -ENOMEM;
		in->lost = l;
		in->lost[in->nlost++] = (struct tr_lost_line){(pid_t)a, (pid_t)b, n, 0, 0};
		return 0;
	}
	if (!strcmp(line, "overwritten") || !strcmp(line, "dropped")) {
		/* Parts of the thread's "lost:" line (written just before them):
		 * what overwrite mode replaced by design, what the writer
		 * dropped (the rest is what could not be written). */
		struct tr_lost_line *l;
		size_t i;

		if (parse_key_tok(&v, &a) || parse_dec_tok(&v, &b) || parse_dec_tok(&v, &n) || !a ||
		    a > INT32_MAX || !b || b > INT32_MAX)
			goto bad;
		for (i = in->nlost; i-- > 0;)
			if (in->lost[i].pid == (pid_t)a && in->lost[i].tid == (pid_t)b)
				break;
		if (i == (size_t)-1)
			goto bad;
		l = &in->lost[i];
		if (l->overwritten + l->dropped + n > l->count ||
		    l->overwritten + l->dropped + n < n)
			goto bad;
		if (line[0] == 'o')
			l->overwritten += n;
		else
			l->dropped += n;
		return 0;
	}
	if (!strcmp(line, "unflushed") || !strcmp(line, "salvaged")) {
		struct tr_unflushed *u;
		size_t i;
		int rec = -1;

		if (parse_key_tok(&v, &a) || parse_dec_tok(&v, &b) || !a || a > INT32_MAX)
			goto bad;
		if (line[0] == 's') {
			if (parse_dec_tok(&v, &n))
				goto bad;
			in->salvaged += n;
		} else if (!strcmp(v, "recovered") || !strcmp(v, "lost")) {
			rec = v[0] == 'r';
		} else {
			goto bad;
		}
		for (i = 0; i < in->nunflushed && in->unflushed[i].pid != (pid_t)a; i++)
			;
		if (i == in->nunflushed) {
			u = realloc(in->unflushed, (i + 1) * sizeof(*u));
			if (!u)
				return -ENOMEM;
			in->unflushed = u;
			in->unflushed[in->nunflushed++] = (struct tr_unflushed){(pid_t)a, 0, 1, 0};
		}
		u = &in->unflushed[i];
		if (rec < 0) {
			u->events += n;
		} else {
			u->sig = (int)(b > 64 ? 0 : b);
			u->recovered = rec;
		}
		return 0;
	}
	return 0; /* unknown keys: written by a newer version */
bad:
	tr_set_err(c->s->err, "%s: line %u: bad value for '%s'", c->path, no, line);
	return -EINVAL;
}

static int read_info(struct tr_session *s)
{
	struct info_ctx c = {.s = s};
	char *path, *text;
	size_t len;
	int err;

	if (asprintf(&path, "%s/info", s->dir) < 0)
		return -ENOMEM;
	c.path = path;
	err = read_text(path, &text, &len);
	if (err) {
		if (err == -ENOENT)
			tr_set_err(s->err, "'%s' is not a dynftrace session: it has no info file",
				   s->dir);
		else if (err == -ENOMEM)
			tr_set_err(s->err, "out of memory reading %s", path);
		else
			tr_set_err(s->err, "cannot read %s: %s", path, strerror(-err));
		free(path);
		return err == -ENOMEM ? err : err == -ENOENT ? -ENOENT : -EINVAL;
	}
	err = parse_lines(s, path, text, len, info_line, &c);
	if (!err && !c.seen_version) {
		tr_set_err(s->err, "%s is empty: the session was not recorded completely", path);
		err = -EINVAL;
	}
	free(text);
	free(path);
	return err;
}

/* ---- processes, sites, maps ------------------------------------------- */

static struct tr_proc *proc_get(struct tr_session *s, const char *key)
{
	struct tr_proc *p;
	unsigned long long pid;

	for (size_t i = 0; i < s->nprocs; i++)
		if (!strcmp(s->procs[i].key, key))
			return &s->procs[i];
	if (strlen(key) >= sizeof(p->key))
		return NULL;
	p = realloc(s->procs, (s->nprocs + 1) * sizeof(*p));
	if (!p)
		return NULL;
	s->procs = p;
	p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof(*p));
	strcpy(p->key, key);
	pid = strtoull(key, NULL, 10);
	p->pid = (pid_t)pid;
	return p;
}

/* What sites_line() and maps_line() parse into. */
struct proc_ctx {
	struct tr_session *s;
	struct tr_proc *p;
	const char *path;
	size_t cap;
};

/* Read DIR/FNAME, a file of process P, into *TEXT and give its lines to FN.
 * *PATH (malloc'd, or NULL) names the file in later messages. */
static int read_proc_file(struct tr_session *s, struct tr_proc *p, const char *fname, char **text,
			  int (*fn)(char *line, unsigned no, void *d), char **path)
{
	struct proc_ctx c = {.s = s, .p = p};
	size_t len;
	int err;

	if (asprintf(path, "%s/%s", s->dir, fname) < 0) {
		*path = NULL;
		return -ENOMEM;
	}
	c.path = *path;
	err = read_text(*path, text, &len);
	if (err) {
		tr_set_err(s->err, "cannot read %s: %s", *path, strerror(-err));
		return err == -ENOMEM ? err : -EINVAL;
	}
	return parse_lines(s, *path, *text, len, fn, &c);
}

static int sites_line(char *line, unsigned no, void *d)
{
	struct proc_ctx *c = d;
	struct tr_proc *p = c->p;
	struct tr_site site = {0};
	const char *v = line, *e;
	uint64_t id;
	char *name, *sp;

	if (!line[0] || line[0] == '#')
		return 0;
	if (parse_u64(v, 10, &id, &e) || *e != ' ' || id > UINT32_MAX)
		goto bad;
	v = e + 1;
	if (!strncmp(v, "0x", 2))
		v += 2;
	if (parse_u64(v, 16, &site.addr, &e) || *e != ' ')
		goto bad;
	v = e + 1;
	if (!strncmp(v, "0x", 2)) {
		if (parse_u64(v + 2, 16, &site.size, &e))
			goto bad;
	} else if (parse_u64(v, 10, &site.size, &e)) {
		goto bad;
	}
	if (*e != ' ')
		goto bad;
	name = (char *)e + 1;
	if (!*name || *name == ' ')
		goto bad;
	sp = strchr(name, ' ');
	if (sp) {
		*sp = 0;
		site.obj = sp + 1;
	} else {
		site.obj = "";
	}
	site.name = name;
	site.id = (uint32_t)id;
	if (p->nsites == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct tr_site *n = realloc(p->sites, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->sites = n;
		c->cap = cap;
	}
	p->sites[p->nsites++] = site;
	return 0;
bad:
	tr_set_err(c->s->err, "%s: line %u is not 'ID ADDR SIZE NAME OBJECT'", c->path, no);
	return -EINVAL;
}

static int cmp_site_id(const void *a, const void *b)
{
	const struct tr_site *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_site_addr(const void *a, const void *b)
{
	const struct tr_site *x = *(const struct tr_site *const *)a;
	const struct tr_site *y = *(const struct tr_site *const *)b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int read_sites(struct tr_session *s, struct tr_proc *p, const char *fname)
{
	char *path;
	int err = read_proc_file(s, p, fname, &p->text, sites_line, &path);

	if (!err) {
		if (p->nsites)
			qsort(p->sites, p->nsites, sizeof(*p->sites), cmp_site_id);
		p->dense = 1;
		for (size_t i = 0; i < p->nsites; i++) {
			if (i && p->sites[i].id == p->sites[i - 1].id) {
				tr_set_err(s->err, "%s: site id %" PRIu32 " appears twice", path,
					   p->sites[i].id);
				err = -EINVAL;
				break;
			}
			if (p->sites[i].id != i)
				p->dense = 0;
		}
	}
	if (!err && p->nsites) {
		p->by_addr = malloc(p->nsites * sizeof(*p->by_addr));
		if (!p->by_addr) {
			tr_set_err(s->err, "out of memory reading %s", path);
			err = -ENOMEM;
		} else {
			for (size_t i = 0; i < p->nsites; i++)
				p->by_addr[i] = &p->sites[i];
			qsort(p->by_addr, p->nsites, sizeof(*p->by_addr), cmp_site_addr);
		}
	}
	p->has_sites = !err;
	free(path);
	return err;
}

static int maps_line(char *line, unsigned no, void *d)
{
	struct proc_ctx *c = d;
	struct tr_proc *p = c->p;
	struct tr_map m = {0};
	const char *v = line, *e;

	if (!line[0] || line[0] == '#')
		return 0;
	for (int i = 0; i < 3; i++) {
		uint64_t *f = i == 0 ? &m.start : i == 1 ? &m.end : &m.bias;

		if (!strncmp(v, "0x", 2))
			v += 2;
		if (parse_u64(v, 16, f, &e) || *e != ' ')
			goto bad;
		v = e + 1;
	}
	if (!*v || m.end < m.start)
		goto bad;
	m.path = v;
	if (p->nmaps == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct tr_map *n = realloc(p->maps, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->maps = n;
		c->cap = cap;
	}
	p->maps[p->nmaps++] = m;
	return 0;
bad:
	tr_set_err(c->s->err, "%s: line %u is not 'START END BIAS PATH'", c->path, no);
	return -EINVAL;
}

static int cmp_map(const void *a, const void *b)
{
	const struct tr_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int read_maps(struct tr_session *s, struct tr_proc *p, const char *fname)
{
	char *path;
	int err = read_proc_file(s, p, fname, &p->maps_text, maps_line, &path);

	if (!err && p->nmaps)
		qsort(p->maps, p->nmaps, sizeof(*p->maps), cmp_map);
	free(path);
	return err;
}

/* fork-KEY.txt (docs/FORMAT.md): "parent: PID", "time: NS", then
 * "frame: ID NS" per inherited frame, outermost first. */
static int fork_line(char *line, unsigned no, void *d)
{
	struct proc_ctx *c = d;
	struct tr_proc *p = c->p;
	uint64_t v, ts;
	const char *e;

	if (!line[0] || line[0] == '#')
		return 0;
	if (!strncmp(line, "parent: ", 8)) {
		if (parse_u64(line + 8, 10, &v, &e) || *e || !v || v > INT32_MAX)
			goto bad;
		p->parent = (pid_t)v;
		return 0;
	}
	if (!strncmp(line, "time: ", 6)) {
		if (parse_u64(line + 6, 10, &p->fork_ns, &e) || *e)
			goto bad;
		return 0;
	}
	if (strncmp(line, "frame: ", 7) || parse_u64(line + 7, 10, &v, &e) || *e != ' ' ||
	    v > UINT32_MAX || parse_u64(e + 1, 10, &ts, &e) || *e || !ts)
		goto bad;
	if (!p->fork_ns || ts > p->fork_ns) {
		tr_set_err(c->s->err,
			   "%s: line %u: a frame that begins after the fork, or before "
			   "its 'time:' line",
			   c->path, no);
		return -EINVAL;
	}
	if (p->ninherit == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct tr_inherit *n = realloc(p->inherit, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->inherit = n;
		c->cap = cap;
	}
	if (p->ninherit && ts < p->inherit[p->ninherit - 1].ts) {
		tr_set_err(c->s->err, "%s: line %u: a frame that begins before its caller", c->path,
			   no);
		return -EINVAL;
	}
	p->inherit[p->ninherit].func = (uint32_t)v;
	p->inherit[p->ninherit++].ts = ts;
	return 0;
bad:
	tr_set_err(c->s->err, "%s: line %u is not 'parent: PID', 'time: NS' or 'frame: ID NS'",
		   c->path, no);
	return -EINVAL;
}

static int read_fork(struct tr_session *s, struct tr_proc *p, const char *fname)
{
	char *text = NULL;
	int err = read_proc_file(s, p, fname, &text, fork_line, &p->fork_path);

	free(text);
	if (!err && p->ninherit && !p->parent) {
		tr_set_err(s->err, "%s: frames but no 'parent:' line", p->fork_path);
		err = -EINVAL;
	}
	return err;
}

/* Every inherited frame names a site of its process. 0 or -EINVAL. */
static int check_fork(struct tr_session *s, const struct tr_proc *p)
{
	for (size_t i = 0; i < p->ninherit; i++)
		if (!tr_site(p, p->inherit[i].func)) {
			tr_set_err(s->err,
				   "%s: frame %zu names function id %" PRIu32
				   ", which %s/sites-%s.txt does not have",
				   p->fork_path, i + 1, p->inherit[i].func, s->dir, p->key);
			return -EINVAL;
		}
	return 0;
}

/* ---- metadata --------------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" -> 16 bytes. */
static int parse_uuid(const char *s, uint8_t *out)
{
	int n = 0;

	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		if (hexval(s[i]) < 0 || hexval(s[i + 1]) < 0)
			return -EINVAL;
		out[n++] = (uint8_t)(hexval(s[i]) << 4 | hexval(s[i + 1]));
		i++;
	}
	return s[36] == '"' ? 0 : -EINVAL;
}

static int read_metadata(struct tr_session *s)
{
	char *path, *text, *u;
	size_t len;
	int err, ver;

	if (asprintf(&path, "%s/ctf/metadata", s->dir) < 0)
		return -ENOMEM;
	err = read_text(path, &text, &len);
	if (err) {
		if (err == -ENOENT) {
			free(path);
			return 0; /* fine if there is no stream either; checked later */
		}
		tr_set_err(s->err, "cannot read %s: %s", path, strerror(-err));
		free(path);
		return err == -ENOMEM ? err : -EINVAL;
	}
	s->has_metadata = 1;
	err = 0;
	if (strncmp(text, "/* CTF 1.8", 10)) {
		tr_set_err(s->err, "%s is not CTF 1.8 text metadata", path);
		err = -EINVAL;
	} else if ((u = strstr(text, "trace_format_version = ")) &&
		   (ver = atoi(u + strlen("trace_format_version = "))) > FMT_VERSION) {
		tr_set_err(s->err,
			   "%s: event format version %d is newer than this dynftrace reads (%d): "
			   "read it with the dynftrace that recorded it",
			   path, ver, FMT_VERSION);
		err = -EINVAL;
	} else if ((u = strstr(text, "uuid = \""))) {
		if (parse_uuid(u + 8, s->uuid)) {
			tr_set_err(s->err, "%s: bad uuid at offset %zu", path, (size_t)(u - text));
			err = -EINVAL;
		} else {
			s->has_uuid = 1;
		}
	}
	free(text);
	free(path);
	return err;
}

/* ---- opening ---------------------------------------------------------- */

static int cmp_stream(const void *a, const void *b)
{
	const struct tr_stream *x = a, *y = b;
	int c = strcmp(x->proc->key, y->proc->key);

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (c)
		return c;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

static int add_stream(struct tr_session *s, const char *ctfdir, const char *fname)
{
	const char *k = fname + 7, *t;
	size_t kl = key_len(k), tl;
	char key[32];
	struct tr_stream *st;
	struct stat sb;
	int fd;

	if (!kl || k[kl] != '-')
		return 0; /* not ours: ignored */
	t = k + kl + 1;
	/* "TID", or "TID.N": a thread id seen again in the same image */
	tl = key_len(t);
	if (!tl || t[tl])
		return 0;
	memcpy(key, k, kl);
	key[kl] = 0;
	st = realloc(s->streams, (s->nstreams + 1) * sizeof(*st));
	if (!st)
		return -ENOMEM;
	s->streams = st;
	st = &s->streams[s->nstreams];
	memset(st, 0, sizeof(*st));
	st->sess = s;
	/* an index for now: proc_get may move the array */
	if (!proc_get(s, key))
		return -ENOMEM;
	st->proc_idx = (size_t)(proc_get(s, key) - s->procs);
	st->pid = (pid_t)strtoul(k, NULL, 10);
	st->tid = (pid_t)strtoul(t, NULL, 10);
	if (t[strspn(t, "0123456789")] == '.')
		st->gen = (unsigned)strtoul(t + strspn(t, "0123456789") + 1, NULL, 10);
	if (asprintf(&st->path, "%s/%s", ctfdir, fname) < 0) {
		st->path = NULL;
		return -ENOMEM;
	}
	st->name = strdup(fname);
	if (!st->name) {
		free(st->path);
		return -ENOMEM;
	}
	s->nstreams++;
	fd = open(st->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		tr_set_err(st->pre_err, "%s: cannot read: %s", st->path,
			   fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return 0;
	}
	st->size = (uint64_t)sb.st_size;
	if (st->size) {
		void *m = mmap(NULL, (size_t)st->size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED)
			tr_set_err(st->pre_err, "%s: cannot map: %s", st->path, strerror(errno));
		else
			st->data = m;
	}
	close(fd);
	return 0;
}

int tr_open(struct tr_session *s, const char *dir)
{
	struct dirent *de;
	struct stat sb;
	char *ctfdir = NULL;
	DIR *d;
	int err;

	memset(s, 0, sizeof(*s));
	s->dir = strdup(dir);
	if (!s->dir) {
		tr_set_err(s->err, "out of memory");
		return -ENOMEM;
	}
	if (stat(dir, &sb) < 0) {
		if (errno == ENOENT)
			tr_set_err(s->err,
				   "there is no trace in '%s': it does not exist (record one "
				   "with 'dynftrace record')",
				   dir);
		else
			tr_set_err(s->err, "cannot open the trace in '%s': %s", dir,
				   strerror(errno));
		return -ENOENT;
	}
	if (!S_ISDIR(sb.st_mode)) {
		tr_set_err(s->err, "'%s' is not a dynftrace session: it is not a directory", dir);
		return -ENOENT;
	}
	err = read_info(s);
	if (err)
		return err;
	err = read_metadata(s);
	if (err)
		return err;

	/* sites-KEY.txt and maps-KEY.txt */
	d = opendir(dir);
	if (!d) {
		tr_set_err(s->err, "cannot list '%s': %s", dir, strerror(errno));
		return -EINVAL;
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name, *k;
		int sites = !strncmp(n, "sites-", 6), maps = !strncmp(n, "maps-", 5);
		int fork = !strncmp(n, "fork-", 5);
		struct tr_proc *p;
		char key[32];
		size_t kl;

		if (!sites && !maps && !fork)
			continue;
		k = n + (sites ? 6 : 5);
		kl = key_len(k);
		if (!kl || strcmp(k + kl, ".txt"))
			continue;
		memcpy(key, k, kl);
		key[kl] = 0;
		p = proc_get(s, key);
		if (!p) {
			closedir(d);
			tr_set_err(s->err, "out of memory");
			return -ENOMEM;
		}
		err = sites ? read_sites(s, p, n) : maps ? read_maps(s, p, n) : read_fork(s, p, n);
		if (err) {
			closedir(d);
			return err;
		}
	}
	closedir(d);
	for (size_t i = 0; i < s->nprocs; i++) {
		err = check_fork(s, &s->procs[i]);
		if (err)
			return err;
	}

	/* ctf/stream-KEY-TID */
	if (asprintf(&ctfdir, "%s/ctf", dir) < 0) {
		tr_set_err(s->err, "out of memory");
		return -ENOMEM;
	}
	d = opendir(ctfdir);
	if (!d && errno != ENOENT) {
		tr_set_err(s->err, "cannot list '%s': %s", ctfdir, strerror(errno));
		free(ctfdir);
		return -EINVAL;
	}
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "stream-", 7))
			continue;
		err = add_stream(s, ctfdir, de->d_name);
		if (err) {
			closedir(d);
			free(ctfdir);
			tr_set_err(s->err, "out of memory");
			return err;
		}
	}
	if (d)
		closedir(d);
	free(ctfdir);
	for (size_t i = 0; i < s->nstreams; i++)
		s->streams[i].proc = &s->procs[s->streams[i].proc_idx];
	if (s->nstreams && !s->has_metadata) {
		tr_set_err(s->err, "%s/ctf/metadata is missing: the trace is damaged", dir);
		return -EINVAL;
	}
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];

		if (!st->pre_err[0] && !st->proc->has_sites)
			tr_set_err(st->pre_err,
				   "%s: %s/sites-%s.txt is missing, so its functions "
				   "cannot be named",
				   st->path, dir, st->proc->key);
	}
	if (s->nstreams)
		qsort(s->streams, s->nstreams, sizeof(*s->streams), cmp_stream);
	return 0;
}

void tr_close(struct tr_session *s)
{
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];

		if (st->data)
			munmap((void *)st->data, (size_t)st->size);
		free(st->xev);
		free(st->path);
		free(st->name);
	}
	free(s->streams);
	for (size_t i = 0; i < s->nprocs; i++) {
		struct tr_proc *p = &s->procs[i];

		for (size_t j = 0; j < p->nmaps; j++) {
			if (p->maps[j].img) {
				elf_free(p->maps[j].img);
				free(p->maps[j].img);
			}
		}
		free(p->maps);
		free(p->tp_text);
		free(p->tp_lines);
		free(p->inherit);
		free(p->fork_path);
		for (size_t j = 0; j < p->nsites; j++)
			free(p->sites[j].dname);
		free(p->sites);
		free(p->by_addr);
		free(p->text);
		free(p->maps_text);
	}
	free(s->procs);
	free(s->info.command);
	free(s->info.tracer);
	free(s->info.filter);
	free(s->info.trigger);
	free(s->info.argument);
	tr_enums_free(s);
	free(s->info.notrace);
	free(s->info.pids);
	free(s->info.lost);
	free(s->info.unflushed);
	free(s->dir);
	memset(s, 0, sizeof(*s));
}

/* ---- sites ------------------------------------------------------------ */

const struct tr_site *tr_site(const struct tr_proc *p, uint32_t id)
{
	size_t lo = 0, hi = p->nsites;

	if (p->dense)
		return id < p->nsites ? &p->sites[id] : NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->sites[mid].id == id)
			return &p->sites[mid];
		if (p->sites[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int tr_demangle = 1;

const char *tr_func_name(const struct tr_proc *p, uint32_t id)
{
	struct tr_site *s = (struct tr_site *)tr_site(p, id);

	if (!s)
		return "?";
	if (!s->dname_done) {
		s->dname = tr_demangle ? cli_demangle(s->name, tr_demangle) : NULL;
		s->dname_done = 1;
	}
	return s->dname ? s->dname : s->name;
}

int tr_func_match(const struct tr_proc *p, uint32_t id, const struct cli_globs *globs)
{
	const struct tr_site *s = tr_site(p, id);

	if (!s)
		return 0;
	/* the symbol and its simple and full demangled names (pattern.c) */
	return cli_glob_match(globs, s->name);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The function entry of IMG (elf_load_entries: symbols, else .eh_frame's
 * FDEs) whose known extent holds link-time address A: its name, *LEN bytes
 * of it (an FDE's sub_ADDR without the "@object" that follows: callers
 * name the object in brackets), and A's offset into it. NULL when none
 * does, or the entries cannot be read (the name is then the address). */
static const char *entry_name(struct elf_image *img, uint64_t a, int *len, uint64_t *off)
{
	size_t lo = 0, hi;

	if (elf_load_entries(img))
		return NULL;
	hi = img->nentries;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->entries[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct elf_entry *e = &img->entries[lo - 1];
	if (a - e->addr >= e->size)
		return NULL;
	const char *name = elf_entry_name(img, e);
	const char *at = e->src == ENTRY_FDE ? strrchr(name, '@') : NULL;
	*len = at ? (int)(at - name) : (int)strlen(name);
	*off = a - e->addr;
	return name;
}

const char *tr_symbolize(struct tr_proc *p, uint64_t ip, char *buf, size_t size)
{
	size_t lo = 0, hi = p->nsites;

	/* A traced function: the last site at or below IP, if IP is inside. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->by_addr[mid]->addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* (size 0: the runtime found no symbol for it; the object's entries
	 * below may still know its extent) */
	if (lo) {
		const struct tr_site *s = p->by_addr[lo - 1];

		if (ip - s->addr < s->size) {
			snprintf(buf, size, "%s", s->name);
			return buf;
		}
	}
	/* Another function of a mapped object, from its symbol table. */
	for (size_t i = 0; i < p->nmaps; i++) {
		struct tr_map *m = &p->maps[i];
		int32_t f;

		if (ip < m->start || ip >= m->end)
			continue;
		if (!m->img && !m->img_failed) {
			m->img = calloc(1, sizeof(*m->img));
			if (!m->img || elf_load(m->img, m->path, 0, 0)) {
				if (m->img)
					elf_free(m->img);
				free(m->img);
				m->img = NULL;
				m->img_failed = 1;
			}
		}
		const char *name = NULL;
		int namelen = 0;
		uint64_t off = 0;

		if (m->img && (f = elf_func_lookup(m->img, ip - m->bias)) >= 0) {
			name = elf_func_name(m->img, f);
			namelen = (int)strlen(name);
			off = ip - m->bias - m->img->funcs[f].addr;
		} else if (m->img) {
			name = entry_name(m->img, ip - m->bias, &namelen, &off);
		}
		if (name && off)
			snprintf(buf, size, "%.*s+0x%" PRIx64 " [%s]", namelen, name, off,
				 base_name(m->path));
		else if (name)
			snprintf(buf, size, "%.*s [%s]", namelen, name, base_name(m->path));
		else
			snprintf(buf, size, "0x%" PRIx64 " [%s]", ip, base_name(m->path));
		return buf;
	}
	snprintf(buf, size, "0x%" PRIx64, ip);
	return buf;
}

const char *tr_printable(const char *s, char *buf, size_t size)
{
	size_t i;

	if (!size)
		return buf;
	for (i = 0; s[i] && i + 1 < size; i++)
		buf[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
	buf[i] = 0;
	return buf;
}

/* ---- losses the info file tells ----------------------------------------- */

/* One line per process whose buffers died with it (a real loss) or that a
 * signal killed; those that merely ended without flushing (_exit, the
 * usual end of a forked child) and were recovered whole share one line
 * when there are several: a pre-forking server makes thousands. */
int tr_print_unflushed(const struct tr_session *s, FILE *out, const char *prefix)
{
	int lines = 0;
	size_t quiet = 0, n = 0;
	uint64_t quiet_events = 0;
	char num[40], how[96], pids[96] = "";

	for (size_t i = 0; i < s->info.nunflushed; i++) {
		const struct tr_unflushed *u = &s->info.unflushed[i];
		if (u->recovered && !u->sig) {
			if (quiet < 4) /* the first few named */
				n += (size_t)snprintf(pids + n, sizeof(pids) - n, "%s%d",
						      quiet ? ", " : "", (int)u->pid);
			quiet++;
			quiet_events += u->events;
		}
	}
	for (size_t i = 0; i < s->info.nunflushed; i++) {
		const struct tr_unflushed *u = &s->info.unflushed[i];

		if (u->recovered && !u->sig && quiet > 1)
			continue;
		if (u->sig)
			snprintf(how, sizeof(how), "was killed by signal %d (%s)", u->sig,
				 strsignal(u->sig));
		else
			snprintf(how, sizeof(how), "ended (killed, or _exit)");
		if (u->recovered) {
			fprintf(out,
				"%sprocess %d %s before it could flush: dynftrace record recovered "
				"its buffers from shared memory (%s events; an event being written "
				"then is counted lost)\n",
				prefix, (int)u->pid, how,
				cli_thousands(u->events, num, sizeof(num)));
		} else {
			fprintf(out,
				"%sprocess %d %s before it could flush: events buffered in memory "
				"were lost (up to %s KiB per thread, not counted)\n",
				prefix, (int)u->pid, how,
				cli_thousands(s->info.buffer_kb ? s->info.buffer_kb : 4096, num,
					      sizeof(num)));
		}
		lines++;
	}
	if (quiet > 1) {
		fprintf(out,
			"%s%zu processes (%s%s) ended (killed, or _exit) before they could flush: "
			"dynftrace record recovered their buffers from shared memory (%s events; "
			"an event being written then is counted lost)\n",
			prefix, quiet, pids, quiet > 4 ? ", ..." : "",
			cli_thousands(quiet_events, num, sizeof(num)));
		lines++;
	}
	return lines;
}

/* ---- tracepoint descriptions -------------------------------------------------- */

/* Read DIR/tracepoints-KEY.txt into P (once; a missing file leaves none). */
static void tp_load(struct tr_session *s, struct tr_proc *p)
{
	char *path = NULL, *line, *save;
	FILE *f;
	size_t cap = 0, len = 0;

	p->tp_loaded = 1;
	if (asprintf(&path, "%s/tracepoints-%s.txt", s->dir, p->key) < 0)
		return;
	f = fopen(path, "re");
	free(path);
	if (!f)
		return;
	if (getdelim(&p->tp_text, &cap, 0, f) < 0) {
		fclose(f);
		return;
	}
	fclose(f);
	for (line = strtok_r(p->tp_text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end;
		unsigned long idx = strtoul(line, &end, 10);

		if (end == line || *end != ' ' || idx > 65535)
			continue;
		if (idx >= len) {
			size_t n = idx + 1;
			char **v = realloc(p->tp_lines, n * sizeof(*v));

			if (!v)
				return;
			memset(v + len, 0, (n - len) * sizeof(*v));
			p->tp_lines = v;
			len = n;
		}
		p->tp_lines[idx] = end + 1;
	}
	p->ntp = len;
}

const char *tr_tracepoint_desc(struct tr_session *s, struct tr_proc *p, uint32_t index)
{
	if (!p->tp_loaded)
		tp_load(s, p);
	return index < p->ntp ? p->tp_lines[index] : NULL;
}
