/* SPDX-License-Identifier: MIT */
/*
 * trigger.c - uftrace's triggers on function_graph's generic entry (see
 * trigger.h for who pays and the concurrency rules).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sites.h"
#include "trace_int.h"
#include "trigger.h"

struct trig_spec {
	char *pat; /* a filter pattern (glob.c: FUNC@OBJECT too) */
	struct trig t;
};
static struct trig_spec *specs; /* trig_init, then read-only */
static size_t nspecs;
static uint16_t all_flags; /* the union of every spec's */

HIDDEN struct trig_map *trace_trigs;
static int trig_finished; /* finish ran: trace_on no longer resumes */

/* "10us", "2ms", "1s", "500" (ns): 0 or -1. */
static int parse_dur(const char *s, uint64_t *ns)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return -1;
	static const struct {
		const char *u;
		uint64_t mul;
	} units[] = {{"", 1},
		     {"ns", 1},
		     {"nsec", 1},
		     {"us", 1000},
		     {"usec", 1000},
		     {"ms", 1000000},
		     {"msec", 1000000},
		     {"s", 1000000000},
		     {"sec", 1000000000},
		     {"m", 60000000000ull},
		     {"min", 60000000000ull}};
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(end, units[i].u)) {
			*ns = v * units[i].mul;
			return 0;
		}
	return -1;
}

#define WHY(...) ((void)(why && snprintf(why, whylen, __VA_ARGS__)))

/* ACTS ("depth=1,trace_off") into T: 0 or -EINVAL. */
static int parse_actions(char *acts, struct trig *t, char *why, size_t whylen)
{
	char *save;
	for (char *a = strtok_r(acts, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
		if (!strncmp(a, "depth=", 6)) {
			char *end;
			unsigned long d = strtoul(a + 6, &end, 10);
			if (end == a + 6 || *end || !d || d > 65535) {
				WHY("bad trigger action '%s': depth=N, N from 1 to 65535", a);
				return -EINVAL;
			}
			t->flags |= TRIG_DEPTH;
			t->depth = (uint16_t)d;
		} else if (!strncmp(a, "time=", 5)) {
			if (parse_dur(a + 5, &t->time_ns) || !t->time_ns) {
				WHY("bad trigger action '%s': time=DUR (10us, 2ms)", a);
				return -EINVAL;
			}
			t->flags |= TRIG_TIME;
		} else if (!strcmp(a, "trace_on") || !strcmp(a, "traceon")) {
			t->flags |= TRIG_ON;
		} else if (!strcmp(a, "trace_off") || !strcmp(a, "traceoff")) {
			t->flags |= TRIG_OFF;
		} else if (!strcmp(a, "finish")) {
			t->flags |= TRIG_FINISH;
		} else if (!strcmp(a, "filter")) {
			t->flags |= TRIG_FILTER;
		} else if (!strcmp(a, "notrace")) {
			t->flags |= TRIG_NOTRACE;
		} else if (!strcmp(a, "backtrace")) {
			t->flags |= TRIG_BACKTRACE;
		} else {
			WHY("unknown trigger action '%s' (depth=N, time=DUR, trace_on, trace_off, "
			    "finish, backtrace, filter, notrace)",
			    a);
			return -EINVAL;
		}
	}
	if (!t->flags) {
		WHY("a trigger needs an action after '@'");
		return -EINVAL;
	}
	return 0;
}

int trig_init(const char *spec, char *why, size_t whylen)
{
	char *copy = strdup(spec), *save;
	if (!copy)
		return -ENOMEM;
	int err = 0;
	for (char *s = strtok_r(copy, ";", &save); s && !err; s = strtok_r(NULL, ";", &save)) {
		/* the last '@' starts the actions: FUNC@OBJECT@depth=1 */
		char *at = strrchr(s, '@');
		struct trig t = {0};
		if (!at || at == s) {
			WHY("bad trigger '%s': give FUNC@ACTION", s);
			err = -EINVAL;
			break;
		}
		*at = 0;
		if ((err = dft_pattern_check(s, why, whylen)))
			break;
		if ((err = parse_actions(at + 1, &t, why, whylen)))
			break;
		struct trig_spec *n = realloc(specs, (nspecs + 1) * sizeof(*n));
		char *p = n ? strdup(s) : NULL;
		if (n)
			specs = n;
		if (!p) {
			err = -ENOMEM;
			break;
		}
		specs[nspecs].pat = p;
		specs[nspecs].t = t;
		nspecs++;
		all_flags |= t.flags;
	}
	free(copy);
	return err;
}

int trig_any(void)
{
	return nspecs != 0;
}

int trig_has(uint16_t flag)
{
	return (all_flags & flag) != 0;
}

struct trig trig_of(const struct site *s)
{
	struct trig t = {0};
	const char *name = site_func_name(s);
	for (size_t i = 0; name && i < nspecs; i++) {
		if (!dft_glob_match_in(specs[i].pat, name, s->obj->path))
			continue;
		t.flags |= specs[i].t.flags;
		if (specs[i].t.flags & TRIG_DEPTH)
			t.depth = specs[i].t.depth;
		if (specs[i].t.flags & TRIG_TIME)
			t.time_ns = specs[i].t.time_ns;
	}
	return t;
}

void trig_rebuild(void)
{
	if (!nspecs)
		return;
	uint32_t n = site_next_id;
	struct trig_map *m = calloc(1, sizeof(*m) + (size_t)n * sizeof(m->t[0]));
	if (!m) {
		dft_log("triggers: out of memory, not applied to the functions loaded now");
		return;
	}
	m->n = n;
	for (size_t i = 0; i < site_count; i++)
		if (site_tab[i].id < n)
			m->t[site_tab[i].id] = trig_of(&site_tab[i]);
	struct trig_map *old = trace_trigs;
	__atomic_store_n(&trace_trigs, m, __ATOMIC_RELEASE);
	if (old) {
		rcu_synchronize();
		free(old);
	}
}

int trig_site_generic(const struct site *s)
{
	if (!(all_flags & TRIG_GENERIC))
		return 0;
	const struct trig_map *m = trace_trigs;
	if (m && s->id < m->n)
		return (m->t[s->id].flags & TRIG_GENERIC) != 0;
	return (trig_of(s).flags & TRIG_GENERIC) != 0; /* loaded since the map */
}

int trig_enter(struct fg_thread *g, uint32_t id)
{
	const struct trig_map *m = __atomic_load_n(&trace_trigs, __ATOMIC_ACQUIRE);
	if (!m || id >= m->n || !(m->t[id].flags & TRIG_GENERIC))
		return 0;
	const struct trig *t = &m->t[id];
	if (t->flags & TRIG_FINISH)
		__atomic_store_n(&trig_finished, 1, __ATOMIC_RELAXED);
	if (t->flags & (TRIG_OFF | TRIG_FINISH))
		trace_ring_set(0);
	else if ((t->flags & TRIG_ON) && __atomic_load_n(&trace_ring_made, __ATOMIC_ACQUIRE) &&
		 !__atomic_load_n(&trig_finished, __ATOMIC_RELAXED))
		trace_ring_set(1);
	if (!(t->flags & (TRIG_DEPTH | TRIG_TIME)) || g->trig_n >= TRIG_NEST_MAX)
		return 0;
	g->trig_save[g->trig_n].limit = g->trig_limit;
	g->trig_save[g->trig_n].time = g->trig_time;
	g->trig_n++;
	g->notrace_depth++; /* the thread's entries take the generic path */
	if (t->flags & TRIG_DEPTH)
		g->trig_limit = g->depth + t->depth;
	if (t->flags & TRIG_TIME)
		g->trig_time = t->time_ns;
	return 1;
}

void trig_leave(struct fg_thread *g)
{
	if (!g->trig_n)
		return;
	g->trig_n--;
	g->notrace_depth--;
	g->trig_limit = g->trig_save[g->trig_n].limit;
	g->trig_time = g->trig_save[g->trig_n].time;
}
