/* SPDX-License-Identifier: MIT */
/*
 * graph_fast.c - the C side of function_graph's fast paths (
 * "when the graph tracer is the only user of a site, call it directly").
 *
 * The graph shortcut's entry and exit are in assembly (tramp.S:
 * dft_graph_entry, dft_graph_exit, reached from a site's thunk through the
 * region's dft_gentry_tmpl / dft_gexit_tmpl); this file checks the layouts
 * they use and gives them ring_wake. dft_graph_fast_return below is the
 * same exit in C, for dft_return_tramp (the graph tracer on other routes),
 * which saves only the general registers that may hold return values. So
 * this file is built with -mgeneral-regs-only and without sanitizers, and
 * it calls nothing: every helper it uses is inline (ring_fast.h,
 * internal.h), and the Makefile checks that the object has no undefined
 * symbol but the data it reads. Anything but the common case answers
 * "slow" BEFORE any side effect, and the generic path runs instead (all
 * registers saved, trace.c's trace_graph_enter / dft_graph_return), so
 * both paths stay equivalent:
 *
 *   entry, fast when: the thread is registered and not inside a callback
 *     or a read side; the shortcut's ops is registered; the tracer is
 *     function_graph, writing into the ring, with no time filter, no graph
 *     lists; no frame to close (longjmp) and no graph_notrace frame open;
 *     the ring takes a compact event (fast_write's common case).
 *   exit, fast when: the top shadow entry is this return's and a plain
 *     recorded function_graph frame, and the ring takes the event.
 *
 * The TSC was read by the trampoline before this runs; a nested event (a
 * signal handler) in between has a later time, which the reserve's clamp
 * to last_ts absorbs (the assembly paths go slow instead), so timestamps
 * still never go backwards in a stream.
 */
#include <stdint.h>

#include "internal.h"
#include "ring.h"
#include "ring_fast.h"
#include "sites.h"
#include "trace_int.h"
#include "arch.h"

/* The entry and exit in assembly (tramp.S: dft_graph_entry, dft_graph_exit)
 * use these layouts (regs.h). */
_Static_assert(__builtin_offsetof(struct fg_thread, depth) == FG_DEPTH &&
		   sizeof(((struct fg_thread *)0)->depth) == 4 &&
		   __builtin_offsetof(struct fg_thread, notrace_depth) == FG_NOTRACE_DEPTH &&
		   sizeof(((struct fg_thread *)0)->notrace_depth) == 4 &&
		   __builtin_offsetof(struct fg_thread, ent) == FG_ENT &&
		   sizeof(struct shadow_ent) == SE_SIZE &&
		   __builtin_offsetof(struct shadow_ent, slot) == SE_SLOT &&
		   __builtin_offsetof(struct shadow_ent, orig) == SE_ORIG &&
		   __builtin_offsetof(struct shadow_ent, hook) == SE_HOOK &&
		   __builtin_offsetof(struct shadow_ent, ts) == SE_TS &&
		   __builtin_offsetof(struct shadow_ent, child_ns) == SE_CHILD_NS &&
		   __builtin_offsetof(struct shadow_ent, id) == SE_ID &&
		   __builtin_offsetof(struct shadow_ent, hooked) == SE_HOOKED &&
		   __builtin_offsetof(struct shadow_ent, kind) == SE_KIND &&
		   __builtin_offsetof(struct shadow_ent, fl) == SE_KIND + 1 &&
		   __builtin_offsetof(struct shadow_ent, fl2) == SE_KIND + 2 &&
		   __builtin_offsetof(struct fg_thread, exit_debt) == FG_NOTRACE_DEPTH + 4 &&
		   sizeof(((struct fg_thread *)0)->exit_debt) == 4 &&
		   SHADOW_MAX == SHADOW_MAX_ASM && THUNK_HOOK == THUNK_HOOK_ASM &&
		   TR_GRAPH == TR_GRAPH_ASM && TR_FUNCTION == TR_FUNCTION_ASM &&
		   SE_RING == SE_RING_ASM,
	       "graph exit: shadow stack layout");
_Static_assert(__builtin_offsetof(struct ring_buf, offset) == RB_OFFSET &&
		   __builtin_offsetof(struct ring_buf, last_ts) == RB_LAST_TS &&
		   __builtin_offsetof(struct ring_buf, nest) == RB_NEST &&
		   __builtin_offsetof(struct ring_buf, stop) == RB_STOP &&
		   __builtin_offsetof(struct ring_buf, wlimit) == RB_WLIMIT &&
		   __builtin_offsetof(struct ring_buf, wbase) == RB_WBASE &&
		   __builtin_offsetof(struct ring_buf, wcommit) == RB_WCOMMIT &&
		   RING_NEST_MAX == RING_NEST_MAX_ASM && RING_TS_WRAP == RING_TS_WRAP_ASM &&
		   RING_COMPACT_HDR == RING_COMPACT_HDR_ASM && RING_EV_EXIT == RING_EV_EXIT_ASM &&
		   RING_EV_ENTRY == RING_EV_ENTRY_ASM && RING_EV_ENTRY16 == RING_EV_ENTRY16_ASM &&
		   FMT_ENTRY16_MAX == SITE_ID16_MAX && RING_EV_FUNCTION_NEAR == RING_EV_NEAR_ASM &&
		   RING_EV_FUNCTION == RING_EV_FUNCTION_ASM &&
		   FMT_NEAR_FUNC_BITS == NEAR_FUNC_BITS_ASM &&
		   SITE_ID16_MAX < (1u << FMT_NEAR_FUNC_BITS) &&
		   FMT_NEAR_OFF_BITS == NEAR_OFF_BITS_ASM && FMT_COMPACT_HDR + 6 == 8,
	       "graph exit: ring layout");
_Static_assert(__builtin_offsetof(struct ring_buf, cseq) == RB_CSEQ &&
		   __builtin_offsetof(struct ring_buf, cbase_tsc) == RB_CBASE_TSC &&
		   __builtin_offsetof(struct ring_buf, cmult) == RB_CMULT &&
		   __builtin_offsetof(struct ring_buf, cbase_ns) == RB_CBASE_NS &&
		   sizeof(clk_seq) == 4,
	       "graph exit: clock layout");
_Static_assert(__builtin_offsetof(struct dft_thread, recursion) == THR_RECURSION &&
		   sizeof(((struct dft_thread *)0)->recursion) == 4,
	       "graph exit: dft_self layout");
_Static_assert(sizeof(trace_fast) == 4 && sizeof(trace_depth_lim) == 4,
	       "graph entry: configuration layout");

/* The rest of fast_write, once the header size is known. */
static inline __attribute__((always_inline)) bool
fast_put(struct ring_buf *b, uint32_t n, uint64_t off, unsigned id, uint64_t ts, uint32_t hdr)
{
	uint32_t size = hdr; /* no payload */
	uint32_t psize = b->page_size;
	if (unlikely((off & (psize - 1)) + size >= psize - 1) ||
	    unlikely(!local_cmpxchg(&b->offset, off, off + size)))
		return false;
	b->last_ts = ts;
	uint64_t pos = off & b->buf_mask;
	uint8_t *p = b->data + pos;
	write_header(p, id, ts, hdr);
	/* the event lies in one page, the one at POS */
	ring_commit_slot(b, pos >> b->page_shift, size, n);
	return true;
}

/*
 * Write event ID (no payload) with the trampoline's TSC: ring_event_begin
 * and ring_event_end in one, so the nesting level, the size and the page
 * come from registers (no nest_size[] round trip, no re-reading of nest).
 * A nested writer (signal handler) between our reserve and our commit uses
 * level N + 1 and leaves nest as it found it. False: nothing changed, take the slow path.
 *
 * The header's size (compact unless the time moved by RING_TS_WRAP or
 * more) is decided by a branch, not computed: the branch is predicted, so
 * the reservation (page check, cmpxchg of the offset) does not wait for
 * the cycle counter read and the clock conversion, whose latency is the longest here.
 */
static inline __attribute__((always_inline)) bool fast_write(struct ring_buf *b, unsigned id,
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
	/* clk_tsc_to_ns refuses the latch of a counter not in use */
	if (unlikely(__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) ||
	    unlikely(!clk_tsc_to_ns(tsc, &ts)))
		goto undo;
	/* As ring_try_reserve (ts below last: last, compact). */
	uint64_t last = b->last_ts;
	bool ok;
	if (likely(ts - last < RING_TS_WRAP) && id <= 6) {
		ok = fast_put(b, n, off, id, ts, RING_COMPACT_HDR);
	} else {
		if (ts < last)
			ts = last;
		ok =
		    fast_put(b, n, off, id, ts,
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

/* The original return address, or 0 for the slow path (nothing done).
 * dft_return_tramp's; the graph shortcut's exit is tramp.S's dft_graph_exit,
 * the same in assembly. */
HIDDEN uintptr_t dft_graph_fast_return(uintptr_t sp, uint64_t tsc)
{
	struct fg_thread *g = fg_self;
	struct ring_buf *b = ring_tls;
	if (unlikely(!g) || unlikely(!g->depth) || unlikely(!b))
		return 0;
	uint32_t d = g->depth;
	struct shadow_ent *e = &g->ent[d - 1];
	if (unlikely(e->slot != (uintptr_t *)(sp - sizeof(uintptr_t))) ||
	    unlikely(e->kind != TR_GRAPH) || unlikely(e->fl != SE_RING) || unlikely(e->fl2))
		return 0;
	/* Like dft_graph_return: a signal handler tracing meanwhile would push
	 * onto the entry being closed. */
	struct dft_thread *t = &dft_self;
	t->recursion++;
	uint64_t ts;
	if (unlikely(!fast_write(b, RING_EV_EXIT, tsc, &ts))) {
		t->recursion--;
		return 0;
	}
	uintptr_t orig = e->orig;
	g->depth = d - 1;
	t->recursion--;
	return orig;
}
