/* SPDX-License-Identifier: MIT */
/*
 * session.c - the tracers' shared state, which the tracers (trace.c,
 * graph.c, the assembly) and the tracepoint recorder (tp_record.c) read:
 * what is recorded and where, the graph roots (trace_int.h says who writes
 * each field when).
 */
#include <pthread.h>

#include "trace_int.h"

HIDDEN struct trace_cfg trace_cfg;
HIDDEN int trace_rec_on;
HIDDEN int trace_ring_made;
HIDDEN struct root_map *trace_roots;
HIDDEN uint32_t trace_fast = TR_NONE | TF_RING_OFF | TF_OPS_OFF;
HIDDEN uint32_t trace_depth_lim = SHADOW_MAX;

/* Serialises the recomputations: the last one reads every field stored
 * before it started, so the words never keep a stale view. */
static pthread_mutex_t fast_lock = PTHREAD_MUTEX_INITIALIZER;

void trace_fast_update(void)
{
	pthread_mutex_lock(&fast_lock);
	enum tracer_kind k = READ_ONCE(trace_cfg.kind);
	uint32_t f = TR_NONE;
	if (k == TR_GRAPH && !READ_ONCE(trace_cfg.time_filter) &&
	    !__atomic_load_n(&trace_roots, __ATOMIC_ACQUIRE))
		f = TR_GRAPH;
	else if (k == TR_FUNCTION)
		f = TR_FUNCTION;
	unsigned d = READ_ONCE(trace_cfg.max_depth);
	__atomic_store_n(&trace_depth_lim, d && d < SHADOW_MAX ? d : SHADOW_MAX, __ATOMIC_RELEASE);
	/* The two state bits change without the lock: keep them. */
	uint32_t old = __atomic_load_n(&trace_fast, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&trace_fast, &old, (old & TF_BITS) | f, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
	pthread_mutex_unlock(&fast_lock);
}

/* Lock-free (a trigger fires inside a callback): one atomic RMW each. */
static void fast_bit(uint32_t bit, int set)
{
	if (set)
		__atomic_fetch_or(&trace_fast, bit, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_and(&trace_fast, ~bit, __ATOMIC_SEQ_CST);
}

/* A trigger may fire at every call: no RMW (and no cache line taken from
 * every thread's entry) when nothing changes. */
void trace_ring_set(int on)
{
	if (trace_ring_is_on() != !!on)
		fast_bit(TF_RING_OFF, !on);
}

void trace_fast_ops(int live)
{
	fast_bit(TF_OPS_OFF, !live);
}
