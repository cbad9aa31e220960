// SPDX-License-Identifier: MIT
/*
 * calltree.c - the calls of a session aggregated by call path; see
 * calltree.h. Each selected stream is walked on its own (tr_walk): a frame
 * of the walk's stack carries, beside it here, its node and the time of its
 * completed callees inside the range.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"

#define NO_NODE UINT32_MAX

int ct_init(struct calltree *t)
{
	memset(t, 0, sizeof(*t));
	t->node = calloc(64, sizeof(*t->node));
	if (!t->node)
		return -ENOMEM;
	t->cap = 64;
	t->n = 1; /* the root */
	return 0;
}

void ct_free(struct calltree *t)
{
	free(t->node);
	free(t->slot);
	strtab_free(&t->names);
	memset(t, 0, sizeof(*t));
}

static size_t slot_of(uint32_t parent, uint32_t name, size_t nslot)
{
	uint64_t h =
	    ((uint64_t)parent * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)name * 0xc2b2ae3d27d4eb4full);

	return (size_t)(h ^ h >> 29) & (nslot - 1);
}

static int grow_slots(struct calltree *t)
{
	size_t n = t->nslot ? t->nslot * 2 : 256;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t k = 1; k < t->n; k++) {
		size_t i = slot_of(t->node[k].parent, t->node[k].name, n);

		while (slot[i])
			i = (i + 1) & (n - 1);
		slot[i] = (uint32_t)k + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = n;
	return 0;
}

int64_t ct_child(struct calltree *t, uint32_t parent, uint32_t name)
{
	struct ct_node *nd;
	size_t i;

	if ((t->n + 1) * 2 > t->nslot && grow_slots(t))
		return -ENOMEM;
	i = slot_of(parent, name, t->nslot);
	while (t->slot[i]) {
		nd = &t->node[t->slot[i] - 1];
		if (nd->parent == parent && nd->name == name)
			return t->slot[i] - 1;
		i = (i + 1) & (t->nslot - 1);
	}
	if (t->n == t->cap) {
		size_t cap = t->cap * 2;

		if (cap >= UINT32_MAX - 1 || !(nd = realloc(t->node, cap * sizeof(*nd))))
			return -ENOMEM;
		t->node = nd;
		t->cap = cap;
	}
	nd = &t->node[t->n];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->parent = parent;
	nd->next = t->node[parent].child;
	t->node[parent].child = (uint32_t)t->n;
	t->slot[i] = (uint32_t)++t->n;
	return (int64_t)t->n - 1;
}

/* ---- building ---------------------------------------------------------- */

/* tr_frame.flags: the call that started the focus (graph FUNC). */
#define CT_FOCUS 1u

struct cframe {
	uint32_t node;	     /* NO_NODE: not counted (outside the focus) */
	uint32_t bt;	     /* focus root: its backtrace's node */
	uint64_t child_clip; /* completed callees' time inside the range */
};

struct cwalk {
	struct calltree *t;
	const struct ct_build *b;
	uint64_t from, to; /* the range, absolute */
	struct cframe *fr; /* parallel to the walk's stack */
	size_t cap;
	size_t focus_depth; /* depth + 1 of the active focus call, 0 when none */
	uint32_t *name_of;  /* dense processes: site id -> name id + 1 */
	size_t nname_of;
};

static uint64_t clip(const struct cwalk *cw, uint64_t a, uint64_t b)
{
	uint64_t lo = a > cw->from ? a : cw->from, hi = b < cw->to ? b : cw->to;

	return hi > lo ? hi - lo : 0;
}

static int in_range(const struct cwalk *cw, uint64_t a, uint64_t b)
{
	return a <= cw->to && b >= cw->from;
}

static int64_t name_id(struct cwalk *cw, struct tr_walk *w, struct calltree *t, uint32_t func)
{
	int64_t id;

	if (t == cw->t && func < cw->nname_of && cw->name_of[func])
		return cw->name_of[func] - 1;
	id = strtab_intern(&t->names, tr_func_name(w->st->proc, func), NULL);
	if (id >= 0 && t == cw->t && func < cw->nname_of)
		cw->name_of[func] = (uint32_t)id + 1;
	return id;
}

/* The node of a call of FUNC made at depth D (D frames below it), or
 * NO_NODE; starts the focus when FUNC matches it. Sets *BT for a new
 * focus call. */
static int64_t node_for(struct cwalk *cw, struct tr_walk *w, size_t d, uint32_t func, uint32_t *bt,
			int *starts)
{
	int64_t name, node, p;

	*starts = 0;
	if (cw->b->focus && !cw->focus_depth) {
		if (!tr_func_match(w->st->proc, func, cw->b->focus))
			return NO_NODE;
		*starts = 1;
		p = 0;
		for (size_t i = 0; i < d && cw->b->backtraces; i++) {
			if ((name = name_id(cw, w, cw->b->backtraces, w->stack[i].func)) < 0 ||
			    (p = ct_child(cw->b->backtraces, (uint32_t)p, (uint32_t)name)) < 0)
				return -ENOMEM;
		}
		if (cw->b->backtraces) {
			if ((name = name_id(cw, w, cw->b->backtraces, func)) < 0 ||
			    (p = ct_child(cw->b->backtraces, (uint32_t)p, (uint32_t)name)) < 0)
				return -ENOMEM;
		}
		*bt = (uint32_t)p;
		d = 0; /* a child of the root */
	}
	/* A caller outside the counted tree (below the focus, or in another
	 * context's stack brought back by a switch): neither is this call. */
	if (d && cw->fr[d - 1].node == NO_NODE)
		return NO_NODE;
	if ((name = name_id(cw, w, cw->t, func)) < 0)
		return -ENOMEM;
	node = ct_child(cw->t, d ? cw->fr[d - 1].node : 0, (uint32_t)name);
	return node;
}

static void count(struct cwalk *cw, uint32_t node, uint64_t a, uint64_t b, uint64_t child,
		  int calls_only)
{
	struct ct_node *n = &cw->t->node[node];
	uint64_t incl = calls_only ? 0 : clip(cw, a, b);

	if (in_range(cw, a, b))
		n->calls++;
	n->total_ns += incl;
	n->self_ns += incl > child ? incl - child : 0;
}

/* Room for the frame at depth D in the parallel stack. */
static int fr_room(struct cwalk *cw, size_t d)
{
	if (d >= cw->cap) {
		size_t cap = cw->cap ? cw->cap * 2 : 64;
		struct cframe *n;

		while (cap <= d)
			cap *= 2;
		n = realloc(cw->fr, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		cw->fr = n;
		cw->cap = cap;
	}
	return 0;
}

static int c_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct cwalk *cw = w->data;
	size_t d = w->depth - 1;
	struct cframe *cf;
	int64_t node = NO_NODE;
	int starts = 0;

	(void)ev;
	if (fr_room(cw, d))
		return -ENOMEM;
	cf = &cw->fr[d];
	cf->child_clip = 0;
	cf->bt = 0;
	if (!cw->b->focus || cw->focus_depth || tr_func_match(w->st->proc, f->func, cw->b->focus)) {
		node = node_for(cw, w, d, f->func, &cf->bt, &starts);
		if (node < 0)
			return (int)node;
		if (starts) {
			cw->focus_depth = d + 1;
			f->flags |= CT_FOCUS;
		}
	}
	cf->node = (uint32_t)node;
	return 0;
}

/* A context switch moves frames off and onto the walk's stack: their
 * parallel entries travel in the frames. */
static int c_suspend(struct tr_walk *w, struct tr_frame *f, uint64_t ts)
{
	struct cwalk *cw = w->data;
	struct cframe *cf = &cw->fr[f - w->stack];

	(void)ts;
	f->user = cf->node | (uint64_t)cf->bt << 32;
	f->user2 = cf->child_clip;
	if (f->flags & CT_FOCUS) /* the focus call is set aside with its context */
		cw->focus_depth = 0;
	return 0;
}

static int c_resume(struct tr_walk *w, struct tr_frame *f, uint64_t ts)
{
	struct cwalk *cw = w->data;
	size_t d = (size_t)(f - w->stack);

	(void)ts;
	if (fr_room(cw, d))
		return -ENOMEM;
	cw->fr[d] = (struct cframe){
	    .node = (uint32_t)f->user, .bt = (uint32_t)(f->user >> 32), .child_clip = f->user2};
	if (f->flags & CT_FOCUS)
		cw->focus_depth = d + 1;
	return 0;
}

static int c_leave(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how)
{
	struct cwalk *cw = w->data;
	size_t d = w->depth - 1;
	struct cframe *cf = &cw->fr[d];
	uint64_t incl = clip(cw, f->ts, ts);

	(void)how;
	if (cf->node != NO_NODE)
		count(cw, cf->node, f->ts, ts, cf->child_clip, 0);
	if (d)
		cw->fr[d - 1].child_clip += incl;
	if (f->flags & CT_FOCUS) {
		if (cw->b->backtraces) {
			struct ct_node *b = &cw->b->backtraces->node[cf->bt];

			b->calls += in_range(cw, f->ts, ts);
			b->total_ns += incl;
		}
		cw->focus_depth = 0;
	}
	return 0;
}

static int c_other(struct tr_walk *w, const struct tr_event *ev)
{
	struct cwalk *cw = w->data;
	size_t d = w->depth;
	uint64_t start;
	uint32_t bt = 0;
	int64_t node;
	int starts;

	if (ev->type != TR_CALL && ev->type != TR_FUNCTION)
		return 0;
	if (cw->b->focus && !cw->focus_depth && !tr_func_match(w->st->proc, ev->func, cw->b->focus))
		return 0;
	node = node_for(cw, w, d, ev->func, &bt, &starts);
	if (node < 0)
		return (int)node;
	if (node == NO_NODE) /* its caller is outside the counted tree */
		return 0;
	start = ev->type == TR_CALL && ev->arg < ev->ts ? ev->ts - ev->arg : ev->ts;
	if (ev->type == TR_FUNCTION)
		start = ev->ts;
	count(cw, (uint32_t)node, start, ev->ts, 0, ev->type == TR_FUNCTION);
	if (ev->type == TR_CALL && d)
		cw->fr[d - 1].child_clip += clip(cw, start, ev->ts);
	if (starts && cw->b->backtraces) {
		struct ct_node *b = &cw->b->backtraces->node[bt];

		b->calls += in_range(cw, start, ev->ts);
		b->total_ns += ev->type == TR_CALL ? clip(cw, start, ev->ts) : 0;
	}
	return 0;
}

static const struct tr_walk_ops c_ops = {
    .enter = c_enter, .leave = c_leave, .other = c_other, .suspend = c_suspend, .resume = c_resume};

int ct_build(struct calltree *t, struct tr_session *s, const struct ct_build *b)
{
	struct cwalk cw = {.t = t, .b = b, .from = 0, .to = UINT64_MAX};
	int ret = 0;

	if (b->sel && b->sel->has_range) {
		uint64_t base = tr_base_ts(s);

		cw.from = base + b->sel->from_ns < base ? UINT64_MAX : base + b->sel->from_ns;
		cw.to = base + b->sel->to_ns < base ? UINT64_MAX : base + b->sel->to_ns;
	}
	for (size_t i = 0; i < s->nstreams && !ret; i++) {
		struct tr_stream *st = &s->streams[i];
		struct tr_walk w;
		struct tr_event ev;

		if (!cli_select_tid(b->sel, st->tid))
			continue;
		cw.focus_depth = 0;
		cw.nname_of = st->proc->dense ? st->proc->nsites : 0;
		free(cw.name_of);
		cw.name_of = cw.nname_of ? calloc(cw.nname_of, sizeof(*cw.name_of)) : NULL;
		if (cw.nname_of && !cw.name_of) {
			ret = -ENOMEM;
			break;
		}
		tr_walk_init(&w, &c_ops, &cw, st);
		tr_stream_rewind(st);
		while (!ret && tr_stream_next(st, &ev) > 0)
			ret = tr_walk_feed(&w, &ev);
		tr_walk_free(&w);
	}
	free(cw.name_of);
	free(cw.fr);
	return ret;
}

/* ---- output order ------------------------------------------------------ */

static const struct calltree *sort_tree;
static int sort_by_name;

static int cmp_child(const void *pa, const void *pb)
{
	const struct ct_node *a = &sort_tree->node[*(const uint32_t *)pa];
	const struct ct_node *b = &sort_tree->node[*(const uint32_t *)pb];

	if (!sort_by_name && a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	if (!sort_by_name && a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	return strcmp(sort_tree->names.str[a->name], sort_tree->names.str[b->name]);
}

int ct_sort(struct calltree *t, int by_name)
{
	uint32_t *kids = malloc(t->n * sizeof(*kids));

	if (!kids)
		return -ENOMEM;
	sort_tree = t;
	sort_by_name = by_name;
	for (size_t p = 0; p < t->n; p++) {
		size_t k = 0;

		for (uint32_t c = t->node[p].child; c; c = t->node[c].next)
			kids[k++] = c;
		if (k < 2)
			continue;
		qsort(kids, k, sizeof(*kids), cmp_child);
		t->node[p].child = kids[0];
		for (size_t j = 0; j < k; j++)
			t->node[kids[j]].next = j + 1 < k ? kids[j + 1] : 0;
	}
	free(kids);
	return 0;
}

unsigned ct_depth(const struct calltree *t)
{
	unsigned *depth = calloc(t->n ? t->n : 1, sizeof(*depth)), max = 0;

	if (!depth)
		return 64; /* only a layout hint */
	for (size_t k = 1; k < t->n; k++) {
		depth[k] = depth[t->node[k].parent] + 1;
		if ((t->node[k].calls || t->node[k].total_ns) && depth[k] > max)
			max = depth[k];
	}
	free(depth);
	return max;
}
