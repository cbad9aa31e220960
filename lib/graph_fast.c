/* SPDX-License-Identifier: MIT */
/*
 * graph_fast.c - the function-graph shortcut's C entry and exit (seed 004:
 * "when the graph tracer is the only user of a site, call it directly").
 *
 * Reached from a site's graph thunk through the region's entry and exit
 * code (tramp.S: dft_gentry_tmpl, dft_gexit_tmpl), and from
 * dft_return_tramp, which save only the general registers that may hold
 * arguments or return values. So this file is built with
 * -mgeneral-regs-only and without sanitizers, and it calls nothing: every
 * helper it uses is inline (ring_fast.h, internal.h), and the Makefile
 * checks that the object has no undefined symbol but the data it reads.
 * Anything but the common case answers "slow" BEFORE any side effect, and
 * the generic path runs instead (all registers saved, trace.c's
 * trace_graph_enter / dft_graph_return), so both paths stay equivalent:
 *
 *   entry, fast when: the thread is registered and not inside a callback;
 *     the shortcut's ops is registered; the tracer is function_graph,
 *     recording, with no time filter, no graph lists, no in-memory copy;
 *     no frame to close (longjmp) and no graph_notrace frame open; the
 *     ring's fast reserve succeeds.
 *   exit, fast when: the top shadow entry is this return's and a plain
 *     recorded function_graph frame, and the ring's fast reserve succeeds.
 *
 * The TSC was read by the trampoline before this runs; a nested event (a
 * signal handler) in between has a later time, which the reserve's clamp
 * to last_ts absorbs, so timestamps still never go backwards in a stream.
 */
#include <stdint.h>

#include "ctl.h"
#include "internal.h"
#include "ring.h"
#include "ring_fast.h"
#include "sites.h"
#include "trace_int.h"


/* The rest of fast_write, once the header size is known. */
static inline __attribute__((always_inline)) bool fast_put(struct ring_buf *b, uint32_t n,
							   uint64_t off, unsigned id, uint32_t payload,
							   uint32_t val, uint64_t ts, uint32_t hdr)
{
	uint32_t size = hdr + payload;
	uint32_t psize = b->page_size;
	if (unlikely((off & (psize - 1)) + size >= psize - 1) ||
	    unlikely(!local_cmpxchg(&b->offset, off, off + size)))
		return false;
	b->last_ts = ts;
	uint64_t pos = off & b->buf_mask;
	uint8_t *p = b->data + pos;
	write_header(p, id, ts, hdr);
	if (payload)
		put_u32(p + hdr, val);
	/* As ring_commit: the event lies in one page, the one at POS. */
	uint64_t old = local_xadd(&b->commit[pos >> b->page_shift], size | RING_EV_ONE);
	barrier();
	__atomic_store_n(&b->nest, n, __ATOMIC_RELAXED);
	if (unlikely((uint32_t)old + size == psize) ||
	    unlikely(__atomic_load_n(&b->stop, __ATOMIC_RELAXED)))
		ring_wake();
	return true;
}

/*
 * Write event ID with the trampoline's TSC, its payload the 4 bytes of VAL
 * when PAYLOAD is 4: ring_event_begin and ring_event_end in one, so the
 * nesting level, the size and the page come from registers (no nest_size[]
 * round trip, no re-reading of nest). A nested writer (signal handler)
 * between our reserve and our commit uses level N + 1 and leaves nest as
 * it found it. False: nothing changed, take the slow path.
 *
 * The header's size (compact unless the time moved by RING_TS_WRAP or
 * more) is decided by a branch, not computed: the branch is predicted, so
 * the reservation (page check, cmpxchg of the offset) does not wait for
 * rdtsc and the clock conversion, whose latency is the longest here.
 */
static inline __attribute__((always_inline)) bool fast_write(struct ring_buf *b, unsigned id,
							     uint32_t payload, uint32_t val,
							     uint64_t tsc, uint64_t *tsp)
{
	uint32_t n = __atomic_load_n(&b->nest, __ATOMIC_RELAXED);
	if (unlikely(n >= RING_NEST_MAX))
		return false;
	__atomic_store_n(&b->nest, n + 1, __ATOMIC_RELAXED);
	barrier(); /* nest before stop: see ring_quiesce() */
	uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_RELAXED);
	barrier();
	uint64_t ts;
	if (unlikely(__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) ||
	    unlikely(__atomic_load_n(&clk_mode, __ATOMIC_RELAXED) != CLK_TSC) ||
	    unlikely(!clk_tsc_to_ns(tsc, &ts)))
		goto undo;
	/* As ring_try_reserve (ts below last: last, compact). */
	uint64_t last = b->last_ts;
	bool ok;
	if (likely(ts - last < RING_TS_WRAP) && id <= 6) {
		ok = fast_put(b, n, off, id, payload, val, ts, RING_COMPACT_HDR);
	} else {
		if (ts < last)
			ts = last;
		ok = fast_put(b, n, off, id, payload, val, ts,
			      ts - last < RING_TS_WRAP && id <= 6 ? RING_COMPACT_HDR : RING_EXT_HDR);
	}
	if (likely(ok)) {
		*tsp = ts;
		return true;
	}
undo:
	barrier();
	__atomic_store_n(&b->nest, n, __ATOMIC_RELAXED);
	return false;
}

enum { FAST_TRACED = 0, FAST_UNTRACED = 1, FAST_SLOW = 2 };

static inline __attribute__((always_inline)) unsigned long entry_body(uint32_t id, uintptr_t *slot,
									uint64_t tsc, uintptr_t hook)
{
	if (unlikely(!__atomic_load_n(&graph_route_ops, __ATOMIC_ACQUIRE)) ||
	    unlikely(READ_ONCE(trace_cfg.kind) != TR_GRAPH) || unlikely(!trace_rec_on) ||
	    unlikely(READ_ONCE(trace_cfg.time_filter) != 0) ||
	    unlikely(__atomic_load_n(&trace_roots, __ATOMIC_RELAXED) != NULL) ||
	    unlikely(READ_ONCE(live_enabled)))
		return FAST_SLOW;
	struct fg_thread *g = fg_self;
	if (unlikely(!g) || unlikely(g->notrace_depth))
		return FAST_SLOW;
	uint32_t d = g->depth;
	/* A frame at or below ours was left by longjmp: the slow path closes it. */
	if (d && unlikely((uintptr_t)g->ent[d - 1].slot <= (uintptr_t)slot))
		return FAST_SLOW;
	unsigned max_depth = READ_ONCE(trace_cfg.max_depth);
	if (max_depth && d >= max_depth)
		return FAST_UNTRACED; /* as trace_graph_enter decides */
	struct ring_buf *b = ring_tls;
	if (unlikely(d == SHADOW_MAX) || unlikely(!b))
		return FAST_SLOW;
	uint64_t ts;
	if (unlikely(!fast_write(b, RING_EV_ENTRY, 4, id, tsc, &ts)))
		return FAST_SLOW;
	struct shadow_ent *e = &g->ent[d];
	e->slot = slot;
	e->orig = *slot;
	e->hook = hook;
	e->ts = ts;
	e->child_ns = 0;
	e->id = id;
	e->hooked = 1;
	e->kind = TR_GRAPH;
	e->fl = SE_RING;
	e->epoch = (uint8_t)__atomic_load_n(&live_epoch, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* a nested handler sees the push */
	g->depth = d + 1;
	return FAST_TRACED;
}

/* The entry of site ID's function, whose return address is at SLOT, from
 * the thunk whose call to the entry returns to THUNK_RET. FAST_TRACED: the
 * thunk calls the function (which returns through the thunk's hook);
 * FAST_UNTRACED: it jumps to it; FAST_SLOW: the generic entry decides,
 * nothing was done. */
HIDDEN unsigned long dft_graph_fast_entry(uint32_t id, uintptr_t *slot, uint64_t tsc,
					  uintptr_t thunk_ret)
{
	struct dft_thread *t = &dft_self;
	if (unlikely(t->recursion | t->api_depth) || unlikely(t->state != THREAD_REGISTERED))
		return FAST_SLOW; /* the slow path counts it, or registers the thread */
	t->recursion = 1;
	rcu_read_lock();
	unsigned long r = entry_body(id, slot, tsc, thunk_ret + THUNK_HOOK);
	rcu_read_unlock();
	t->recursion = 0;
	return r;
}

/* The original return address, or 0 for the slow path (nothing done). */
HIDDEN uintptr_t dft_graph_fast_return(uintptr_t sp, uint64_t tsc)
{
	struct fg_thread *g = fg_self;
	struct ring_buf *b = ring_tls;
	if (unlikely(!g) || unlikely(!g->depth) || unlikely(!b))
		return 0;
	uint32_t d = g->depth;
	struct shadow_ent *e = &g->ent[d - 1];
	if (unlikely(e->slot != (uintptr_t *)(sp - sizeof(uintptr_t))) ||
	    unlikely(e->kind != TR_GRAPH) || unlikely(e->fl != SE_RING))
		return 0;
	/* Like dft_graph_return: a signal handler tracing meanwhile would push
	 * onto the entry being closed. */
	struct dft_thread *t = &dft_self;
	t->recursion++;
	uint64_t ts;
	if (unlikely(!fast_write(b, RING_EV_EXIT, 0, 0, tsc, &ts))) {
		t->recursion--;
		return 0;
	}
	uintptr_t orig = e->orig;
	g->depth = d - 1;
	t->recursion--;
	return orig;
}
