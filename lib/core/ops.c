/* SPDX-License-Identifier: MIT */
/*
 * ops.c - registered tracers (struct dynftrace_ops), their filters, the
 * per-site accounting that decides what each site must call, and the
 * dispatcher the common trampoline calls.
 *
 * Accounting (the kernel's __ftrace_hash_rec_update + ftrace_check_record):
 * each site's flags word counts the registered ops that want it. After any
 * change, every site compares what it wants (ref > 0) with what it has
 * (SITE_FL_ENABLED) and yields one action: ignore, make call, make NOP (or,
 * later, modify call). All actions of one change go in one batch.
 *
 * Dispatch: with one registered ops the trampoline's C entry calls that
 * ops' func directly; with several it calls list_func, which tests each ops'
 * filter. Readers (traced threads) walk ops_list and filters under
 * rcu_read_lock; writers hold patch_lock and free only after
 * rcu_synchronize().
 *
 * | field         | protected by                                        |
 * |---------------|-----------------------------------------------------|
 * | ops_list      | patch_lock for writers; RCU for readers             |
 * | ops->next     | same                                                |
 * | ops->filter   | same (replaced, never modified in place)            |
 * | dispatch_ops  | patch_lock for writers; RCU (acquire) for readers   |
 * | site flags    | patch_lock                                          |
 * | stub_ops[]    | patch_lock for writers; RCU (acquire) for readers   |
 * | stub pools    | patch_lock                                          |
 * | routes_seq    | patch_lock for writers; read lock-free (seqcount)   |
 * | late_entries  | atomic counter                                      |
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynftrace/dynftrace.h"
#include "internal.h"
#include "patch.h"
#include "sites.h"
#include "arch.h"
#include "hooks.h"

#define OPS_ST_REGISTERED 0x1UL
#define OPS_ST_DIRECT	  0x2UL /* reserved[0] holds the direct target */
#define OPS_ST_GRAPH	  0x4UL /* the function-graph shortcut's ops (ops_set_graph) */

/* A selection of sites: sorted unique addresses. */
struct addr_set {
	size_t n;
	uintptr_t *a;
};

struct glob_op {
	char *glob;
	int notrace;
};

/* Immutable once published in ops->filter.
 *
 * `selective` records whether the filter set selected functions when the
 * user last changed it. An object's unload removes its addresses from the
 * set; if that empties it, the ops must want nothing, not every function:
 * removing an object's addresses may change what a filter wants inside
 * that object only (see "Objects and filters" below). */
struct ops_filter {
	struct addr_set filter; /* empty and !selective: every function */
	struct addr_set notrace;
	int selective;	     /* the filter set selects (empty: nothing) */
	struct glob_op *log; /* replayed for objects loaded later */
	size_t nlog;
	unsigned long gen; /* sites_gen the sets were computed at */
};

static struct dynftrace_ops *ops_list;
static void list_func(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
		      struct dynftrace_regs *regs);
static struct dynftrace_ops list_ops = {.func = list_func};
static struct dynftrace_ops *dispatch_ops = &list_ops;
/* Calls met while the thread was already inside the runtime or a callback:
 * atomic adds, by cb_enter and by the graph shortcut's entry (tramp.S). */
HIDDEN unsigned long dft_recursion_miss;

/* What a GPR_ONLY callback may call (late_func, dynftrace_regs_arg) is
 * built for general registers only and free of sanitizer calls; clang's
 * TSan instruments atomics despite no_sanitize("thread"), so clang needs
 * disable_sanitizer_instrumentation (clang 14). Where that cannot be had,
 * GPR_ONLY ops take the full body, which is always right. */
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(disable_sanitizer_instrumentation)
#define LIGHT_NOSAN                                                                                \
	__attribute__((no_sanitize("address", "thread", "undefined"),                              \
		       disable_sanitizer_instrumentation))
#endif
#elif defined(__GNUC__)
#define LIGHT_NOSAN __attribute__((no_sanitize("address", "thread", "undefined")))
#endif
/* The target attribute that keeps code to general registers; a backend
 * whose compiler has none (riscv64, whose light bodies go straight to the
 * full ones) defines it empty in its arch_impl.h. */
#ifndef ARCH_GPR_ONLY_ATTR
#define ARCH_GPR_ONLY_ATTR target("general-regs-only"),
#endif
#ifdef LIGHT_NOSAN
#define LIGHT_ROUTE 1
#define LIGHT_FN    __attribute__((ARCH_GPR_ONLY_ATTR noinline)) LIGHT_NOSAN
#else
#define LIGHT_ROUTE 0
#define LIGHT_FN
#endif

/* Callable from a GPR_ONLY callback. */
LIGHT_FN unsigned long dynftrace_regs_arg(const struct dynftrace_regs *regs, int n)
{
	return ARCH_REGS_ARG(regs, n);
}

/* ---- address sets ------------------------------------------------------ */

static int set_has(const struct addr_set *s, uintptr_t a)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->a[mid] == a)
			return 1;
		if (s->a[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int filter_wants(const struct ops_filter *f, uintptr_t ip)
{
	if (!f)
		return 1;
	if ((f->filter.n || f->selective) && !set_has(&f->filter, ip))
		return 0;
	return !(f->notrace.n && set_has(&f->notrace, ip));
}

static void filter_free(struct ops_filter *f)
{
	if (!f)
		return;
	free(f->filter.a);
	free(f->notrace.a);
	for (size_t i = 0; i < f->nlog; i++)
		free(f->log[i].glob);
	free(f->log);
	free(f);
}

/*
 * Apply one glob operation to SET over the sites in [lo, hi) (all sites
 * when lo == hi == 0). "!glob" removes. Returns the number of matches or
 * -ENOMEM; SET is replaced.
 */
static long set_apply(struct addr_set *set, const char *glob, uintptr_t lo, uintptr_t hi)
{
	int neg = glob[0] == '!';
	const char *g = neg ? glob + 1 : glob;
	size_t cap = set->n + (neg ? 0 : site_count);
	uintptr_t *out = malloc((cap ? cap : 1) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	size_t i = 0, j = 0, k = 0;
	long matches = 0;
	/* Merge the sorted set with the sorted site table. */
	while (i < set->n || j < site_count) {
		uintptr_t sa = i < set->n ? set->a[i] : UINTPTR_MAX;
		const struct site *s = j < site_count ? &site_tab[j] : NULL;
		uintptr_t ta = s ? s->addr : UINTPTR_MAX;
		int in_range = s && (lo == hi || (ta >= lo && ta < hi));
		int m = s && in_range && dft_glob_match_in(g, site_func_name(s), s->obj->path);
		if (sa < ta) {
			out[k++] = sa;
			i++;
			continue;
		}
		if (m)
			matches++;
		if (sa == ta) {
			if (!(m && neg))
				out[k++] = sa;
			i++;
			j++;
		} else {
			if (m && !neg)
				out[k++] = ta;
			j++;
		}
	}
	free(set->a);
	set->a = out;
	set->n = k;
	return matches;
}

static struct ops_filter *filter_clone(const struct ops_filter *f)
{
	struct ops_filter *n = calloc(1, sizeof(*n));
	if (!n || !f)
		return n;
	n->filter.n = f->filter.n;
	n->notrace.n = f->notrace.n;
	n->selective = f->selective;
	n->gen = f->gen;
	n->filter.a = malloc((f->filter.n + 1) * sizeof(uintptr_t));
	n->notrace.a = malloc((f->notrace.n + 1) * sizeof(uintptr_t));
	n->log = malloc((f->nlog + 1) * sizeof(*n->log));
	if (!n->filter.a || !n->notrace.a || !n->log) {
		filter_free(n);
		return NULL;
	}
	if (f->filter.n)
		memcpy(n->filter.a, f->filter.a, f->filter.n * sizeof(uintptr_t));
	if (f->notrace.n)
		memcpy(n->notrace.a, f->notrace.a, f->notrace.n * sizeof(uintptr_t));
	for (size_t i = 0; i < f->nlog; i++) {
		n->log[i].notrace = f->log[i].notrace;
		n->log[i].glob = strdup(f->log[i].glob);
		n->nlog++;
		if (!n->log[i].glob) {
			filter_free(n);
			return NULL;
		}
	}
	return n;
}

/* Replay the glob log over [lo, hi): sites of a newly loaded object. */
static int filter_replay(struct ops_filter *f, uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < f->nlog; i++) {
		struct addr_set *s = f->log[i].notrace ? &f->notrace : &f->filter;
		if (!f->log[i].glob[0]) {
			continue; /* a reset: nothing of a new object was selected before it */
		}
		if (set_apply(s, f->log[i].glob, lo, hi) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* ---- accounting and patching ------------------------------------------- */

/* Count OPS in or out of every site F selects; the owner (the one ops of a
 * site with ref == 1) is set here when known, else resolved later. */
static void sites_ref_update(const struct ops_filter *f, int delta, struct dynftrace_ops *ops)
{
	for (size_t i = 0; i < site_count; i++) {
		struct site *s = &site_tab[i];
		if (!filter_wants(f, s->addr))
			continue;
		uint32_t ref = s->flags & SITE_FL_REF_MASK;
		if (delta < 0 && ref == 0) {
			dft_kill("site %#lx: reference count underflow", (unsigned long)s->addr);
			continue;
		}
		s->owner = delta > 0 && ref == 0 ? ops : NULL;
		s->flags =
		    (s->flags & ~SITE_FL_REF_MASK) | ((ref + (uint32_t)delta) & SITE_FL_REF_MASK);
	}
}

/* ---- routes: per-ops trampolines and CALL_OPS --------------------------- */

/*
 * A site wanted by one ops calls, in order of preference:
 *  - CALL_OPS: the region's callops trampoline, which reads the ops from the
 *    8-byte literal before the function (sites built with --call-ops);
 *  - TRAMP: the ops' own stub in the region (`push idx; jmp body`), whose
 *    body calls the ops' func directly;
 *  - else the common trampoline (dispatch: the single ops or the list).
 * A site wanted by several ops calls the callops trampoline with the list
 * ops in its literal, or the common trampoline. route_mask limits the
 * choice (DYNFTRACE_ROUTES, dynftrace_set_routes) for comparisons.
 *
 * Stubs are never rewritten or unmapped. An unregistered ops' stubs point
 * at late_ops (which counts entries that arrive late: a thread that called
 * the stub before the site changed) and go to the end of a FIFO; fresh
 * stubs are handed out first, so a stub is reused only after all others of
 * its pool. Ops with DYNFTRACE_OPS_FL_GPR_ONLY get stubs of the light pool,
 * whose jump leads to the light body (general registers only).
 *
 * Stub reuse and late entries. A thread may be descheduled anywhere between
 * the site's `call` and the RCU read side of the C entry, for any time: on
 * the stub's first byte, in the body, or in cb_enter registering itself.
 * No grace period covers it: it has executed nothing of ours that marks it
 * (the stub cannot store to memory, and its first instruction may not even
 * have run), and a thread that passes no quiescent point (blocked, or
 * parked there) would stall an RCU-tasks-like wait forever; membarrier
 * only orders memory. So a retired stub may be handed to another ops while
 * such a thread is about to enter it, and the immediate (idx) it pushed
 * cannot tell the two owners apart; nor can it tell that its site left
 * the stub while it was parked (a filter change of the owner that began
 * and ended meanwhile). The C entries therefore verify, inside the read
 * side, that the call still belongs to the ops they found:
 *   - fast: the site at IP calls this very stub now (its `call` rel32 names
 *     the stub), and no filter change is in flight (routes_seq stable and
 *     even). While both hold, the stub's owner wants the site: sites are
 *     patched to a stub only after stub_ops[] names its owner, moved off it
 *     before it is released, and a release followed by a reuse needs a
 *     grace period, which the reader's own read side holds back; filters
 *     only change inside a routes_seq section.
 *   - slow (a site in the middle of a batch, moved on, or a filter change
 *     in flight): the ops is called if its current filter wants IP, else
 *     the entry is late: counted in late_entries, nobody called.
 * The site's bytes are read only for a stub whose entry in stub_ops[]
 * carries STUB_VERIFY: a stub handed out again after a release, or one a
 * site moved off while its owner kept it (set before that batch, whose
 * syncs publish it). A stub in its first life that no site has left can
 * only be entered for a site its owner wants, and routes_seq covers a
 * filter change in flight. Reading the site's code as data cost the light
 * body 1.5 ns per call on this machine (docs/PERFORMANCE.md).
 * CALL_OPS does the same with the literal (itself the route) and
 * routes_seq, and the list function counts a walk that finds nobody.
 */
static unsigned route_mask = DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS;
static unsigned long late_entries;

/* Odd while a filter change is being applied to the sites (set_glob): the
 * C entries then check the filter themselves. Written under patch_lock;
 * alone in its cache line, which every entry reads (counters written by
 * late or recursive entries would share it otherwise). */
static union {
	unsigned long v;
	char line[64];
} routes_seq __attribute__((aligned(64)));

static void routes_seq_begin(void)
{
	/* Ordered before the filter by the filter's release store. */
	__atomic_store_n(&routes_seq.v, routes_seq.v + 1, __ATOMIC_RELAXED);
}

static void routes_seq_end(void)
{
	/* after the literals and the batch */
	__atomic_store_n(&routes_seq.v, routes_seq.v + 1, __ATOMIC_RELEASE);
}

#define SITE_CALLS(ip, dest) ARCH_SITE_CALLS(ip, dest)

/* Seqcount read side of routes_seq: SEQ0 was read (acquire) before the
 * route's state; true if no filter change overlapped those reads. The
 * second read must follow the others: an acquire fence, no instruction on
 * x86 (its loads stay in order), dmb ishld on aarch64. TSan cannot model
 * fences: a compiler barrier there (x86 only, where it suffices). */
#if defined(__SANITIZE_THREAD__)
#define ROUTES_RMB() barrier()
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ROUTES_RMB() barrier()
#endif
#endif
#ifndef ROUTES_RMB
#define ROUTES_RMB() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif
#define ROUTES_STABLE(seq0)                                                                        \
	({                                                                                         \
		ROUTES_RMB();                                                                      \
		!((seq0)&1) && __atomic_load_n(&routes_seq.v, __ATOMIC_RELAXED) == (seq0);         \
	})

/* General registers only: the light path may call it as late_ops' func. */
static LIGHT_FN void late_func(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
			       struct dynftrace_regs *regs)
{
	(void)ip, (void)parent, (void)op, (void)regs;
	__atomic_fetch_add(&late_entries, 1, __ATOMIC_RELAXED);
}
static struct dynftrace_ops late_ops = {.func = late_func};

/*
 * The function-graph shortcut (the kernel calls its graph tracer directly
 * too): sites whose only ops is the one
 * marked by ops_set_graph() call the region's graph trampoline, whose
 * entry (tramp.S: dft_graph_entry) does the graph tracer's work itself,
 * without the generic register save. graph_route_ops is that ops while registered:
 * set before its sites are patched, cleared before the unregister grace
 * period (like stubs), read inside the read side by the generic entry
 * (dft_graph_thunk_slow; the assembly reads its owner's word instead, which
 * follows the same rule). Written under patch_lock.
 */
HIDDEN struct dynftrace_ops *graph_route_ops;
static struct dynftrace_ops *graph_marked; /* patch_lock */

void ops_set_graph(struct dynftrace_ops *ops)
{
	patch_lock();
	if (graph_marked && graph_marked != ops)
		graph_marked->state &= ~OPS_ST_GRAPH;
	graph_marked = ops;
	if (ops)
		ops->state |= OPS_ST_GRAPH;
	patch_unlock();
}

/* Sites of the graph ops that must not take the shortcut (patch_lock). */
static int (*graph_generic)(const struct site *s);

void ops_set_graph_generic(int (*fn)(const struct site *s))
{
	patch_lock();
	graph_generic = fn;
	patch_unlock();
}

/* The filter is read as list_func reads it (the caller holds the read
 * side); state is patch_lock's, read relaxed: a call racing a register or
 * an unregister may go either way, as one through the site would. */
int ops_wants_site(const struct dynftrace_ops *ops, uintptr_t ip)
{
	if (!(__atomic_load_n(&ops->state, __ATOMIC_RELAXED) & OPS_ST_REGISTERED))
		return 0;
	const struct ops_filter *f =
	    __atomic_load_n((struct ops_filter *const *)&ops->filter, __ATOMIC_ACQUIRE);
	return filter_wants(f, ip);
}

static int update_sites(void);

int __ops_graph_generic_changed(void)
{
	if (READ_ONCE(dft_killed))
		return 0;
	return update_sites();
}

/* Does S take the graph shortcut of its single ops O? */
static int graph_route(const struct dynftrace_ops *o, const struct site *s)
{
	return (o->state & OPS_ST_GRAPH) && !(graph_generic && graph_generic(s));
}

#define NO_STUB 0xffffu
/* In a stub_ops[] entry: the entries must check the site (see above). */
#define STUB_VERIFY 1ul
#define STUB_OPS(w) ((struct dynftrace_ops *)((uintptr_t)(w) & ~STUB_VERIFY))
struct ops_priv {
	uint16_t stub[MAX_REGIONS];
};

/* Does OPS take the light bodies (general registers only)? */
static unsigned ops_light(const struct dynftrace_ops *ops)
{
	return LIGHT_ROUTE && (ops->flags & DYNFTRACE_OPS_FL_GPR_ONLY);
}

/* The stub pool of OPS (0: full, 1: light), its first stub and size. */
static unsigned stub_pool_of(const struct dynftrace_ops *ops, uint32_t *lo, uint32_t *n)
{
	unsigned light = ops_light(ops);
	*lo = light ? REGION_STUBS_FULL : 0;
	*n = light ? REGION_STUBS_LIGHT : REGION_STUBS_FULL;
	return light;
}

static int stub_get(struct dynftrace_ops *ops, struct region *r)
{
	struct ops_priv *p = ops->tramp;
	if (!p) {
		p = malloc(sizeof(*p));
		if (!p)
			return -1;
		memset(p->stub, 0xff, sizeof(p->stub));
		ops->tramp = p;
	}
	if (p->stub[r->no] != NO_STUB)
		return p->stub[r->no];
	uint32_t lo, n, k;
	struct stub_pool *pl = &r->pool[stub_pool_of(ops, &lo, &n)];
	uintptr_t w = (uintptr_t)ops;
	if (pl->fresh < n) {
		k = lo + pl->fresh++;
	} else if (pl->ret_count) {
		k = r->retired[lo + pl->ret_head];
		pl->ret_head = (pl->ret_head + 1) % n;
		pl->ret_count--;
		w |= STUB_VERIFY; /* a thread of its last life may still come */
	} else {
		return -1;
	}
	__atomic_store_n(&r->stub_ops[k], (struct dynftrace_ops *)w, __ATOMIC_RELEASE);
	p->stub[r->no] = (uint16_t)k;
	return (int)k;
}

/* After the sites left OPS' stubs, before the grace period that lets the
 * caller free OPS: late entries read late_ops from then on. */
/* Site S calls a stub and is about to leave it: from now on the stub's
 * entries check the site (see STUB_VERIFY). */
static void stub_mark_verify(const struct site *s)
{
	struct region *r = s->obj->region;
	uintptr_t k = (s->target - r->base - REGION_STUB0) / ARCH_STUB_SIZE;
	if (s->target < r->base + REGION_STUB0 || k >= REGION_STUBS)
		return;
	uintptr_t w = (uintptr_t)__atomic_load_n(&r->stub_ops[k], __ATOMIC_RELAXED);
	__atomic_store_n(&r->stub_ops[k], (struct dynftrace_ops *)(w | STUB_VERIFY),
			 __ATOMIC_RELEASE);
}

static void stubs_release(struct dynftrace_ops *ops)
{
	struct ops_priv *p = ops->tramp;
	if (!p)
		return;
	for (size_t i = 0; i < nregions; i++) {
		struct region *r = &regions[i];
		uint32_t k = p->stub[i];
		if (k == NO_STUB)
			continue;
		uint32_t lo, n;
		struct stub_pool *pl = &r->pool[stub_pool_of(ops, &lo, &n)];
		__atomic_store_n(&r->stub_ops[k], &late_ops, __ATOMIC_RELEASE);
		r->retired[lo + (pl->ret_head + pl->ret_count) % n] = k;
		pl->ret_count++;
	}
	free(p);
	ops->tramp = NULL;
}

/* The ops of a site with ref == 1 whose owner is not known yet. */
static struct dynftrace_ops *owner_of(struct site *s)
{
	if (!s->owner)
		for (struct dynftrace_ops *o = ops_list; o; o = o->next)
			if (filter_wants(o->filter, s->addr)) {
				s->owner = o;
				break;
			}
	return s->owner;
}

enum site_action { ACT_IGNORE, ACT_MAKE_CALL, ACT_MAKE_NOP, ACT_MODIFY_CALL };

/* A site calls its target, but jumps to its graph thunk (which calls the
 * function itself: see tramp.S). */
static void site_insn(uintptr_t site, uint8_t route, uintptr_t target, uint8_t out[ARCH_SITE_SIZE])
{
	if (route == ROUTE_GRAPH)
		arch_site_jump(site, target, out);
	else
		arch_site_call(site, target, out);
}

/*
 * ftrace_check_record: what must happen to S. TARGET, ROUTE and LIT (the
 * literal value wanted, CALL_OPS sites only) describe the wanted state.
 * A wanted site off the CALL_OPS route keeps the list ops in its literal
 * (as arm64 does): a thread still on its way through the callops
 * trampoline after the site moved on reaches every ops that wants the
 * site, so an ops that keeps the site loses no call to a route change.
 */
static enum site_action check_site(struct site *s, uintptr_t *target, uint8_t *route,
				   uintptr_t *lit)
{
	uint32_t ref = s->flags & SITE_FL_REF_MASK;
	/* A relocated entry takes no direct call: it could not keep every
	 * register. */
	int reloc = (s->flags & SITE_FL_RELOC) != 0;
	int want = (ref || (s->direct && !reloc)) && !(s->flags & SITE_FL_DISABLED) &&
		   !READ_ONCE(dft_killed);
	int en = (s->flags & SITE_FL_ENABLED) != 0;
	struct region *r = s->obj->region;
	*lit = 0;
	*target = s->obj->caller;
	*route = ROUTE_LIST;
	if (reloc) {
		/* The arena's preserving trampoline (entries.c), or, for the
		 * graph tracer alone, the site's preserving thunk. */
		struct dynftrace_ops *o = want && ref == 1 ? owner_of(s) : NULL;
		uintptr_t thunk;
		*target = s->obj->blocks;
		if (o)
			*route = ROUTE_SINGLE; /* dft_dispatch: the single ops, or the list */
		if (o && graph_route(o, s) && (route_mask & DYNFTRACE_ROUTE_TRAMP) &&
		    (thunk = site_thunk(s)) != 0 && arch_site_reaches(s->at, thunk)) {
			*target = thunk;
			*route = ROUTE_GRAPH;
		} else if (o && ops_light(o) && (route_mask & DYNFTRACE_ROUTE_CALL_OPS) &&
			   arch_site_reaches(s->at, r->base + REGION_RELOC_LIGHT)) {
			/* The block's literal holds the ops, as CALL_OPS's does. */
			*target = r->base + REGION_RELOC_LIGHT;
			*route = ROUTE_CALLOPS;
			*lit = (uintptr_t)o;
		}
	} else if (want && s->direct) {
		/* A direct call owns the site (register_ftrace_direct). */
		uintptr_t a = s->direct->reserved[0];
		*target = arch_site_reaches(s->at, a) ? a : region_far_jump(r, a);
		if (*target && !arch_site_reaches(s->at, *target))
			*target = 0; /* riscv64: the far jump out of the site's reach too */
		*route = ROUTE_DIRECT;
		if (!*target) {
			*target = s->obj->caller;
			*route = ROUTE_LIST;
			want = ref != 0;
		}
	} else if (want && ref == 1) {
		struct dynftrace_ops *o = owner_of(s);
		uintptr_t thunk;
		int k;
		*route = ROUTE_SINGLE;
		if (!o) {
			/* counted but nobody wants it: an inconsistency */
			*route = ROUTE_LIST;
		} else if (graph_route(o, s) && (route_mask & DYNFTRACE_ROUTE_TRAMP) &&
			   (thunk = site_thunk(s)) != 0) {
			*target = thunk;
			*route = ROUTE_GRAPH; /* a jmp to the site's thunk */
		} else if ((route_mask & DYNFTRACE_ROUTE_CALL_OPS) && s->lit) {
			*target = r->base + (ops_light(o) ? REGION_CALLOPS_LIGHT : REGION_CALLOPS);
			*route = ROUTE_CALLOPS;
			*lit = (uintptr_t)o;
		} else if ((route_mask & DYNFTRACE_ROUTE_TRAMP) && (k = stub_get(o, r)) >= 0) {
			*target = r->base + REGION_STUB0 + ARCH_STUB_SIZE * (uintptr_t)k;
			*route = ROUTE_TRAMP;
		}
	} else if (want && (route_mask & DYNFTRACE_ROUTE_CALL_OPS) && s->lit) {
		*target = r->base + REGION_CALLOPS;
		*route = ROUTE_CALLOPS;
		*lit = (uintptr_t)&list_ops;
	}
	if (want && !reloc && !arch_site_reaches(s->at, *target)) {
		/* A target the site's call cannot reach (riscv64: beyond its
		 * jal, outside its auipc's window): the common trampoline its
		 * prologue aims at, with the literal naming the single ops or
		 * the list, or the list function. */
		struct dynftrace_ops *o = ref == 1 ? owner_of(s) : NULL;
		if (s->lit && arch_site_reaches(s->at, r->base + REGION_CALLOPS)) {
			*target = r->base + REGION_CALLOPS;
			*route = ROUTE_CALLOPS;
			*lit = o && (route_mask & DYNFTRACE_ROUTE_CALL_OPS) ? (uintptr_t)o
									    : (uintptr_t)&list_ops;
		} else {
			*target = s->obj->caller;
			*route = o ? ROUTE_SINGLE : ROUTE_LIST;
		}
	}
	if (want && s->lit && !*lit)
		*lit = (uintptr_t)&list_ops; /* off the CALL_OPS route, see above */
	if (want && !en)
		return ACT_MAKE_CALL;
	if (!want && en)
		return ACT_MAKE_NOP;
	if (want && en && s->target != *target)
		return ACT_MODIFY_CALL;
	return ACT_IGNORE;
}

static int entry_addr_cmp(const void *a, const void *b)
{
	const struct patch_entry *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Write the N site changes V. Relocated entries' sites (RELOC[k]) lie
 * alone in an aligned 8-byte word of their block (entries.c): one atomic
 * store each, no breakpoint, so the C library's own code, which runs with
 * every signal blocked in places, never meets a SIGTRAP it cannot take.
 * The rest by the breakpoint batch. Where code is written through
 * /proc/self/mem the relocated ones join the batch.
 */
static int write_sites(const struct patch_entry *v, const uint8_t *reloc, size_t n)
{
	struct patch_entry *b = malloc((n + 1) * sizeof(*b)), *a = malloc((n + 1) * sizeof(*a));
	size_t nb = 0, na = 0;
	int err = 0;
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		if (!reloc[k] || (v[k].addr & 7) || v[k].len > 8) {
			b[nb++] = v[k];
			continue;
		}
		struct patch_entry *e = &a[na++];
		e->addr = v[k].addr;
		e->len = 8;
		memcpy(e->old, (const void *)e->addr, 8); /* the tail stays */
		memcpy(e->new, e->old, 8);
		memcpy(e->old, v[k].old, v[k].len);
		memcpy(e->new, v[k].new, v[k].len);
	}
	qsort(a, na, sizeof(*a), entry_addr_cmp);
	err = patch_write_atomic(a, na);
	if (err == -EOPNOTSUPP) {
		for (size_t k = 0; k < na; k++)
			a[k].len = ARCH_SITE_SIZE;
		memcpy(b + nb, a, na * sizeof(*a));
		nb += na;
		err = 0;
	}
	if (!err)
		err = patch_batch(b, nb);
	free(a);
	free(b);
	return err;
}

/* Turn every enabled site back into a NOP after a kill; best effort. */
static void disable_all(void)
{
	struct patch_entry *v = malloc((site_count + 1) * sizeof(*v));
	uint8_t *rel = malloc(site_count + 1);
	size_t n = 0;
	if (!v || !rel) {
		free(v);
		free(rel);
		return;
	}
	for (size_t i = 0; i < site_count; i++) {
		struct site *s = &site_tab[i];
		if (!(s->flags & SITE_FL_ENABLED))
			continue;
		struct patch_entry *e = &v[n];
		e->addr = s->at;
		e->len = ARCH_SITE_SIZE;
		site_insn(s->at, s->route, s->target, e->old);
		if (memcmp((const void *)s->at, e->old, ARCH_SITE_SIZE))
			continue; /* not what we wrote: leave it alone */
		arch_site_nop(e->new);
		rel[n++] = (s->flags & SITE_FL_RELOC) != 0;
	}
	if (write_sites(v, rel, n) == 0) {
		for (size_t i = 0; i < site_count; i++)
			site_tab[i].flags &= ~SITE_FL_ENABLED;
	}
	/* No literal may keep an ops its owner will free: they all go to 0. */
	n = 0;
	for (size_t i = 0; i < site_count; i++) {
		struct site *s = &site_tab[i];
		if (!s->lit || !s->lit_val)
			continue;
		struct patch_entry *e = &v[n++];
		e->addr = s->lit;
		e->len = 8;
		memcpy(e->old, &s->lit_val, 8);
		memset(e->new, 0, 8);
	}
	qsort(v, n, sizeof(*v), entry_addr_cmp); /* see update_sites */
	if (patch_write_data(v, n) == 0)
		for (size_t i = 0; i < site_count; i++)
			site_tab[i].lit_val = 0;
	free(v);
	free(rel);
}

/*
 * Make every site match its accounting. CALL_OPS literals change first
 * (one atomic store each: a thread reads the old or the new ops, both
 * alive until the caller's grace period), then every code change in one
 * batch. patch_lock held.
 */
static int update_sites(void)
{
	struct patch_entry *v = calloc(site_count + 1, sizeof(*v));
	struct patch_entry *lv = calloc(site_count + 1, sizeof(*lv));
	uint32_t *act = malloc((site_count + 1) * sizeof(*act));
	uint8_t *routes = malloc(site_count + 1), *routes_rel = malloc(site_count + 1);
	size_t n = 0, nl = 0;
	int err = 0;
	if (!v || !act || !lv || !routes || !routes_rel) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < site_count; i++) {
		struct site *s = &site_tab[i];
		uintptr_t target, lit;
		uint8_t route;
		enum site_action a = check_site(s, &target, &route, &lit);
		if (s->lit && s->lit_val != lit) {
			struct patch_entry *l = &lv[nl++];
			l->addr = s->lit;
			l->len = 8;
			memcpy(l->old, &s->lit_val, 8);
			memcpy(l->new, &lit, 8);
		}
		routes[i] = route;
		if (a == ACT_IGNORE) {
			s->route = (s->flags & SITE_FL_ENABLED) ? route : ROUTE_NONE;
			continue;
		}
		if ((s->flags & SITE_FL_ENABLED) && s->route == ROUTE_TRAMP &&
		    (a == ACT_MAKE_NOP || target != s->target))
			stub_mark_verify(s); /* leaving its stub */
		struct patch_entry *e = &v[n];
		e->addr = s->at;
		e->len = ARCH_SITE_SIZE;
		if (s->flags & SITE_FL_ENABLED)
			site_insn(s->at, s->route, s->target, e->old);
		else
			arch_site_nop(e->old);
		if (a == ACT_MAKE_NOP)
			arch_site_nop(e->new);
		else
			site_insn(s->at, route, target, e->new);
		act[n++] = (uint32_t)i;
	}
	/* By address: a relocated entry's literal lies in its arena, not by
	 * its function. */
	qsort(lv, nl, sizeof(*lv), entry_addr_cmp);
	err = patch_write_data(lv, nl);
	if (err == 0) {
		for (size_t i = 0; i < site_count; i++) {
			struct site *s = &site_tab[i];
			struct patch_entry key = {.addr = s->lit}, *l;
			if (s->lit && (l = bsearch(&key, lv, nl, sizeof(*lv), entry_addr_cmp)))
				memcpy(&s->lit_val, l->new, 8);
		}
		for (size_t k = 0; k < n; k++)
			routes_rel[k] = (site_tab[act[k]].flags & SITE_FL_RELOC) != 0;
		err = write_sites(v, routes_rel, n);
	}
	if (err == 0) {
		for (size_t k = 0; k < n; k++) {
			struct site *s = &site_tab[act[k]];
			uintptr_t t = arch_site_branch_target(s->at, v[k].new, NULL);
			if (t) {
				s->flags |= SITE_FL_ENABLED;
				s->target = t;
				s->route = routes[act[k]];
			} else {
				s->flags &= ~SITE_FL_ENABLED;
				s->target = 0;
				s->route = ROUTE_NONE;
			}
		}
	} else {
		uintptr_t bad = patch_last_error_addr();
		const char *fn = NULL, *obj = "?";
		for (size_t k = 0; bad && k < site_count; k++)
			if (site_tab[k].at == bad || site_tab[k].lit == bad) {
				fn = site_func_name(&site_tab[k]);
				obj = site_tab[k].obj->path;
			}
		char where[128] = "";
		if (fn)
			snprintf(where, sizeof(where), " (%s in %s)", fn, obj);
		dft_kill("patching %zu sites failed: %s%s", n, patch_last_error(), where);
		disable_all();
	}
out:
	free(v);
	free(lv);
	free(act);
	free(routes);
	free(routes_rel);
	return err;
}

/* Choose what the trampoline calls: the only ops, or the list. */
static void update_dispatch(void)
{
	struct dynftrace_ops *d = &list_ops;
	if (ops_list && !ops_list->next && route_mask)
		d = ops_list; /* route_mask 0: list function only, the baseline */
	__atomic_store_n(&dispatch_ops, d, __ATOMIC_RELEASE);
}

static int api_enter(void)
{
	if (dft_self.rcu_nest || dft_self.recursion)
		return -EDEADLK;
	dft_ensure_init();
	patch_lock();
	if (READ_ONCE(dft_killed)) {
		patch_unlock();
		return -ENODEV;
	}
	return 0;
}

int dynftrace_register_ops(struct dynftrace_ops *ops)
{
	if (!ops || !ops->func || (ops->flags & ~(unsigned long)DYNFTRACE_OPS_FL_GPR_ONLY))
		return -EINVAL;
	int err = api_enter();
	if (err)
		return err;
	if (ops->state & OPS_ST_REGISTERED) {
		err = -EBUSY;
		goto out;
	}
	/* Objects loaded since the filter was set get the same globs. */
	struct ops_filter *f = ops->filter;
	if (f && f->nlog && f->gen != sites_gen) {
		/* objects came or went since the sets were computed */
		struct ops_filter *nf = calloc(1, sizeof(*nf));
		if (!nf) {
			err = -ENOMEM;
			goto out;
		}
		nf->log = f->log;
		nf->nlog = f->nlog;
		nf->selective = f->selective;
		f->log = NULL;
		f->nlog = 0;
		if (filter_replay(nf, 0, 0)) {
			f->log = nf->log; /* keep the history for a retry */
			f->nlog = nf->nlog;
			nf->log = NULL;
			nf->nlog = 0;
			filter_free(nf);
			err = -ENOMEM;
			goto out;
		}
		filter_free(f);
		nf->gen = sites_gen;
		ops->filter = f = nf;
	}
	ops->next = ops_list;
	ops->state |= OPS_ST_REGISTERED;
	__atomic_store_n(&ops_list, ops, __ATOMIC_RELEASE);
	if (ops->state & OPS_ST_GRAPH)
		__atomic_store_n(&graph_route_ops, ops, __ATOMIC_RELEASE);
	/* The list first, so no thread calls ops->func for another's site. */
	if (ops->next)
		__atomic_store_n(&dispatch_ops, &list_ops, __ATOMIC_RELEASE);
	sites_ref_update(f, +1, ops);
	err = update_sites();
	if (err) {
		/* Not registered after all (tracing is stopped by now). */
		__atomic_store_n(&ops_list, ops->next, __ATOMIC_RELEASE);
		ops->state &= ~OPS_ST_REGISTERED;
		sites_ref_update(f, -1, ops);
		stubs_release(ops);
		if (graph_route_ops == ops)
			__atomic_store_n(&graph_route_ops, NULL, __ATOMIC_RELEASE);
		rcu_synchronize();
		ops->next = NULL;
	}
	update_dispatch();
out:
	patch_unlock();
	return err;
}

int dynftrace_register_direct(struct dynftrace_ops *ops, unsigned long addr)
{
	/* No flag means anything to a direct call (GPR_ONLY: no trampoline
	 * runs, ADDR has its own contract). */
	if (!ops || !addr || ops->flags)
		return -EINVAL;
	int err = api_enter();
	if (err)
		return err;
	if (ops->state & (OPS_ST_REGISTERED | OPS_ST_DIRECT)) {
		err = -EBUSY;
		goto out;
	}
	const struct ops_filter *f = ops->filter;
	if (f && f->gen != sites_gen && f->nlog) {
		err = -ESTALE; /* objects changed: set the filter again */
		goto out;
	}
	size_t n = 0;
	for (size_t i = 0; i < site_count; i++)
		if (filter_wants(f, site_tab[i].addr)) {
			if (site_tab[i].direct) {
				err = -EBUSY; /* one direct call per site */
				goto out;
			}
			n++;
		}
	if (!n) {
		err = -ENOENT;
		goto out;
	}
	ops->reserved[0] = addr;
	ops->state |= OPS_ST_DIRECT;
	for (size_t i = 0; i < site_count; i++)
		if (filter_wants(f, site_tab[i].addr))
			site_tab[i].direct = ops;
	err = update_sites();
	if (err) {
		for (size_t i = 0; i < site_count; i++)
			if (site_tab[i].direct == ops)
				site_tab[i].direct = NULL;
		ops->state &= ~OPS_ST_DIRECT;
	}
out:
	patch_unlock();
	return err;
}

static int unregister_direct(struct dynftrace_ops *ops)
{
	for (size_t i = 0; i < site_count; i++)
		if (site_tab[i].direct == ops)
			site_tab[i].direct = NULL;
	ops->state &= ~OPS_ST_DIRECT;
	if (READ_ONCE(dft_killed))
		return 0;
	return update_sites();
}

int dynftrace_unregister_ops(struct dynftrace_ops *ops)
{
	if (!ops)
		return -EINVAL;
	if (ops->state & OPS_ST_DIRECT) {
		int err = api_enter();
		if (err)
			return err;
		err = unregister_direct(ops);
		patch_unlock();
		return err;
	}
	if (dft_self.rcu_nest || dft_self.recursion)
		return -EDEADLK;
	dft_ensure_init();
	patch_lock();
	int err = 0;
	if (!(ops->state & OPS_ST_REGISTERED)) {
		err = -EINVAL;
		goto out;
	}
	struct dynftrace_ops **pp = &ops_list;
	while (*pp && *pp != ops)
		pp = &(*pp)->next;
	if (!*pp) {
		dft_kill("registered ops %p missing from the list", (void *)ops);
		err = -EINVAL;
		goto out;
	}
	__atomic_store_n(&dispatch_ops, &list_ops, __ATOMIC_RELEASE);
	__atomic_store_n(pp, ops->next, __ATOMIC_RELEASE);
	ops->state &= ~OPS_ST_REGISTERED;
	if (!READ_ONCE(dft_killed)) {
		sites_ref_update(ops->filter, -1, ops);
		update_sites(); /* a failure kills and disables everything */
	}
	/* Its stubs now lead to late_ops: a thread still on its way through
	 * one reads that inside its read side. Nobody can reach ops now; wait
	 * for those who already had. */
	stubs_release(ops);
	if (graph_route_ops == ops)
		__atomic_store_n(&graph_route_ops, NULL, __ATOMIC_RELEASE);
	rcu_synchronize();
	update_dispatch();
	ops->next = NULL;
out:
	patch_unlock();
	return err;
}

static int set_glob(struct dynftrace_ops *ops, const char *glob, int reset, int notrace)
{
	if (!ops)
		return -EINVAL;
	if (glob && *glob && !dft_glob_valid(glob[0] == '!' ? glob + 1 : glob))
		return -EINVAL;
	int err = api_enter();
	if (err)
		return err;
	struct ops_filter *old = ops->filter;
	struct ops_filter *nf = filter_clone(old);
	if (!nf) {
		err = -ENOMEM;
		goto out;
	}
	struct addr_set *set = notrace ? &nf->notrace : &nf->filter;
	if (reset) {
		free(set->a);
		set->a = NULL;
		set->n = 0;
		/* drop this selection's history: it starts over */
		size_t k = 0;
		for (size_t i = 0; i < nf->nlog; i++) {
			if (nf->log[i].notrace == notrace)
				free(nf->log[i].glob);
			else
				nf->log[k++] = nf->log[i];
		}
		nf->nlog = k;
	}
	if (glob && glob[0]) {
		long m = set_apply(set, glob, 0, 0);
		if (m < 0) {
			err = (int)m;
		} else if (m == 0) {
			err = -ENOENT;
		} else {
			struct glob_op *nl = realloc(nf->log, (nf->nlog + 1) * sizeof(*nl));
			if (!nl) {
				err = -ENOMEM;
			} else {
				nf->log = nl;
				nf->log[nf->nlog].glob = strdup(glob);
				nf->log[nf->nlog].notrace = notrace;
				if (nf->log[nf->nlog].glob)
					nf->nlog++;
				else
					err = -ENOMEM;
			}
		}
	}
	if (err) {
		filter_free(nf);
		goto out;
	}
	nf->gen = sites_gen; /* a clone of a stale filter is stale too */
	if (old && old->gen != sites_gen && old->nlog) {
		/* recompute from the log over today's sites */
		struct ops_filter *fresh = calloc(1, sizeof(*fresh));
		if (!fresh) {
			/* the clone may name addresses of unloaded objects: never
			 * use it */
			filter_free(nf);
			err = -ENOMEM;
			goto out;
		}
		fresh->log = nf->log;
		fresh->nlog = nf->nlog;
		fresh->selective = nf->selective;
		fresh->gen = sites_gen;
		nf->log = NULL;
		nf->nlog = 0;
		filter_free(nf);
		nf = fresh;
		if (filter_replay(nf, 0, 0)) {
			filter_free(nf);
			err = -ENOMEM;
			goto out;
		}
	}
	/* A change of the filter set decides anew whether it selects (an
	 * emptied set means every function, as in the kernel); a change of
	 * notrace keeps that. */
	if (!notrace)
		nf->selective = nf->filter.n != 0;
	if (!nf->nlog && !nf->filter.n && !nf->notrace.n) {
		/* Both selections reset: no filter at all, as a zeroed ops. This
		 * is how a caller releases the memory before freeing the ops. */
		filter_free(nf);
		nf = NULL;
	}
	if (!(ops->state & OPS_ST_REGISTERED)) {
		ops->filter = nf;
		filter_free(old);
		goto out;
	}
	sites_ref_update(old, -1, ops);
	sites_ref_update(nf, +1, ops);
	routes_seq_begin(); /* the entries check filters until the sites follow */
	__atomic_store_n((struct ops_filter **)&ops->filter, nf, __ATOMIC_RELEASE);
	err = update_sites();
	routes_seq_end();
	rcu_synchronize();
	filter_free(old);
out:
	patch_unlock();
	return err;
}

int dynftrace_set_filter(struct dynftrace_ops *ops, const char *glob, int reset)
{
	return set_glob(ops, glob, reset, 0);
}

int dynftrace_set_notrace(struct dynftrace_ops *ops, const char *glob, int reset)
{
	return set_glob(ops, glob, reset, 1);
}

int dynftrace_free_filter(struct dynftrace_ops *ops)
{
	if (!ops)
		return -EINVAL;
	if (dft_self.rcu_nest || dft_self.recursion)
		return -EDEADLK;
	patch_lock();
	int err = -EBUSY;
	if (!(ops->state & OPS_ST_REGISTERED)) {
		filter_free(ops->filter);
		ops->filter = NULL;
		err = 0;
	}
	patch_unlock();
	return err;
}

/* ---- objects coming and going (sites.c, patch_lock held) --------------- */

/*
 * Objects and filters. The accounting invariant, kept under patch_lock:
 *
 *   for every site S in site_tab:
 *     ref(S) == number of registered ops O with filter_wants(O->filter, S)
 *
 * A filter change (set_glob), a registration, an object's sites added
 * (ops_sites_added) and removed (ops_sites_removed) each run whole under
 * patch_lock, so none sees another half done. An object's sites leave
 * site_tab together with their references; the filters of registered ops
 * lose the object's addresses in the same critical section, and that must
 * change nothing outside the object (an emptied filter set stays
 * `selective`). A filter of an ops not registered keeps stale addresses
 * until it is used; `gen` tells, and it is then recomputed from its glob
 * log over today's sites, never applied as it is: a new object may be
 * mapped where the old one was.
 *
 * Unload and load are ordered too: dlclose holds patch_lock across the
 * unmap and its rescan, and dlopen and dlclose exclude each other
 * (interpose.c), so no object is unloaded and loaded again at the same
 * address between an unmap and the rescan that forgets it.
 *
 * Which records a batch may touch: only sites in site_tab, read under the
 * patch_lock that the batch holds. Every one of them belongs to an object
 * that is mapped now and was scanned since it was mapped, so its bytes are
 * the ones its record says (the batch still compares before it writes).
 */

static void ops_sites_added(uintptr_t lo, uintptr_t hi)
{
	int changed = 0;
	for (struct dynftrace_ops *o = ops_list; o; o = o->next) {
		struct ops_filter *f = o->filter;
		if (f && f->nlog) {
			/* In place: the new addresses are not traced by anyone yet,
			 * and the arrays are replaced, not resized, by set_apply...
			 * readers may hold the old arrays, so clone. */
			struct ops_filter *nf = filter_clone(f);
			if (!nf || filter_replay(nf, lo, hi)) {
				filter_free(nf);
				dft_log("out of memory applying filters to a new object");
				continue;
			}
			nf->gen = sites_gen;
			__atomic_store_n((struct ops_filter **)&o->filter, nf, __ATOMIC_RELEASE);
			rcu_synchronize();
			filter_free(f);
			f = nf;
		}
		for (size_t i = 0; i < site_count; i++) {
			struct site *s = &site_tab[i];
			if (s->addr >= lo && s->addr < hi && filter_wants(f, s->addr)) {
				s->owner = (s->flags & SITE_FL_REF_MASK) ? NULL : o;
				s->flags = (s->flags & ~SITE_FL_REF_MASK) |
					   (((s->flags & SITE_FL_REF_MASK) + 1) & SITE_FL_REF_MASK);
				changed = 1;
			}
		}
	}
	if (changed)
		update_sites();
}

static void set_remove_range(struct addr_set *s, uintptr_t lo, uintptr_t hi)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->a[i] < lo || s->a[i] >= hi)
			s->a[k++] = s->a[i];
	s->n = k;
}

static void ops_sites_removed(uintptr_t lo, uintptr_t hi)
{
	for (struct dynftrace_ops *o = ops_list; o; o = o->next) {
		struct ops_filter *f = o->filter;
		if (!f)
			continue;
		struct ops_filter *nf = filter_clone(f);
		if (!nf) {
			/* Its addresses may soon be another object's. */
			dft_kill("out of memory forgetting an unloaded object's functions");
			continue;
		}
		size_t before = nf->filter.n;
		set_remove_range(&nf->filter, lo, hi);
		set_remove_range(&nf->notrace, lo, hi);
		if (before && !nf->filter.n) {
			/* Its whole selection went away: trace nothing rather than
			 * everything. Unregistering is the caller's business. */
			dft_debug("every function selected by an ops was unloaded");
		}
		__atomic_store_n((struct ops_filter **)&o->filter, nf, __ATOMIC_RELEASE);
		rcu_synchronize();
		filter_free(f);
	}
}

/* ---- the traced path --------------------------------------------------- */

static void list_func(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
		      struct dynftrace_regs *regs)
{
	int called = 0;
	(void)op;
	for (struct dynftrace_ops *o = __atomic_load_n(&ops_list, __ATOMIC_ACQUIRE); o;
	     o = __atomic_load_n(&o->next, __ATOMIC_ACQUIRE)) {
		const struct ops_filter *f =
		    __atomic_load_n((struct ops_filter **)&o->filter, __ATOMIC_ACQUIRE);
		if (filter_wants(f, ip)) {
			o->func(ip, parent, o, regs);
			called = 1;
		}
	}
	/* A site is enabled only while an ops wants it: nobody wants it now,
	 * so the thread entered before it changed (a late entry). */
	if (unlikely(!called))
		late_func(ip, parent, NULL, regs);
}

/* Entering a callback path: the recursion guard, and the thread's
 * registration for grace periods. 0: go ahead. */
static inline int cb_enter(struct dft_thread *t)
{
	if (unlikely(t->recursion | t->api_depth)) {
		__atomic_fetch_add(&dft_recursion_miss, 1, __ATOMIC_RELAXED);
		return -1;
	}
	t->recursion = 1;
	if (unlikely(t->state != THREAD_REGISTERED)) {
		if (t->state == THREAD_EXITING ||
		    dft_runtime_stack((uintptr_t)__builtin_frame_address(0))) {
			if (t->state != THREAD_EXITING)
				t->api_depth++; /* one of ours, not started yet: for life */
			t->recursion = 0;
			return -1; /* its TLS is about to go, or it is ours: no callbacks */
		}
		rcu_register_self();
	}
	rcu_read_lock();
	return 0;
}

static inline void cb_leave(struct dft_thread *t)
{
	rcu_read_unlock();
	t->recursion = 0;
}

/* Common trampoline: the single ops, or the list. */
HIDDEN void dft_dispatch(unsigned long ip, unsigned long parent, struct dynftrace_regs *regs)
{
	struct dft_thread *t = &dft_self;
	if (cb_enter(t))
		return;
	struct dynftrace_ops *op = __atomic_load_n(&dispatch_ops, __ATOMIC_ACQUIRE);
	op->func(ip, parent, op, regs);
	cb_leave(t);
}

/* A call that did not pass the fast check (see "Stub reuse and late
 * entries"): OP is called if its filter wants IP now, else it is a late
 * entry. Inside the read side; out of line, so the fast paths stay lean. */
static __attribute__((noinline, cold)) void entry_slow(struct dynftrace_ops *op, unsigned long ip,
						       unsigned long parent,
						       struct dynftrace_regs *regs)
{
	if (op && op != &late_ops && op != &list_ops) {
		const struct ops_filter *f =
		    __atomic_load_n((struct ops_filter **)&op->filter, __ATOMIC_ACQUIRE);
		if (!filter_wants(f, ip))
			op = NULL;
	}
	/* the list tests every filter itself; late_ops counts */
	if (op)
		op->func(ip, parent, op, regs);
	else
		late_func(ip, parent, NULL, regs);
}

/* Per-ops stub (the kernel's per-ops trampoline): IDX names the region and stub; its ops is read
 * inside the read side, so a late entry finds late_ops, never a freed ops,
 * and the site is checked to call this stub still, so a stub reused by
 * another ops never calls it for a site it does not want. IDX comes from
 * our own stub, of a region published before any site called it. */
HIDDEN void dft_stub_entry(unsigned long ip, unsigned long parent, struct dynftrace_regs *regs,
			   unsigned long idx)
{
	struct dft_thread *t = &dft_self;
	if (cb_enter(t))
		return;
	const struct region *r = &regions[idx >> 12];
	size_t k = idx & 0xfff;
	unsigned long seq = __atomic_load_n(&routes_seq.v, __ATOMIC_ACQUIRE);
	struct dynftrace_ops *w = __atomic_load_n(&r->stub_ops[k], __ATOMIC_ACQUIRE);
	struct dynftrace_ops *op = STUB_OPS(w);
	/* fast: op is the owner, or late_ops whose func counts */
	if (likely(!((uintptr_t)w & STUB_VERIFY) ||
		   SITE_CALLS(ip, r->base + REGION_STUB0 + ARCH_STUB_SIZE * k)) &&
	    likely(ROUTES_STABLE(seq)))
		op->func(ip, parent, op, regs);
	else
		entry_slow(op, ip, parent, regs);
	cb_leave(t);
}

/* The light per-ops body (tramp.S) reads these fields of dft_self. */
_Static_assert(__builtin_offsetof(struct dft_thread, recursion) == THR_RECURSION &&
		   __builtin_offsetof(struct dft_thread, rcu_nest) == THR_RECURSION + 4 &&
		   __builtin_offsetof(struct dft_thread, api_depth) == THR_API_DEPTH &&
		   __builtin_offsetof(struct dft_thread, state) == THR_API_DEPTH + 4 &&
		   sizeof(dft_self.recursion) == 4 && sizeof(dft_self.rcu_nest) == 4 &&
		   sizeof(dft_self.api_depth) == 4 && sizeof(dft_self.state) == 4 &&
		   __builtin_offsetof(struct dft_thread, rcu_ctr) == THR_RCU_CTR &&
		   sizeof(dft_self.rcu_ctr) == 8 && THR_CALLBACK == (1ul << 32 | 1) &&
		   THR_IDLE == (unsigned long)THREAD_REGISTERED << 32 &&
		   THREAD_REGISTERED == THREAD_REGISTERED_ASM &&
		   __builtin_offsetof(struct dynftrace_ops, func) == 0 &&
		   __builtin_offsetof(struct dynftrace_ops, flags) == 8 &&
		   DYNFTRACE_OPS_FL_GPR_ONLY == DYNFTRACE_OPS_FL_GPR_ONLY_ASM,
	       "light body offsets");

/* What the light per-ops body's copies need (sites.c): dft_self's offset
 * from the thread pointer (initial-exec TLS: the same in every thread),
 * routes_seq and the RCU counter. */
HIDDEN void ops_light_slots(intptr_t *tls, const void **seq, const void **gp)
{
	*tls = (intptr_t)((uintptr_t)&dft_self - arch_thread_pointer());
	*seq = &routes_seq.v;
	*gp = &rcu_gp_ctr;
}

/* The graph shortcut's generic entry (tramp.S: dft_graph_entry), for what
 * its fast path does not handle; all argument registers saved. 0: traced
 * (the thunk calls the function, which returns through it), 1: not. A late
 * entry (the ops left) is counted. */
HIDDEN unsigned long dft_graph_thunk_slow(uint32_t id, uintptr_t *slot, struct dynftrace_regs *regs,
					  uintptr_t thunk_ret)
{
	struct dft_thread *t = &dft_self;
	(void)regs;
	if (cb_enter(t))
		return 1;
	unsigned long r = 1;
	int (*enter)(uint32_t, uintptr_t *, uintptr_t) = CORE_HOOK(graph_enter);
	if (__atomic_load_n(&graph_route_ops, __ATOMIC_ACQUIRE) && enter)
		r = enter(id, slot, thunk_ret + THUNK_HOOK) ? 0 : 1;
	else
		late_func(0, 0, NULL, regs);
	cb_leave(t);
	return r;
}

/* CALL_OPS (as on arm64 and riscv): the ops is the literal before the function. The
 * literal is the route itself: outside a filter change (routes_seq), an
 * ops in it wants the site. A cleared literal, or an ops whose filter no
 * longer wants the site (a filter change in flight), is a late entry. */
HIDDEN void dft_callops_entry(unsigned long ip, unsigned long parent, struct dynftrace_regs *regs)
{
	struct dft_thread *t = &dft_self;
	if (cb_enter(t))
		return;
	uintptr_t f = ip - (uintptr_t)arch_marker_before(ip);
	unsigned long seq = __atomic_load_n(&routes_seq.v, __ATOMIC_ACQUIRE);
	struct dynftrace_ops *op =
	    __atomic_load_n((struct dynftrace_ops **)(f - 8), __ATOMIC_ACQUIRE);
	if (likely(op != NULL) && likely(ROUTES_STABLE(seq)))
		op->func(ip, parent, op, regs);
	else
		entry_slow(op, ip, parent, regs);
	cb_leave(t);
}

int dynftrace_set_routes(unsigned routes)
{
	if (routes & ~(unsigned)(DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS))
		return -EINVAL;
	int err = api_enter();
	if (err)
		return err;
	__atomic_store_n(&dispatch_ops, &list_ops, __ATOMIC_RELEASE);
	route_mask = routes;
	err = update_sites();
	rcu_synchronize();
	update_dispatch();
	patch_unlock();
	return err;
}

static void ops_sites_added(uintptr_t lo, uintptr_t hi);
static void ops_sites_removed(uintptr_t lo, uintptr_t hi);

/* Start-up, before the first object is scanned: what the site table calls,
 * and DYNFTRACE_ROUTES. */
HIDDEN void ops_init(void)
{
	static const struct sites_client client = {
	    .dispatch = (void *)dft_dispatch,
	    .callops_entry = (void *)dft_callops_entry,
	    .stub_entry = (void *)dft_stub_entry,
	    .light_slots = ops_light_slots,
	    .added = ops_sites_added,
	    .removed = ops_sites_removed,
	};
	sites_set_client(&client);
	const char *v = dft_getenv("DYNFTRACE_ROUTES");
	if (!v || !*v)
		return;
	unsigned m = 0;
	if (strstr(v, "tramp"))
		m |= DYNFTRACE_ROUTE_TRAMP;
	if (strstr(v, "callops") || strstr(v, "call_ops"))
		m |= DYNFTRACE_ROUTE_CALL_OPS;
	if (!strcmp(v, "all")) /* not strstr: "callops" holds "all" */
		m = DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS;
	route_mask = m;
}

/* ---- introspection ----------------------------------------------------- */

void dynftrace_get_stats(struct dynftrace_stats *st)
{
	struct patch_counters c;
	memset(st, 0, sizeof(*st));
	patch_get_counters(&c);
	st->batches = c.batches;
	st->syncs = c.syncs;
	st->sites_patched = c.sites_patched;
	st->traps = c.traps + c.late_traps;
	st->last_batch_ns = c.last_batch_ns;
	st->last_batch_sites = c.last_batch_sites;
	st->recursion_miss = READ_ONCE(dft_recursion_miss);
	st->late_entries = READ_ONCE(late_entries);
	st->grace_periods = READ_ONCE(rcu_grace_periods);
	st->killed = READ_ONCE(dft_killed);
	if (st->killed)
		memcpy(st->kill_reason, dft_kill_reason, sizeof(st->kill_reason));
	if (dft_self.rcu_nest || dft_self.recursion)
		return; /* inside a callback: the counters above only */
	patch_lock();
	st->sites = site_count;
	for (size_t i = 0; i < site_count; i++)
		if (site_tab[i].flags & SITE_FL_ENABLED)
			st->sites_enabled++;
	for (size_t i = 0; i < obj_count; i++)
		if (object_has_sites(obj_tab[i]))
			st->objects++;
	st->converted = sites_converted;
	st->refused = sites_refused;
	patch_unlock();
}

static const char *route_name(uint8_t r)
{
	/* patch_lock held: dispatch_ops is stable */
	if (r == ROUTE_SINGLE && __atomic_load_n(&dispatch_ops, __ATOMIC_RELAXED) == &list_ops)
		r = ROUTE_LIST; /* several ops registered (or routes 0): the list runs */
	switch (r) {
	case ROUTE_LIST:
		return "list";
	case ROUTE_SINGLE:
		return "ops";
	case ROUTE_TRAMP:
		return "tramp";
	case ROUTE_GRAPH:
		return "graph";
	case ROUTE_CALLOPS:
		return "call_ops";
	case ROUTE_DIRECT:
		return "direct";
	default:
		return "nop";
	}
}

int dynftrace_for_each_site_info(int (*cb)(const struct dynftrace_site_info *si, void *data),
				 void *data)
{
	if (dft_self.rcu_nest || dft_self.recursion)
		return -EDEADLK;
	patch_lock();
	int r = 0;
	for (size_t i = 0; i < site_count && !r; i++) {
		const struct site *s = &site_tab[i];
		struct dynftrace_site_info si = {
		    .ip = s->addr,
		    .func = site_func_name(s),
		    .object = s->obj->path,
		    .enabled = !!(s->flags & SITE_FL_ENABLED),
		    .refcount = (int)(s->flags & SITE_FL_REF_MASK),
		    .route = route_name((s->flags & SITE_FL_ENABLED) ? s->route : ROUTE_NONE),
		    .target = s->target,
		    .literal = s->lit,
		    .ops = (s->flags & SITE_FL_REF_MASK) == 1 ? s->owner : NULL,
		};
		r = cb(&si, data);
	}
	patch_unlock();
	return r;
}

int dynftrace_for_each_site(dynftrace_site_cb cb, void *data)
{
	if (dft_self.rcu_nest || dft_self.recursion)
		return -EDEADLK;
	patch_lock();
	int r = 0;
	for (size_t i = 0; i < site_count && !r; i++) {
		const struct site *s = &site_tab[i];
		r = cb(s->addr, site_func_name(s), s->obj->path, !!(s->flags & SITE_FL_ENABLED),
		       (int)(s->flags & SITE_FL_REF_MASK), data);
	}
	patch_unlock();
	return r;
}

/* Fail-stop entry for other modules: kill and disable. patch_lock held. */
HIDDEN void ops_kill(const char *why)
{
	dft_kill("%s", why);
	disable_all();
}

int ops_unregister_all(void)
{
	for (int n = 0; n < 100000; n++) {
		patch_lock();
		struct dynftrace_ops *o = ops_list;
		patch_unlock();
		if (!o)
			return 0;
		int err = dynftrace_unregister_ops(o);
		if (err)
			return err;
	}
	return -EBUSY;
}
