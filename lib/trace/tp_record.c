/* SPDX-License-Identifier: MIT */
/*
 * tp_record.c - tracepoints in recorded sessions.
 *
 * `dynftrace record -e GLOB` (DYNFTRACE_EVENTS=glob,glob) enables every
 * typed tracepoint whose name matches, in the objects loaded at start and
 * in those loaded later (tracepoint.c calls tp_record_table_added, which
 * tp_record_init hands it, from the object's constructor). Each enabled tracepoint gets an index
 *(0, 1, ... per process image) and a line in DIR/tracepoints-IMG.txt:
 *
 *	INDEX NAME KIND:SIZE:FIELD KIND:SIZE:FIELD ...
 *
 * KIND is i (signed), u (unsigned), p (pointer) or s (string). A hit is
 * one `tracepoint` event (id 9): uint16 index, uint16 len, then len bytes:
 * the fields in order, integers and pointers as SIZE little-endian bytes,
 * strings NUL-terminated (a NULL pointer is written as an empty string
 * preceded by byte 0xff, i.e. "\xff\0"). An encoding larger than
 * TPR_PAYLOAD_MAX (header included) is not written and counted lost
 * (docs/FORMAT.md).
 *
 * The callback (rec_hit) runs in any thread, also in signal handlers: it
 * uses the stack and ring_event_begin/end only (async-signal-safe). The
 * hits go to the thread's ring, where the session (under `record`) and live
 * control's `trace` (tp_record_lookup names them) both find them.
 *
 * | data                    | protected by                                 |
 * |-------------------------|----------------------------------------------|
 * | globs, nglobs, active   | tpr_lock (set once by tp_record_init)         |
 * | recs[], nrecs           | tpr_lock; a slot is never reused or freed     |
 * | recs[i] contents        | written once before its callback is           |
 * |                         | registered (published by tp_lock), then read  |
 * |                         | only: callbacks get &recs[i] as their data    |
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jump_internal.h"
#include "ring.h"
#include "tp_record.h"
#include "trace_int.h"
#include <dynftrace/tracepoint.h>

#define TPR_MAX		4096 /* recorded tracepoints per image */
#define TPR_PAYLOAD_MAX 256  /* a hit's encoding, header included */

/* One recorded tracepoint; its address is the callback's data. */
struct tpr {
	struct dynftrace_tracepoint *tp;
	const struct dynftrace_tp_field *fields; /* the description, constant */
	unsigned nfields;
	uint16_t idx;
	char name[128]; /* tp->name (the object may go away) */
	/* A copy of the fields' names and kinds, for readers of the hits that
	 * come after the object went (tp_record_lookup); NULL: no memory. */
	struct dynftrace_tp_field *desc;
};

static pthread_mutex_t tpr_lock = PTHREAD_MUTEX_INITIALIZER;
static char *globs_text; /* tpr_lock: the copy strtok'd into globs */
static char **globs;	 /* tpr_lock */
static size_t nglobs;	 /* tpr_lock */
static int active;	 /* tpr_lock: recording with events */
static struct tpr *recs; /* tpr_lock */
static size_t nrecs;	 /* tpr_lock */

/* Encode REC as docs/FORMAT.md says into OUT (CAP bytes). Returns the
 * length, or -E2BIG when it does not fit. Async-signal-safe. */
static int encode(const struct dynftrace_tp_field *f, unsigned n, const uint8_t *rec,
		  unsigned rec_size, uint8_t *out, size_t cap)
{
	size_t at = 0;
	for (unsigned i = 0; i < n; i++) {
		if (f[i].offset + f[i].size > rec_size)
			return -EINVAL;
		if (f[i].kind == DYNFTRACE_FIELD_STRING) {
			const char *s;
			memcpy(&s, rec + f[i].offset, sizeof(s));
			if (!s) {
				if (at + 2 > cap)
					return -E2BIG;
				out[at++] = 0xff;
				out[at++] = 0;
				continue;
			}
			size_t l = strnlen(s, cap - at + 1);
			if (at + l + 1 > cap)
				return -E2BIG;
			memcpy(out + at, s, l);
			at += l;
			out[at++] = 0;
		} else {
			if (at + f[i].size > cap)
				return -E2BIG;
			memcpy(out + at, rec + f[i].offset, f[i].size); /* x86-64: little-endian */
			at += f[i].size;
		}
	}
	return (int)at;
}

/* The raw callback: DATA is the struct tpr. */
static void rec_hit(void *data, const struct dynftrace_tracepoint *tp, const void *rec,
		    unsigned rec_size)
{
	const struct tpr *r = data;
	uint8_t buf[TPR_PAYLOAD_MAX];
	(void)tp;
	int len = encode(r->fields, r->nfields, rec, rec_size, buf + 4, sizeof(buf) - 4);
	if (len < 0) {
		ring_count_lost(1);
		return;
	}
	uint16_t idx = r->idx, l16 = (uint16_t)len;
	memcpy(buf, &idx, 2);
	memcpy(buf + 2, &l16, 2);
	uint64_t ts;
	uint8_t *p = trace_ring_is_on()
			 ? ring_event_begin(RING_EV_TRACEPOINT, 4u + (unsigned)len, &ts)
			 : NULL;
	if (p) {
		memcpy(p, buf, 4u + (unsigned)len);
		ring_event_end(p);
	}
}

static int selected(const char *name)
{
	for (size_t i = 0; i < nglobs; i++)
		if (!fnmatch(globs[i], name, 0))
			return 1;
	return 0;
}

/* One line of tracepoints-IMG.txt for recs[I]. tpr_lock held. */
static void describe(size_t i)
{
	char path[4200], line[4096];
	if (!trace_rec_on)
		return;
	struct dynftrace_tracepoint *tp = recs[i].tp;
	unsigned n = recs[i].nfields;
	const struct dynftrace_tp_field *f = recs[i].fields;
	int at = snprintf(line, sizeof(line), "%zu %s", i, tp->name);
	for (unsigned k = 0; k < n && at > 0 && (size_t)at < sizeof(line); k++) {
		char kind = f[k].kind == DYNFTRACE_FIELD_STRING	   ? 's'
			    : f[k].kind == DYNFTRACE_FIELD_POINTER ? 'p'
			    : f[k].is_signed			   ? 'i'
								   : 'u';
		at += snprintf(line + at, sizeof(line) - (size_t)at, " %c:%u:%s", kind,
			       f[k].kind == DYNFTRACE_FIELD_STRING ? 0 : f[k].size, f[k].name);
	}
	if (at <= 0 || (size_t)at + 2 > sizeof(line)) {
		dft_log("tracepoint %s: description too long to record", tp->name);
		return;
	}
	line[at++] = '\n';
	snprintf(path, sizeof(path), "%s/tracepoints-%s.txt", trace_cfg.dir, trace_cfg.img);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, line, (size_t)at) != at)
		dft_log("cannot write %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* The field names and kinds of F (N of them) in one allocation. */
static struct dynftrace_tp_field *desc_copy(const struct dynftrace_tp_field *f, unsigned n)
{
	size_t len = n * sizeof(*f);
	for (unsigned i = 0; i < n; i++)
		len += strlen(f[i].name) + 1;
	struct dynftrace_tp_field *d = malloc(len ? len : 1);
	if (!d)
		return NULL;
	char *names = (char *)(d + n);
	for (unsigned i = 0; i < n; i++) {
		d[i] = f[i];
		d[i].type = NULL;
		d[i].name = strcpy(names, f[i].name);
		names += strlen(names) + 1;
	}
	return d;
}

/* Attach the recorder to TP (already attached: 0). tpr_lock held.
 * -EINVAL: untyped; -ENOSPC: too many; else register's error. */
static int tpr_enable(struct dynftrace_tracepoint *tp)
{
	if (!tp->raw)
		return -EINVAL;
	unsigned nf = 0;
	const struct dynftrace_tp_field *fields = dynftrace_tracepoint_fields(tp, &nf);
	/* Recorded already? An object dlclose'd and loaded again at the same
	 * address has the same tracepoint addresses with no callback: it gets
	 * its index back (register_raw answers -EEXIST when still attached). */
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].tp == tp && recs[i].fields == fields && recs[i].nfields == nf &&
		    !strcmp(tp->name, recs[i].name)) {
			int err = dynftrace_tracepoint_register_raw(tp, rec_hit, &recs[i]);
			return err == -EEXIST ? 0 : err;
		}
	if (nrecs == TPR_MAX)
		return -ENOSPC;
	if (!recs && !(recs = calloc(TPR_MAX, sizeof(*recs))))
		return -ENOMEM;
	size_t i = nrecs;
	recs[i].tp = tp;
	recs[i].idx = (uint16_t)i;
	recs[i].fields = fields;
	recs[i].nfields = nf;
	recs[i].desc = desc_copy(fields, nf);
	snprintf(recs[i].name, sizeof(recs[i].name), "%s", tp->name);
	describe(i); /* before the first event can reach a stream */
	int err = dynftrace_tracepoint_register_raw(tp, rec_hit, &recs[i]);
	if (err && err != -EEXIST) {
		recs[i].tp = NULL; /* the index stays described, unused */
		recs[i].name[0] = 0;
	}
	nrecs++;
	return err == -EEXIST ? 0 : err;
}

/* Record TP if the session selects it. tpr_lock held. */
static void enable_one(struct dynftrace_tracepoint *tp)
{
	if (!tp->raw || !selected(tp->name))
		return;
	int err = tpr_enable(tp);
	if (err)
		dft_log("cannot record tracepoint %s: %s", tp->name, strerror(-err));
}

/* ---- live control (ctl_events.c) ------------------------------------------ */

/* Is rec_hit attached to TP with R? (The callback array is read under
 * the runtime's RCU, as the tracepoint's readers do.) */
static int tp_attached(struct dynftrace_tracepoint *tp, const struct tpr *r)
{
	int on = 0;
	dynftrace_rcu_read_lock();
	const struct dynftrace_tp_funcs *f = __atomic_load_n(&tp->funcs, __ATOMIC_ACQUIRE);
	for (unsigned long i = 0; f && i < f->n && !on; i++) {
		const struct dynftrace_tp_raw_ctx *c = f->f[i].data;
		on = f->f[i].func == tp->raw && c->fn == rec_hit && c->data == r;
	}
	dynftrace_rcu_read_unlock();
	return on;
}

HIDDEN int tp_record_set(struct dynftrace_tracepoint *tp, int on)
{
	int err = 0;
	pthread_mutex_lock(&tpr_lock);
	if (on) {
		err = tpr_enable(tp);
	} else {
		err = -ENOENT;
		for (size_t i = 0; i < nrecs && err == -ENOENT; i++)
			if (recs[i].tp == tp)
				err = dynftrace_tracepoint_unregister_raw(tp, rec_hit, &recs[i]);
		if (err == -ENOENT)
			err = 0; /* was not enabled */
	}
	pthread_mutex_unlock(&tpr_lock);
	return err;
}

HIDDEN int tp_record_lookup(unsigned idx, char *name, size_t namelen,
			    const struct dynftrace_tp_field **fields, unsigned *nfields)
{
	int err = -ENOENT;
	pthread_mutex_lock(&tpr_lock);
	if (idx < nrecs && recs[idx].name[0] && (recs[idx].desc || !recs[idx].nfields)) {
		snprintf(name, namelen, "%s", recs[idx].name);
		*fields = recs[idx].desc;
		*nfields = recs[idx].nfields;
		err = 0;
	}
	pthread_mutex_unlock(&tpr_lock);
	return err;
}

HIDDEN int tp_record_enabled(struct dynftrace_tracepoint *tp)
{
	int on = 0;
	pthread_mutex_lock(&tpr_lock);
	for (size_t i = 0; i < nrecs && !on; i++) {
		if (recs[i].tp != tp)
			continue;
		on = tp_attached(tp, &recs[i]);
	}
	pthread_mutex_unlock(&tpr_lock);
	return on;
}

struct collect {
	struct dynftrace_tracepoint **v;
	size_t n, cap;
};

static int collect_cb(struct dynftrace_tracepoint *tp, void *data)
{
	struct collect *c = data;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		void *v = realloc(c->v, cap * sizeof(*c->v));
		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = tp;
	return 0;
}

HIDDEN void tp_record_init(void)
{
	const char *env = dft_getenv("DYNFTRACE_EVENTS");
	if (!env || !*env || !trace_rec_on)
		return;
	pthread_mutex_lock(&tpr_lock);
	globs_text = strdup(env);
	size_t cap = 1;
	for (const char *c = env; *c; c++)
		cap += *c == ',';
	globs = calloc(cap, sizeof(*globs));
	if (!globs_text || !globs) {
		dft_log("cannot record tracepoints: out of memory");
		pthread_mutex_unlock(&tpr_lock);
		return;
	}
	for (char *save, *g = strtok_r(globs_text, ",", &save); g; g = strtok_r(NULL, ",", &save))
		globs[nglobs++] = g;
	__atomic_store_n(&active, 1, __ATOMIC_RELAXED);
	tracepoint_on_table_added(tp_record_table_added);
	struct collect c = {0};
	dynftrace_tracepoint_for_each(collect_cb, &c);
	for (size_t i = 0; i < c.n; i++)
		enable_one(c.v[i]);
	free(c.v);
	pthread_mutex_unlock(&tpr_lock);
}

HIDDEN void tp_record_table_added(struct dynftrace_tracepoint *const *start,
				  struct dynftrace_tracepoint *const *stop)
{
	if (!__atomic_load_n(&active, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&tpr_lock);
	for (struct dynftrace_tracepoint *const *p = start; active && p < stop; p++)
		enable_one(*p);
	pthread_mutex_unlock(&tpr_lock);
}

HIDDEN void tp_record_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	tpr_lock = fresh;
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].tp)
			describe(i);
}
