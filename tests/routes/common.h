/* SPDX-License-Identifier: MIT */
/*
 * common.h - helpers shared by the route test programs in tests/routes: the
 * functions of both builds (funcs.c), their sites as
 * dynftrace_for_each_site_info reports them, and the route a site must have
 * for a given set of registered ops, filters and route mask (the model the
 * runtime is checked against).
 */
#ifndef ROUTES_COMMON_H
#define ROUTES_COMMON_H

#include <fnmatch.h>
#include <stdint.h>
#include <string.h>
#include <dynftrace/dynftrace.h>

#include "funcs.h"
#include "../unit/tap.h"
#include "../unit/insn.h"

/* The functions, CALL_OPS build first. */
enum { NFUNC = 12, NFUNC_CO = 6 };
static unsigned long (*const rt_fn[NFUNC])(unsigned long) = {
    co_f0, co_f1, co_f2, co_f3, co_keep, co_late, tr_f0, tr_f1, tr_f2, tr_f3, tr_keep, tr_late,
};
static const char *const rt_name[NFUNC] = {
    "co_f0", "co_f1", "co_f2", "co_f3", "co_keep", "co_late",
    "tr_f0", "tr_f1", "tr_f2", "tr_f3", "tr_keep", "tr_late",
};
#define RT_FN_KIND(i) ((i) % NFUNC_CO) /* index for routes_expect() */
#define RT_IS_CO(i)   ((i) < NFUNC_CO)

/* Site states, finest first; the classes the transition checks use merge
 * "ops" (single ops through the common trampoline) and "tramp". */
enum { ST_NOP, ST_LIST, ST_OPS, ST_TRAMP, ST_CALLOPS, ST_OTHER, NST };
static const char *const st_name[NST] = {"nop", "list", "ops", "tramp", "call_ops", "other"};

static int st_of(const char *route)
{
	for (int s = 0; s < ST_OTHER; s++)
		if (!strcmp(route, st_name[s]))
			return s;
	return ST_OTHER;
}

/* One site as reported, plus what its literal holds now. */
struct rt_site {
	unsigned long ip;
	int enabled, refcount, st;
	unsigned long target, literal, lit_val;
	struct dynftrace_ops *ops;
	int found;
};

struct rt_snap {
	struct rt_site s[NFUNC];
};

static int rt_snap_cb(const struct dynftrace_site_info *si, void *data)
{
	struct rt_snap *sn = data;
	if (!si->func)
		return 0;
	for (int i = 0; i < NFUNC; i++) {
		if (strcmp(si->func, rt_name[i]))
			continue;
		struct rt_site *s = &sn->s[i];
		s->ip = si->ip;
		s->enabled = si->enabled;
		s->refcount = si->refcount;
		s->st = st_of(si->route);
		s->target = si->target;
		s->literal = si->literal;
		s->lit_val = si->literal
				 ? __atomic_load_n((unsigned long *)si->literal, __ATOMIC_RELAXED)
				 : 0;
		s->ops = si->ops;
		s->found++;
	}
	return 0;
}

static inline int rt_snapshot(struct rt_snap *sn)
{
	memset(sn, 0, sizeof(*sn));
	return dynftrace_for_each_site_info(rt_snap_cb, sn);
}

/* The state a site must have: NOPS ops of OPS[] registered (REG), their
 * globs GLOB[] (NULL: every function), route mask MASK; OPS[] are all the
 * ops the program registers. Sets *OWNER to the single ops when there is
 * one, *REF to the count. A site of one ops on the common trampoline is
 * "ops" only while that ops is the only one registered and routes are not
 * 0: otherwise the list function runs there, and it says "list". */
static inline int rt_model(int fn, struct dynftrace_ops *const *ops, const int *reg,
			   const char *const *glob, int nops, unsigned mask,
			   struct dynftrace_ops **owner, int *ref)
{
	int n = 0, nreg = 0;
	*owner = NULL;
	for (int o = 0; o < nops; o++) {
		nreg += reg[o] != 0;
		if (!reg[o] || (glob[o] && fnmatch(glob[o], rt_name[fn], 0)))
			continue;
		n++;
		*owner = ops[o];
	}
	*ref = n;
	if (n != 1)
		*owner = NULL;
	if (!n)
		return ST_NOP;
	if (RT_IS_CO(fn) && (mask & DYNFTRACE_ROUTE_CALL_OPS))
		return ST_CALLOPS;
	if (n >= 2)
		return ST_LIST;
	if (mask & DYNFTRACE_ROUTE_TRAMP)
		return ST_TRAMP;
	return nreg == 1 && mask ? ST_OPS : ST_LIST;
}

/*
 * Does the site's CALL_OPS literal hold what the runtime promises? Its ops
 * (OWNER) on the CALL_OPS route with one ops; else, while the site is
 * wanted, the runtime's list ops (not null, none of OURS), so that a
 * thread still in the callops trampoline after a route change reaches
 * every ops that wants the site; 0 for a NOP. NULL when right, else why.
 */
static inline const char *rt_lit_wrong(const struct rt_site *s, int want_st, int ref,
				       const struct dynftrace_ops *owner,
				       struct dynftrace_ops *const *ours, int nours)
{
	if (!s->literal)
		return NULL;
	if (want_st == ST_NOP)
		return s->lit_val ? "literal not cleared" : NULL;
	if (want_st == ST_CALLOPS && ref == 1)
		return s->lit_val == (unsigned long)owner ? NULL : "literal is not the ops";
	if (!s->lit_val)
		return "literal cleared on a wanted site";
	for (int o = 0; o < nours; o++)
		if (s->lit_val == (unsigned long)ours[o])
			return "literal holds one ops, want the list";
	return NULL;
}

/* Is the site's code what its state says: the NOP, or a call of TARGET? */
static inline int rt_code_ok(const struct rt_site *s)
{
	const void *p = (const void *)s->ip;
	if (!s->enabled)
		return tinsn_is_nop(p);
	int call = 0;
	return tinsn_branch(p, &call) == (const void *)s->target && call;
}
#endif
