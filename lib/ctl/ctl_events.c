/* SPDX-License-Identifier: MIT */
/*
 * ctl_events.c - the tracepoint files of the control namespace,
 * served by lib/ctl/ctl.c:
 *
 *   available_events       every typed tracepoint of the loaded objects, one
 *                          name per line (untyped ones cannot be recorded)
 *   events/                "enable" and one NAME/ per tracepoint
 *   events/enable          read: 1 all enabled, 0 none, X some; write 0/1: all
 *   events/NAME/enable     read 0/1; write 1 attaches the recorder (hits go
 *                          to the threads' rings: `trace`, and the session
 *                          under `dynftrace record`), 0 detaches it
 *
 * The work is tp_record.c's (tp_record_set/_enabled): all of it runs on the
 * control thread, which owns no state here; tracepoints are found by name
 * (the first object that has one, as dynftrace_tracepoint_find does).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "tp_record.h"
#include <dynftrace/tracepoint.h>

struct tp_vec {
	struct dynftrace_tracepoint **v;
	size_t n, cap;
};

static int vec_cb(struct dynftrace_tracepoint *tp, void *data)
{
	struct tp_vec *c = data;
	if (!tp->raw)
		return 0;
	for (size_t i = 0; i < c->n; i++) /* one name, one entry */
		if (!strcmp(c->v[i]->name, tp->name))
			return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 32;
		void *v = realloc(c->v, cap * sizeof(*c->v));
		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = tp;
	return 0;
}

/* The typed tracepoints; -ENOMEM. */
static int tp_all(struct tp_vec *c)
{
	memset(c, 0, sizeof(*c));
	int err = dynftrace_tracepoint_for_each(vec_cb, c);
	if (err) {
		free(c->v);
		c->v = NULL;
	}
	return err;
}

static int events_available(struct sbuf *out, char *why, size_t whylen);

HIDDEN int ctl_events_available(struct sbuf *out, char *why, size_t whylen)
{
	pthread_rwlock_rdlock(&dft_unload_lock); /* see ctl_events_read() */
	int err = events_available(out, why, whylen);
	pthread_rwlock_unlock(&dft_unload_lock);
	return err;
}

static int events_available(struct sbuf *out, char *why, size_t whylen)
{
	struct tp_vec c;
	if (tp_all(&c)) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c.n; i++)
		sb_printf(out, "%s\n", c.v[i]->name);
	free(c.v);
	return 0;
}

/* "NAME/enable" -> the tracepoint; "enable" -> *all = 1. */
static int parse(const char *arg, struct dynftrace_tracepoint **tp, int *all, int *dir, char *why,
		 size_t whylen)
{
	char name[256];
	const char *slash = strchr(arg, '/');
	*tp = NULL;
	*all = !strcmp(arg, "enable");
	*dir = 0;
	if (*all)
		return 0;
	size_t n = slash ? (size_t)(slash - arg) : strlen(arg);
	if (n >= sizeof(name) || (slash && strcmp(slash + 1, "enable") && slash[1])) {
		snprintf(why, whylen, "no such file 'events/%.64s'", arg);
		return -ENOENT;
	}
	memcpy(name, arg, n);
	name[n] = 0;
	*dir = !slash || !slash[1];
	*tp = dynftrace_tracepoint_find(name);
	if (!*tp || !(*tp)->raw) {
		snprintf(why, whylen, "no such event '%.64s' (see available_events)", name);
		return -ENOENT;
	}
	return 0;
}

static int events_read(const char *arg, struct sbuf *out, char *why, size_t whylen);
static int events_write(const char *arg, const char *val, char *why, size_t whylen);

/* Tracepoints live in their objects: hold the unload barrier (interpose.c)
 * from the lookup to the last use, so a dlclose cannot unmap one meanwhile. */
HIDDEN int ctl_events_read(const char *arg, struct sbuf *out, char *why, size_t whylen)
{
	pthread_rwlock_rdlock(&dft_unload_lock);
	int err = events_read(arg, out, why, whylen);
	pthread_rwlock_unlock(&dft_unload_lock);
	return err;
}

HIDDEN int ctl_events_write(const char *arg, const char *val, char *why, size_t whylen)
{
	pthread_rwlock_rdlock(&dft_unload_lock);
	int err = events_write(arg, val, why, whylen);
	pthread_rwlock_unlock(&dft_unload_lock);
	return err;
}

static int events_read(const char *arg, struct sbuf *out, char *why, size_t whylen)
{
	struct dynftrace_tracepoint *tp;
	int all, dir;
	if (!*arg) { /* the directory */
		struct tp_vec c;
		if (tp_all(&c)) {
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		sb_printf(out, "enable\n");
		for (size_t i = 0; i < c.n; i++)
			sb_printf(out, "%s/\n", c.v[i]->name);
		free(c.v);
		return 0;
	}
	int err = parse(arg, &tp, &all, &dir, why, whylen);
	if (err)
		return err;
	if (dir) {
		sb_printf(out, "enable\n");
		return 0;
	}
	if (!all) {
		sb_printf(out, "%d\n", tp_record_enabled(tp));
		return 0;
	}
	struct tp_vec c;
	if (tp_all(&c)) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	size_t on = 0;
	for (size_t i = 0; i < c.n; i++)
		on += (size_t)tp_record_enabled(c.v[i]);
	sb_printf(out, "%s\n", on == 0 ? "0" : on == c.n ? "1" : "X");
	free(c.v);
	return 0;
}

static int events_write(const char *arg, const char *val, char *why, size_t whylen)
{
	struct dynftrace_tracepoint *tp;
	int all, dir;
	int err = parse(arg, &tp, &all, &dir, why, whylen);
	if (err)
		return err;
	if (dir) {
		snprintf(why, whylen, "events/%.64s is a directory", arg);
		return -EISDIR;
	}
	if (strcmp(val, "0") && strcmp(val, "1")) {
		snprintf(why, whylen, "write 0 or 1 to events/%.64s", arg);
		return -EINVAL;
	}
	int on = val[0] == '1';
	if (!all) {
		err = tp_record_set(tp, on);
		if (err)
			snprintf(why, whylen, "cannot %s %s: %s", on ? "enable" : "disable",
				 tp->name, strerror(-err));
		return err;
	}
	struct tp_vec c;
	if (tp_all(&c)) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < c.n && !err; i++) {
		err = tp_record_set(c.v[i], on);
		if (err)
			snprintf(why, whylen, "cannot %s %s: %s", on ? "enable" : "disable",
				 c.v[i]->name, strerror(-err));
	}
	free(c.v);
	return err;
}
