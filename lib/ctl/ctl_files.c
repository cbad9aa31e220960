/* SPDX-License-Identifier: MIT */
/*
 * ctl_files.c - the files of the control namespace, the kernel's tracefs
 * names (docs/CONTROL.md): one table of read and write handlers, which the
 * server (ctl.c) looks names up in. Control thread only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dynftrace/dynftrace.h"
#include "ctl.h"
#include "ctl_files.h"
#include "ring.h"
#include "trace.h"

/* White space trimmed in place; *LEN updated. */
char *trim(char *v, size_t *len)
{
	size_t n = *len;
	while (n && (v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
		n--;
	v[n] = 0;
	while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r') {
		v++;
		n--;
	}
	*len = n;
	return v;
}

/* The program (control thread: set when the thread starts), to name
 * libraries in listings. */
HIDDEN char ctl_exe[PATH_MAX];

/* A decimal number <= MAX. */

int parse_num(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

#define WHY(...) snprintf(why, whylen, __VA_ARGS__)

static int rd_available_tracers(const struct ctl_file *f UNUSED, const char *arg UNUSED,
				struct sbuf *out, char *why UNUSED, size_t whylen UNUSED)
{
	sb_printf(out, "%s\n", trace_available_tracers());
	return 0;
}

static int rd_current_tracer(const struct ctl_file *f UNUSED, const char *arg UNUSED,
			     struct sbuf *out, char *why UNUSED, size_t whylen UNUSED)
{
	sb_printf(out, "%s\n", trace_get_tracer());
	return 0;
}

static int wr_current_tracer(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val,
			     size_t len, int append UNUSED, char *why, size_t whylen)
{
	val = trim(val, &len);
	if (!len) {
		WHY("current_tracer needs a tracer name (available: %s)",
		    trace_available_tracers());
		return -EINVAL;
	}
	return trace_set_tracer(val, why, whylen);
}

static int rd_tracing_on(const struct ctl_file *f UNUSED, const char *arg UNUSED, struct sbuf *out,
			 char *why UNUSED, size_t whylen UNUSED)
{
	sb_printf(out, "%d\n", trace_get_tracing_on());
	return 0;
}

static int wr_tracing_on(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val,
			 size_t len, int append UNUSED, char *why, size_t whylen)
{
	uint64_t v;
	val = trim(val, &len);
	if (parse_num(val, UINT32_MAX, &v)) {
		WHY("bad value '%.64s' for tracing_on: expected 0 or 1", val);
		return -EINVAL;
	}
	return trace_set_tracing_on(v != 0, why, whylen);
}

struct site_list_ctx {
	struct sbuf *out;
	int enabled_only;
};

static int site_list_cb(unsigned long ip, const char *func, const char *object, int enabled,
			int refcount, void *data)
{
	struct site_list_ctx *x = data;
	if (x->enabled_only && !enabled && !refcount)
		return 0;
	char hex[32];
	if (!func) {
		snprintf(hex, sizeof(hex), "0x%lx", ip);
		func = hex;
	}
	const char *base = strrchr(object, '/');
	int lib = ctl_exe[0] && strcmp(object, ctl_exe);
	if (x->enabled_only)
		sb_printf(x->out, "%s (%d)%s\n", func, refcount, enabled ? "" : " (not enabled)");
	else if (lib)
		sb_printf(x->out, "%s [%s]\n", func, base ? base + 1 : object);
	else
		sb_printf(x->out, "%s\n", func);
	return x->out->oom;
}

static int rd_avail_funcs(const struct ctl_file *f UNUSED, const char *arg UNUSED, struct sbuf *out,
			  char *why, size_t whylen)
{
	struct site_list_ctx x = {out, 0};
	int err = dynftrace_for_each_site(site_list_cb, &x);
	if (err < 0)
		WHY("cannot list the sites: %s", strerror(-err));
	return err < 0 ? err : 0;
}

static int rd_enabled(const struct ctl_file *f UNUSED, const char *arg UNUSED, struct sbuf *out,
		      char *why, size_t whylen)
{
	struct site_list_ctx x = {out, 1};
	int err = dynftrace_for_each_site(site_list_cb, &x);
	if (err < 0)
		WHY("cannot list the sites: %s", strerror(-err));
	return err < 0 ? err : 0;
}

static int rd_list(const struct ctl_file *f, const char *arg UNUSED, struct sbuf *out,
		   char *why UNUSED, size_t whylen UNUSED)
{
	trace_read_list((enum trace_list)f->list, out);
	return 0;
}

static int wr_list(const struct ctl_file *f, const char *arg UNUSED, char *val, size_t len,
		   int append, char *why, size_t whylen)
{
	val = trim(val, &len);
	return trace_set_list((enum trace_list)f->list, val, append, why, whylen);
}

static int rd_max_depth(const struct ctl_file *f UNUSED, const char *arg UNUSED, struct sbuf *out,
			char *why UNUSED, size_t whylen UNUSED)
{
	sb_printf(out, "%u\n", trace_get_max_depth());
	return 0;
}

static int wr_max_depth(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val,
			size_t len, int append UNUSED, char *why, size_t whylen)
{
	uint64_t v;
	val = trim(val, &len);
	if (parse_num(val, 65535, &v)) {
		WHY("bad value '%.64s' for max_graph_depth: expected a number from 0 (no limit) "
		    "to 65535",
		    val);
		return -EINVAL;
	}
	return trace_set_max_depth((unsigned)v);
}

static int rd_args(const struct ctl_file *f UNUSED, const char *arg UNUSED, struct sbuf *out,
		   char *why UNUSED, size_t whylen UNUSED)
{
	trace_read_args(out);
	return 0;
}

/* set_ftrace_args: "FUNC@arg1/x,retval" lines (or ';'-separated), as
 * record's -A and -R take them; the text replaces the current ones ("":
 * none), appending adds to them. */
static int wr_args(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val, size_t len,
		   int append, char *why, size_t whylen)
{
	val = trim(val, &len);
	if (!append)
		return trace_set_args(val, why, whylen);
	struct sbuf cur = {0};
	trace_read_args(&cur);
	sb_printf(&cur, "%s", val);
	int err = cur.oom || !cur.p ? -ENOMEM : trace_set_args(cur.p, why, whylen);
	sb_free(&cur);
	return err;
}

static int rd_thresh(const struct ctl_file *f UNUSED, const char *arg UNUSED, struct sbuf *out,
		     char *why UNUSED, size_t whylen UNUSED)
{
	sb_printf(out, "%llu\n", (unsigned long long)(trace_get_thresh() / 1000));
	return 0;
}

static int wr_thresh(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val, size_t len,
		     int append UNUSED, char *why, size_t whylen)
{
	uint64_t v;
	val = trim(val, &len);
	if (parse_num(val, 3600000000ull, &v)) {
		WHY("bad value '%.64s' for tracing_thresh: expected microseconds (0: off)", val);
		return -EINVAL;
	}
	return trace_set_thresh(v * 1000);
}

static int rd_buffer_kb(const struct ctl_file *f UNUSED, const char *arg UNUSED, struct sbuf *out,
			char *why UNUSED, size_t whylen UNUSED)
{
	sb_printf(out, "%zu\n", ring_size_kb());
	return 0;
}

static int wr_buffer_kb(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val,
			size_t len, int append UNUSED, char *why, size_t whylen)
{
	uint64_t v;
	val = trim(val, &len);
	int err = parse_num(val, UINT32_MAX, &v) ? -EINVAL : ring_set_size_kb((size_t)v);
	if (!err)
		ring_clear_all(); /* as the kernel's: a new size empties the buffers */
	if (err == -EBUSY)
		WHY("buffer_size_kb cannot change while recording into a session (record -b "
		    "sets it)");
	else if (err)
		WHY("bad value '%.64s' for buffer_size_kb: expected KiB per thread, %d to %d", val,
		    RING_KB_MIN, RING_KB_MAX);
	return err;
}

static int wr_trace(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val UNUSED,
		    size_t len UNUSED, int append, char *why UNUSED, size_t whylen UNUSED)
{
	if (!append) /* `echo > trace` (O_TRUNC): clear */
		ring_clear_all();
	return 0;
}

static int wr_marker(const struct ctl_file *f UNUSED, const char *arg UNUSED, char *val, size_t len,
		     int append UNUSED, char *why UNUSED, size_t whylen UNUSED)
{
	if (len && val[len - 1] == '\n') /* echo's newline */
		len--;
	for (size_t i = 0; i < len; i++)
		if (val[i] == '\n' || val[i] == '\r' || val[i] == '\t')
			val[i] = ' ';
	return trace_write_marker(val, len);
}

static int rd_trace_stat_dir(const struct ctl_file *f UNUSED, const char *arg UNUSED,
			     struct sbuf *out, char *why UNUSED, size_t whylen UNUSED)
{
	sb_printf(out, "function\n");
	return 0;
}

static int rd_trace_stat(const struct ctl_file *f UNUSED, const char *arg, struct sbuf *out,
			 char *why, size_t whylen)
{
	if (strcmp(arg, "function")) {
		WHY("no such file 'trace_stat/%.64s'", arg);
		return -ENOENT;
	}
	trace_read_profile(out);
	return 0;
}

/* per_thread: the threads that have a ring (those of exited threads too,
 * while their ring is kept). */
struct tid_set {
	pid_t v[4096];
	size_t n;
};

static void tid_cb(const struct ring_thread_stats *st, void *data)
{
	struct tid_set *s = data;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == st->tid)
			return;
	if (s->n < ARRAY_SIZE(s->v))
		s->v[s->n++] = st->tid;
}

static int tid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

struct stats_ctx {
	pid_t tid;
	int found;
	struct ring_thread_stats st;
};

/* The thread's newest ring (an older one may remain, buffer_size_kb). */
static void stats_cb(const struct ring_thread_stats *st, void *data)
{
	struct stats_ctx *x = data;
	if (st->tid == x->tid && !x->found) {
		x->st = *st;
		x->found = 1;
	}
}

static int rd_per_thread(const struct ctl_file *f UNUSED, const char *arg, struct sbuf *out,
			 char *why, size_t whylen)
{
	if (!*arg) {
		struct tid_set *s = calloc(1, sizeof(*s));
		if (!s) {
			WHY("out of memory");
			return -ENOMEM;
		}
		ring_for_each_thread(tid_cb, s);
		qsort(s->v, s->n, sizeof(s->v[0]), tid_cmp);
		for (size_t i = 0; i < s->n; i++)
			sb_printf(out, "%d/\n", (int)s->v[i]);
		free(s);
		return 0;
	}
	char *end;
	long tid = strtol(arg, &end, 10);
	int dir = !*end;
	if (tid <= 0 || (*end && strcmp(end, "/stats"))) {
		WHY("no such file 'per_thread/%.64s'", arg);
		return -ENOENT;
	}
	struct stats_ctx x = {.tid = (pid_t)tid};
	ring_for_each_thread(stats_cb, &x);
	if (!x.found) {
		WHY("no thread %ld has trace buffers", tid);
		return -ENOENT;
	}
	if (dir) {
		sb_printf(out, "stats\n");
		return 0;
	}
	sb_printf(out, "entries: %llu\noverrun: %llu\nbytes: %llu\nread events: %llu\n",
		  (unsigned long long)x.st.entries, (unsigned long long)x.st.overrun,
		  (unsigned long long)x.st.in_bytes, (unsigned long long)x.st.read);
	if (trace_recording())
		sb_printf(out,
			  "recorded entries: %llu\nrecorded lost: %llu\nrecorded bytes: %llu\n",
			  (unsigned long long)x.st.events, (unsigned long long)x.st.lost,
			  (unsigned long long)x.st.bytes);
	return 0;
}

/* ---- tracepoints: available_events, events/ (lib/ctl/ctl_events.c) ---------- */
static int rd_avail_events(const struct ctl_file *f UNUSED, const char *arg UNUSED,
			   struct sbuf *out, char *why, size_t whylen)
{
	return ctl_events_available(out, why, whylen);
}

static int rd_events(const struct ctl_file *f UNUSED, const char *arg, struct sbuf *out, char *why,
		     size_t whylen)
{
	return ctl_events_read(arg, out, why, whylen);
}

static int wr_events(const struct ctl_file *f UNUSED, const char *arg, char *val, size_t len,
		     int append UNUSED, char *why, size_t whylen)
{
	return ctl_events_write(arg, trim(val, &len), why, whylen);
}
/* ---- end of the tracepoint files ------------------------------------------ */

static const struct ctl_file files[] = {
    {"available_tracers", rd_available_tracers, NULL, 0, 0},
    {"current_tracer", rd_current_tracer, wr_current_tracer, 0, 0},
    {"tracing_on", rd_tracing_on, wr_tracing_on, 0, 0},
    {"available_filter_functions", rd_avail_funcs, NULL, 0, 0},
    {"set_ftrace_filter", rd_list, wr_list, 0, TL_FILTER},
    {"set_ftrace_notrace", rd_list, wr_list, 0, TL_NOTRACE},
    {"set_graph_function", rd_list, wr_list, 0, TL_GRAPH_FUNCTION},
    {"set_graph_notrace", rd_list, wr_list, 0, TL_GRAPH_NOTRACE},
    {"max_graph_depth", rd_max_depth, wr_max_depth, 0, 0},
    {"tracing_thresh", rd_thresh, wr_thresh, 0, 0},
    {"set_ftrace_args", rd_args, wr_args, 0, 0},
    {"buffer_size_kb", rd_buffer_kb, wr_buffer_kb, 0, 0},
    {"trace", NULL, wr_trace, F_TRACE, 0},
    {"trace_pipe", NULL, NULL, F_PIPE, 0},
    {"trace_marker", NULL, wr_marker, 0, 0},
    {"enabled_functions", rd_enabled, NULL, 0, 0},
    {"trace_stat", rd_trace_stat_dir, NULL, F_DIR, 0},
    {"trace_stat", rd_trace_stat, NULL, F_PREFIX, 0},
    {"per_thread", rd_per_thread, NULL, F_DIR | F_PREFIX, 0},
    {"available_events", rd_avail_events, NULL, 0, 0},	   /* ctl_events.c */
    {"events", rd_events, wr_events, F_DIR | F_PREFIX, 0}, /* ctl_events.c */
};

/* Find FILE; *ARG gets what follows "NAME/" for F_PREFIX entries. */
const struct ctl_file *file_find(const char *name, const char **arg)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		const struct ctl_file *f = &files[i];
		size_t k = strlen(f->name);
		if (!strcmp(name, f->name) && (!(f->flags & F_PREFIX) || (f->flags & F_DIR))) {
			*arg = "";
			return f;
		}
		if ((f->flags & F_PREFIX) && n > k + 1 && !strncmp(name, f->name, k) &&
		    name[k] == '/') {
			*arg = name + k + 1;
			return f;
		}
	}
	return NULL;
}

void list_root(struct sbuf *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		if ((files[i].flags & F_PREFIX) && !(files[i].flags & F_DIR))
			continue;
		sb_printf(out, "%s%s\n", files[i].name, files[i].flags & F_DIR ? "/" : "");
	}
}

/* File names: letters, digits, _ - . and /; no "..". */
int name_ok(const char *s)
{
	if (strstr(s, ".."))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.' || *s == '/'))
			return 0;
	return 1;
}
