/* SPDX-License-Identifier: MIT */
/*
 * ctl_live.c - the text of live control's `trace` and `trace_pipe`: the
 * threads' rings (ring.c, read through ring_read.c's cursors) merged by
 * time and formatted as the kernel's files are.
 *
 * There is one copy of every event, in its thread's ring: the tracers
 * write it once, the consumer writes it to the session under `record`, and
 * these views read it where it is. A view holds, per ring, a reference (the
 * ring is not freed meanwhile), a cursor, the next event or two, and the
 * entries it has shown whose exit has not come yet (a function_graph exit
 * carries no function: its name and duration come from the entry). What
 * the ring lost before the view got there is one "[LOST N EVENTS]" line.
 *
 *   `trace`       a snapshot: every ring from its oldest event after the
 *                 last clear up to where its writer was at open;
 *   `trace_pipe`  every ring from its oldest event after the last clear,
 *                 then what comes; each view has its own cursors, so two
 *                 readers both see every event (each consumes for itself).
 *                 Rings of threads that started later join at the next
 *                 read, rings of exited threads leave once read.
 *
 * Views begin wherever their rings begin, maybe inside calls: an exit whose
 * entry the view did not show is not shown either, and depths count from
 * there.
 *
 * Concurrency: everything here belongs to the control thread (its callers
 * hold the server's lock); the rings' rules are ring_read.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include <dynftrace/tracepoint.h>
#include "patch.h"
#include "argspec.h"
#include "ring.h"
#include "sites.h"
#include "tp_record.h"
#include "trace.h"
#include "func_names.h"
#include "demangle.h"

#define LIVE_LINE_MAX (RING_MARKER_MAX + 512) /* one formatted event */
#define INDENT_MAX    400

struct frame {
	uint32_t id;
	uint64_t ts;
};

/* One thread's ring within a view. */
struct live_src {
	struct ring_buf *b;
	unsigned long gen; /* ring_reader_gen() when the reference was taken */
	struct ring_cursor cur;
	int ended;	     /* the cursor said RING_RD_END */
	unsigned head, n;    /* events held: ev[head], then ev[head ^ 1] */
	uint32_t unwind;     /* an exit_depth event: frames still to close */
	uint32_t depth, cap; /* entries shown whose exit has not come */
	struct frame *stack; /* ... their functions and times */
	char comm[16];	     /* the thread's name, once asked */
	struct ring_event ev[2];
};

struct live_cursor {
	int consume, graph;
	int opened; /* the first sources were taken (live_open) */
	size_t n, cap;
	struct live_src **src;
	/* trace_pipe: the rings of exited threads it has read to the end, by
	 * serial (only those still in the list: a freed one never returns). */
	uint64_t *done, *seen;
	size_t ndone, capdone;
	char line[LIVE_LINE_MAX]; /* formatted, not yet handed out */
	size_t line_len, line_off;
};

/* ---- sources --------------------------------------------------------------- */

/* Hold at least N events of S if its ring has them: true when it does. */
static bool src_fill(struct live_src *s, unsigned n)
{
	while (s->n < n && !s->ended) {
		int r = ring_cursor_next(&s->cur, &s->ev[(s->head + s->n) & 1]);
		if (r == RING_RD_EVENT)
			s->n++;
		else {
			s->ended = r == RING_RD_END;
			break;
		}
	}
	return s->n >= n;
}

static struct ring_event *src_ev(struct live_src *s, unsigned i)
{
	return &s->ev[(s->head + i) & 1];
}

static void src_pop(struct live_src *s)
{
	s->head ^= 1;
	s->n--;
}

/* The thread's name (a copy: the ring's memory is ring_read.c's to read). */
static const char *src_comm(struct live_src *s)
{
	if (!s->comm[0])
		ring_buf_comm(s->b, s->comm, sizeof(s->comm));
	return s->comm;
}

static void src_free(struct live_src *s)
{
	ring_buf_put(s->b, s->gen);
	free(s->stack);
	free(s);
}

struct collect {
	struct live_cursor *c;
	int err;
};

/* ring_for_each_buf's callback: a source for B, unless the view has one
 * (trace_pipe's later reads) or there is nothing to read. */
static void src_add(struct ring_buf *b, void *data)
{
	struct collect *k = data;
	struct live_cursor *c = k->c;
	if (k->err)
		return;
	for (size_t i = 0; i < c->n; i++)
		if (c->src[i]->b == b)
			return;
	if (ring_buf_drained(b))
		return;
	for (size_t i = 0; i < c->ndone; i++)
		if (c->done[i] == ring_buf_serial(b)) {
			c->seen[i] = 1;
			return;
		}
	if (c->n == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 8;
		struct live_src **v = realloc(c->src, nc * sizeof(*v));
		if (!v) {
			k->err = -ENOMEM;
			return;
		}
		c->src = v;
		c->cap = nc;
	}
	struct live_src *s = calloc(1, sizeof(*s));
	if (!s) {
		k->err = -ENOMEM;
		return;
	}
	ring_buf_get(b);
	s->b = b;
	s->gen = ring_reader_gen();
	ring_cursor_open(&s->cur, b, c->consume);
	/* trace_pipe: a thread's ring found after the first look holds only
	 * events made since the reader began; those overwritten before this
	 * look are lost to it, and said. */
	s->cur.whole = c->consume && c->opened;
	c->src[c->n++] = s;
}

/* Sources for the rings there are now (the list is newest first: oldest
 * thread first here, so that equal times come in thread order). */
static int src_refresh(struct live_cursor *c)
{
	struct collect k = {c, 0};
	size_t before = c->n;
	ring_for_each_buf(src_add, &k);
	for (size_t i = before, j = c->n; i < j--; i++) {
		struct live_src *t = c->src[i];
		c->src[i] = c->src[j];
		c->src[j] = t;
	}
	return k.err;
}

/* trace_pipe: drop the sources of exited threads that were read to the
 * end, and remember them. */
static void src_prune(struct live_cursor *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct live_src *s = c->src[i];
		if (!s->ended || s->n || s->cur.lost) {
			c->src[k++] = s;
			continue;
		}
		if (c->ndone == c->capdone) {
			size_t nc = c->capdone ? 2 * c->capdone : 16;
			uint64_t *d = realloc(c->done, nc * sizeof(*d));
			uint64_t *v = d ? realloc(c->seen, nc * sizeof(*v)) : NULL;
			if (d)
				c->done = d;
			if (!v) {
				c->src[k++] = s; /* kept, read again: nothing more */
				continue;
			}
			c->seen = v;
			c->capdone = nc;
		}
		c->done[c->ndone] = ring_buf_serial(s->b);
		c->seen[c->ndone++] = 1;
		src_free(s);
	}
	c->n = k;
}

/* Forget the finished rings that left the list (after a refresh). */
static void done_prune(struct live_cursor *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->ndone; i++)
		if (c->seen[i]) {
			c->seen[k] = 0;
			c->done[k++] = c->done[i];
		}
	c->ndone = k;
}

/* ---- names ----------------------------------------------------------------- */

/* The name of the function containing A, or A in hex, into BUF. Under
 * patch_lock, taken here only: tp_record_lookup's lock comes before it
 * (tp_record_set), never after. */
static const char *sym_of(uintptr_t a, char *buf, size_t n)
{
	const char *nm = NULL;
	patch_lock(); /* the object stays while we copy its name */
	for (size_t i = 0; i < obj_count && !nm; i++) {
		struct dft_object *o = obj_tab[i];
		if (a < o->lo || a >= o->hi)
			continue;
		elf_load_funcs(&o->img); /* an object without sites: its names now */
		int32_t f = elf_func_lookup(&o->img, a - o->bias);
		nm = f >= 0 ? elf_func_name(&o->img, f) : NULL;
		if (nm)
			snprintf(buf, n, "%s", nm);
		break;
	}
	patch_unlock();
	if (!nm)
		snprintf(buf, n, "0x%lx", (unsigned long)a);
	return buf;
}

/* C++ names as the reader shows them (DYNFTRACE_DEMANGLE=simple, the
 * default, full or no; read once): -1 not read yet, 0 no, 1 simple, 2 full. */
static int demangle_style = -1;

static const char *fname(uint32_t id, char *buf, size_t n)
{
	const char *nm = func_name(id);
	if (demangle_style < 0) {
		const char *v = dft_getenv("DYNFTRACE_DEMANGLE");
		demangle_style = v && !strcmp(v, "no") ? 0 : v && !strcmp(v, "full") ? 2 : 1;
	}
	if (nm && demangle_style && !strncmp(nm, "_Z", 2) &&
	    dft_demangle(nm, demangle_style == 2 ? DM_FULL : DM_SIMPLE, buf, n) >= 0)
		return buf;
	if (nm)
		return nm;
	snprintf(buf, n, "<id %u>", id);
	return buf;
}

/* ---- tracepoint hits: "tp: NAME(field=value, ...)" -------------------------- */

struct tpfmt {
	char *p;
	size_t n, cap;
};

static void tf_put(struct tpfmt *b, const char *s, size_t n)
{
	while (n-- && b->n < b->cap)
		b->p[b->n++] = *s++;
}

static void tf_str(struct tpfmt *b, const char *s)
{
	tf_put(b, s, strlen(s));
}

static void tf_num(struct tpfmt *b, uint64_t v, unsigned base, int neg)
{
	char t[24];
	size_t i = sizeof(t);
	do {
		t[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (base == 16) {
		t[--i] = 'x';
		t[--i] = '0';
	}
	if (neg)
		t[--i] = '-';
	tf_put(b, t + i, sizeof(t) - i);
}

/* The text of a `tracepoint` event (docs/FORMAT.md) into OUT; its length. */
static size_t tp_text(const struct ring_event *e, char *out, size_t cap)
{
	struct tpfmt b = {out, 0, cap};
	uint16_t idx, len;
	char name[128];
	const struct dynftrace_tp_field *f;
	unsigned nf;
	memcpy(&idx, e->payload, 2);
	memcpy(&len, e->payload + 2, 2);
	const uint8_t *data = e->payload + 4;
	tf_str(&b, "tp: ");
	if (len > e->len - 4 || tp_record_lookup(idx, name, sizeof(name), &f, &nf)) {
		tf_str(&b, "#");
		tf_num(&b, idx, 10, 0);
		return b.n;
	}
	tf_str(&b, name);
	tf_put(&b, "(", 1);
	size_t at = 0;
	for (unsigned i = 0; i < nf; i++) {
		if (i)
			tf_put(&b, ", ", 2);
		tf_str(&b, f[i].name);
		tf_put(&b, "=", 1);
		if (f[i].kind == DYNFTRACE_FIELD_STRING) {
			const uint8_t *z = at < len ? memchr(data + at, 0, len - at) : NULL;
			if (!z)
				break;
			if (z - (data + at) == 1 && data[at] == 0xff) {
				tf_str(&b, "(null)");
			} else {
				tf_put(&b, "\"", 1);
				for (const uint8_t *c = data + at; c < z; c++)
					tf_put(&b, *c < 32 || *c == 127 ? "?" : (const char *)c, 1);
				tf_put(&b, "\"", 1);
			}
			at = (size_t)(z - data) + 1;
			continue;
		}
		if (f[i].size > 8 || len - at < f[i].size)
			break;
		uint64_t v = 0;
		for (unsigned k = 0; k < f[i].size; k++)
			v |= (uint64_t)data[at + k] << (8 * k);
		at += f[i].size;
		if (f[i].kind == DYNFTRACE_FIELD_POINTER) {
			tf_num(&b, v, 16, 0);
		} else if (f[i].is_signed && f[i].size &&
			   (v >> (8 * f[i].size - 1)) & 1) { /* negative */
			if (f[i].size < 8)
				v |= ~(uint64_t)0 << (8 * f[i].size);
			tf_num(&b, -v, 10, 1);
		} else {
			tf_num(&b, v, 10, 0);
		}
	}
	tf_put(&b, ")", 1);
	return b.n;
}

/* ---- formatting ------------------------------------------------------------ */

/* The kernel's duration column: a mark for long calls, then microseconds. */
static void fmt_dur(char *d, size_t n, uint64_t ns, int have)
{
	if (!have) {
		snprintf(d, n, "%17s", ""); /* as wide as a duration */
		return;
	}
	char mark = ' ';
	if (ns > 1000000000ull)
		mark = '$';
	else if (ns > 100000000ull)
		mark = '@';
	else if (ns > 10000000ull)
		mark = '*';
	else if (ns > 1000000ull)
		mark = '#';
	else if (ns > 100000ull)
		mark = '!';
	else if (ns > 10000ull)
		mark = '+';
	snprintf(d, n, "%c %8llu.%03llu us", mark, (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
}

static uint32_t u32_at(const struct ring_event *e, size_t at)
{
	uint32_t v;
	memcpy(&v, e->payload + at, 4);
	return v;
}

static uint64_t u64_at(const struct ring_event *e, size_t at)
{
	uint64_t v;
	memcpy(&v, e->payload + at, 8);
	return v;
}

static int indent(uint32_t depth)
{
	return 2 * depth < INDENT_MAX ? (int)(2 * depth) : INDENT_MAX;
}

static void frame_push(struct live_src *s, uint32_t id, uint64_t ts)
{
	if (s->depth == s->cap) {
		uint32_t nc = s->cap ? 2 * s->cap : 64;
		struct frame *v = realloc(s->stack, nc * sizeof(*v));
		if (!v)
			return; /* not shown as open: its exit will not be either */
		s->stack = v;
		s->cap = nc;
	}
	s->stack[s->depth++] = (struct frame){id, ts};
}

/* The closing brace line of the top frame, at time TS. */
static int close_line(struct live_src *s, char *l, size_t cap, uint64_t ts, const char *rv)
{
	char d[40], nb[1024];
	struct frame *f = &s->stack[--s->depth];
	fmt_dur(d, sizeof(d), ts > f->ts ? ts - f->ts : 0, 1);
	return snprintf(l, cap, "%7d) %s |  %*s}%s%s%s /* %s */\n", (int)ring_buf_tid(s->b), d,
			indent(s->depth), "", *rv ? " = " : "", rv, *rv ? ";" : "",
			fname(f->id, nb, sizeof(nb)));
}

/* The values of an entry_args or exit_retval event E (args.c), as replay
 * prints them, into BUF; "" for other events. */
static void vals_text(const struct ring_event *e, char *buf, size_t size)
{
	buf[0] = 0;
	size_t at = e->id == RING_EV_ENTRY_ARGS ? 4 : e->id == RING_EV_EXIT_RETVAL ? 0 : 1;
	if (at == 1 || e->len < at + 2)
		return;
	uint16_t n;
	memcpy(&n, e->payload + at, 2);
	if (at + 2 + n <= e->len)
		argspec_values_format(e->payload + at + 2, n, buf, size);
}

/* A line of user text: a marker, or a tracepoint hit. */
static int text_line(struct live_cursor *c, struct live_src *s, const struct ring_event *e, char *l,
		     size_t cap)
{
	char tb[LIVE_LINE_MAX / 2];
	const char *text = (const char *)e->payload;
	int tlen = (int)strnlen(text, e->len);
	if (e->id == RING_EV_TRACEPOINT) {
		tlen = (int)tp_text(e, tb, sizeof(tb));
		text = tb;
	}
	if (c->graph) {
		char d[40];
		fmt_dur(d, sizeof(d), 0, 0);
		return snprintf(l, cap, "%7d) %s |  %*s/* %.*s */\n", (int)ring_buf_tid(s->b), d,
				indent(s->depth), "", tlen, text);
	}
	return snprintf(l, cap, "%16.16s-%-7d %5llu.%06llu: tracing_mark_write: %.*s\n",
			src_comm(s), (int)ring_buf_tid(s->b),
			(unsigned long long)(e->ts / 1000000000ull),
			(unsigned long long)(e->ts % 1000000000ull / 1000), tlen, text);
}

/* Format S's next event (or its losses) into c->line and consume it. An
 * exit whose entry this view did not show leaves the line empty. */
static void format_event(struct live_cursor *c, struct live_src *s)
{
	char *l = c->line;
	size_t cap = sizeof(c->line);
	int len = 0, tid = (int)ring_buf_tid(s->b);
	char d[40], nb[1024], pb[512];
	if (s->cur.lost) {
		len = snprintf(l, cap, " TID %d [LOST %llu EVENTS]\n", tid,
			       (unsigned long long)s->cur.lost);
		s->cur.lost = 0;
	}
	if (!s->n)
		goto out;
	struct ring_event *e = src_ev(s, 0);
	switch (e->id) {
	case RING_EV_ENTRY:
	case RING_EV_ENTRY_ARGS: { /* (the values are the session reader's) */
		uint32_t id = u32_at(e, 0);
		/* A leaf: its exit comes next (if it came already). */
		bool leaf = src_fill(s, 2) && (src_ev(s, 1)->id == RING_EV_EXIT ||
					       src_ev(s, 1)->id == RING_EV_EXIT_RETVAL);
		uint64_t dur = leaf && src_ev(s, 1)->ts > e->ts ? src_ev(s, 1)->ts - e->ts : 0;
		fmt_dur(d, sizeof(d), dur, leaf);
		char av[LIVE_LINE_MAX / 4], rv[LIVE_LINE_MAX / 8] = "";
		vals_text(e, av, sizeof(av));
		if (leaf)
			vals_text(src_ev(s, 1), rv, sizeof(rv));
		len += snprintf(l + len, cap - len, "%7d) %s |  %*s%s(%s)%s%s%s\n", tid, d,
				indent(s->depth), "", fname(id, nb, sizeof(nb)), av,
				*rv ? " = " : "", rv, leaf ? ";" : " {");
		if (leaf)
			src_pop(s);
		else
			frame_push(s, id, e->ts);
		break;
	}
	case RING_EV_EXIT:
	case RING_EV_EXIT_RETVAL:
		if (s->depth) {
			char rv[LIVE_LINE_MAX / 8];
			vals_text(e, rv, sizeof(rv));
			len += close_line(s, l + len, cap - len, e->ts, rv);
		}
		break;
	case RING_EV_EXIT_DEPTH:
	case RING_EV_EXIT_LOST:
		/* Frames left without returning, or whose exits were lost: one
		 * line each, one per call. */
		if (!s->unwind)
			s->unwind = u32_at(e, 0);
		if (s->unwind && s->depth) {
			len += close_line(s, l + len, cap - len, e->ts, "");
			if (--s->unwind && s->depth)
				goto out; /* the event stays for the next frame */
		}
		s->unwind = 0;
		break;
	case RING_EV_CTX_SWITCH:
		/* Another stack's frames from here: the view does not keep the
		 * contexts apart, so it forgets the frames it shows (their exits
		 * come as lines of nothing) and starts the next context at the
		 * left edge. The recorded trace keeps them (trace_merge.h). */
		fmt_dur(d, sizeof(d), 0, 0);
		len += snprintf(l + len, cap - len, "%7d) %s |  /* context %u -> %u */\n", tid, d,
				(unsigned)u32_at(e, 4), (unsigned)u32_at(e, 8));
		s->depth = 0;
		break;
	case RING_EV_CALL:
		fmt_dur(d, sizeof(d), u64_at(e, 4), 1);
		len += snprintf(l + len, cap - len, "%7d) %s |  %*s} /* %s */\n", tid, d,
				indent(s->depth), "", fname(u32_at(e, 0), nb, sizeof(nb)));
		break;
	case RING_EV_FUNCTION:
		len += snprintf(l + len, cap - len, "%16.16s-%-7d %5llu.%06llu: %s <-%s\n",
				src_comm(s), tid, (unsigned long long)(e->ts / 1000000000ull),
				(unsigned long long)(e->ts % 1000000000ull / 1000),
				fname(u32_at(e, 0), nb, sizeof(nb)),
				sym_of((uintptr_t)u64_at(e, 4), pb, sizeof(pb)));
		break;
	case RING_EV_FUNCTION_NEAR: {
		uint32_t f;
		int64_t poff;
		fmt_near_unpack(e->payload, &f, &poff);
		uintptr_t site = func_addr(f);
		len += snprintf(l + len, cap - len, "%16.16s-%-7d %5llu.%06llu: %s <-%s\n",
				src_comm(s), tid, (unsigned long long)(e->ts / 1000000000ull),
				(unsigned long long)(e->ts % 1000000000ull / 1000),
				fname(f, nb, sizeof(nb)),
				site ? sym_of(site + (uintptr_t)poff, pb, sizeof(pb)) : "?");
		break;
	}
	case RING_EV_MARKER:
	case RING_EV_TRACEPOINT:
		len += text_line(c, s, e, l + len, cap - len);
		break;
	case RING_EV_LOST:
		len +=
		    snprintf(l + len, cap - len, " TID %d [LOST %u EVENTS]\n", tid, u32_at(e, 0));
		break;
	default:
		break;
	}
	src_pop(s);
out:
	if (len >= (int)cap)
		len = (int)cap - 1;
	c->line_len = (size_t)len;
	c->line_off = 0;
}

/* ---- views ----------------------------------------------------------------- */

struct live_cursor *live_open(int consume, int graph)
{
	struct live_cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->consume = consume;
	c->graph = graph;
	if (src_refresh(c)) {
		live_close(c);
		return NULL;
	}
	c->opened = 1;
	return c;
}

void live_close(struct live_cursor *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		src_free(c->src[i]);
	free(c->src);
	free(c->done);
	free(c->seen);
	free(c);
}

/* A stream the process can no longer send (its exit, a reader that does
 * not read): what it had not handed out, counted in events (a formatted
 * line not handed out is one) and dropped. */
size_t live_discard(struct live_cursor *c)
{
	size_t n = c->line_off < c->line_len;
	c->line_len = c->line_off = 0;
	if (c->consume && src_refresh(c))
		return n;
	for (size_t i = 0; i < c->n; i++) {
		struct live_src *s = c->src[i];
		while (src_fill(s, 1)) {
			src_pop(s);
			n++;
		}
		n += s->cur.lost; /* overwritten, not yet said */
		s->cur.lost = 0;
	}
	return n;
}

size_t live_read(struct live_cursor *c, char *buf, size_t cap)
{
	size_t done = 0;
	if (c->consume) {
		/* Threads come and go. */
		src_prune(c);
		for (size_t i = 0; i < c->ndone; i++)
			c->seen[i] = 0;
		int err = src_refresh(c);
		done_prune(c);
		if (err)
			return 0;
	}
	for (;;) {
		if (c->line_off < c->line_len) {
			size_t k = c->line_len - c->line_off;
			if (k > cap - done)
				k = cap - done;
			memcpy(buf + done, c->line + c->line_off, k);
			c->line_off += k;
			done += k;
			if (done == cap)
				break;
		}
		/* The earliest event of all; losses first, as they come. */
		struct live_src *best = NULL;
		for (size_t i = 0; i < c->n; i++) {
			struct live_src *s = c->src[i];
			bool have = src_fill(s, 1);
			if (s->cur.lost && !have) {
				best = s;
				break;
			}
			if (have && (!best || src_ev(s, 0)->ts < src_ev(best, 0)->ts))
				best = s;
		}
		if (!best)
			break;
		format_event(c, best);
	}
	return done;
}
