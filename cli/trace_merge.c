// SPDX-License-Identifier: MIT
/*
 * trace_merge.c - the streams of a session merged in time order (a binary
 * heap of their next events), and the call stack of one stream. See
 * trace_merge.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_merge.h"

/* ---- merge ------------------------------------------------------------ */

static int heap_less(const struct tr_merge_src *a, const struct tr_merge_src *b)
{
	if (a->next.ts != b->next.ts)
		return a->next.ts < b->next.ts;
	return a->st < b->st; /* streams are in one array: stream order breaks ties */
}

static void heap_down(struct tr_merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		struct tr_merge_src *t;

		if (l < m->n && heap_less(m->heap[l], m->heap[min]))
			min = l;
		if (r < m->n && heap_less(m->heap[r], m->heap[min]))
			min = r;
		if (min == i)
			return;
		t = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = t;
		i = min;
	}
}

int tr_merge_init(struct tr_merge *m, struct tr_session *s, int (*want)(struct tr_stream *, void *),
		  void *data)
{
	size_t n = s->nstreams ? s->nstreams : 1;

	memset(m, 0, sizeof(*m));
	m->sess = s;
	m->src = calloc(n, sizeof(*m->src));
	m->heap = calloc(n, sizeof(*m->heap));
	if (!m->src || !m->heap) {
		tr_merge_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_merge_src *src = &m->src[i];

		src->st = &s->streams[i];
		if (want && !want(src->st, data))
			continue;
		tr_stream_rewind(src->st);
		if (tr_stream_next(src->st, &src->next) > 0)
			m->heap[m->n++] = src;
	}
	for (size_t i = m->n / 2; i-- > 0;)
		heap_down(m, i);
	return 0;
}

int tr_merge_next(struct tr_merge *m, struct tr_stream **stp, struct tr_event *ev)
{
	struct tr_merge_src *src;

	if (!m->n)
		return 0;
	src = m->heap[0];
	*ev = src->next;
	*stp = src->st;
	if (tr_stream_next(src->st, &src->next) > 0) {
		/* Times only grow along a stream, except the END of a damaged
		 * stream, which keeps the last good time: still not smaller. */
		heap_down(m, 0);
	} else {
		m->heap[0] = m->heap[--m->n];
		heap_down(m, 0);
	}
	return 1;
}

void tr_merge_free(struct tr_merge *m)
{
	free(m->heap);
	free(m->src);
	m->heap = NULL;
	m->src = NULL;
	m->n = 0;
}

/* ---- call stacks ------------------------------------------------------ */

void tr_walk_init(struct tr_walk *w, const struct tr_walk_ops *ops, void *data,
		  struct tr_stream *st)
{
	memset(w, 0, sizeof(*w));
	w->ops = ops;
	w->data = data;
	w->st = st;
}

void tr_walk_free(struct tr_walk *w)
{
	free(w->stack);
	w->stack = NULL;
	w->depth = w->cap = 0;
	for (size_t i = 0; i < w->nsets; i++)
		free(w->sets[i].f);
	free(w->sets);
	w->sets = NULL;
	w->nsets = w->capsets = 0;
}

static int walk_reserve(struct tr_frame **v, size_t *cap, size_t n)
{
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < n)
		c *= 2;
	struct tr_frame *p = realloc(*v, c * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* A context switch: the top DEPTH frames go aside as FROM's, TO's come back
 * on top. A set FROM already has (a damaged stream) keeps its frames below
 * the new ones. */
static int walk_switch(struct tr_walk *w, const struct tr_event *ev)
{
	uint32_t from = TR_CTX_FROM(ev), to = TR_CTX_TO(ev);
	size_t depth = TR_CTX_DEPTH(ev), i;
	struct tr_ctx_set *set = NULL;
	int ret = 0;

	if (depth > w->depth)
		depth = w->depth; /* frames lost: what is open */
	if (depth) {
		for (i = 0; i < w->nsets && w->sets[i].id != from; i++)
			;
		if (i == w->nsets) {
			if (w->nsets == w->capsets) {
				size_t c = w->capsets ? w->capsets * 2 : 8;
				struct tr_ctx_set *n = realloc(w->sets, c * sizeof(*n));

				if (!n)
					return -ENOMEM;
				w->sets = n;
				w->capsets = c;
			}
			w->sets[w->nsets++] = (struct tr_ctx_set){.id = from};
		}
		set = &w->sets[i];
		if (walk_reserve(&set->f, &set->cap, set->n + depth))
			return -ENOMEM;
		for (i = 0; i < depth && !ret; i++)
			if (w->ops->suspend)
				ret = w->ops->suspend(w, &w->stack[w->depth - 1 - i], ev->ts);
		memcpy(set->f + set->n, w->stack + w->depth - depth, depth * sizeof(*set->f));
		set->n += depth;
		w->depth -= depth;
	}
	for (i = 0; i < w->nsets && w->sets[i].id != to; i++)
		;
	if (!ret && i < w->nsets) {
		struct tr_ctx_set back = w->sets[i];
		size_t base = w->depth;

		if (walk_reserve(&w->stack, &w->cap, w->depth + back.n))
			return -ENOMEM;
		w->sets[i] = w->sets[--w->nsets];
		memcpy(w->stack + w->depth, back.f, back.n * sizeof(*back.f));
		w->depth += back.n;
		free(back.f);
		for (i = base; i < w->depth && !ret; i++)
			if (w->ops->resume)
				ret = w->ops->resume(w, &w->stack[i], ev->ts);
	}
	w->ctx = to;
	if (!ret && w->ops->other)
		ret = w->ops->other(w, ev);
	return ret;
}

static int walk_pop(struct tr_walk *w, uint64_t ts, int how)
{
	struct tr_frame *f = &w->stack[w->depth - 1];
	int ret = w->ops->leave ? w->ops->leave(w, f, ts, how) : 0;

	if (w->depth > 1)
		f[-1].child_ns += ts - f->ts;
	w->depth--;
	return ret;
}

int tr_walk_feed(struct tr_walk *w, const struct tr_event *ev)
{
	int ret = 0;

	w->cur = ev;
	switch (ev->type) {
	case TR_ENTRY: {
		struct tr_frame *f;

		if (walk_reserve(&w->stack, &w->cap, w->depth + 1))
			return -ENOMEM;
		f = &w->stack[w->depth++];
		memset(f, 0, sizeof(*f));
		f->func = ev->func;
		f->ts = ev->arg ? ev->arg : ev->ts; /* an inherited frame: its own start */
		f->idx = w->nentries++;
		if (w->ops->enter)
			ret = w->ops->enter(w, f, ev);
		break;
	}
	case TR_EXIT:
		if (w->depth)
			ret = walk_pop(w, ev->ts, TR_LEAVE_RETURN);
		else if (w->ops->other)
			ret = w->ops->other(w, ev);
		break;
	case TR_EXIT_DEPTH:
	case TR_EXIT_LOST:
		for (uint64_t i = 0; i < ev->arg && w->depth && !ret; i++)
			ret = walk_pop(w, ev->ts,
				       ev->type == TR_EXIT_LOST ? TR_LEAVE_LOST : TR_LEAVE_UNWIND);
		break;
	case TR_CTX_SWITCH:
		ret = walk_switch(w, ev);
		break;
	case TR_END:
		while (w->depth && !ret)
			ret = walk_pop(w, ev->ts, TR_LEAVE_UNFINISHED);
		/* contexts never switched back to: their frames end too */
		while (w->nsets && !ret) {
			struct tr_event sw = {.type = TR_CTX_SWITCH,
					      .func = w->sets[w->nsets - 1].id,
					      .ts = ev->ts,
					      .arg = (uint64_t)w->ctx << 32,
					      .off = ev->off};

			ret = walk_switch(w, &sw);
			while (w->depth && !ret)
				ret = walk_pop(w, ev->ts, TR_LEAVE_UNFINISHED);
		}
		if (!ret && w->ops->other)
			ret = w->ops->other(w, ev);
		break;
	default:
		if (w->ops->other)
			ret = w->ops->other(w, ev);
		break;
	}
	w->last_ts = ev->ts;
	return ret;
}
