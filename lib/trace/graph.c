/* SPDX-License-Identifier: MIT */
/*
 * graph.c - the function_graph tracer's C side (its common case is in
 * assembly: tramp.S, graph_fast.c) and the profile tracer's entries, which
 * share its shadow stack.
 *
 * function_graph hooks returns with a per-thread shadow stack: at entry the
 * callback saves the return address found at its entry and replaces it with
 * dft_return_tramp (tramp.S), which calls dft_graph_return(). Frames that
 * never return are detected by stack position:
 *   - longjmp/siglongjmp: an entry whose slot lies below the current stack
 *     pointer is dead; it is closed at the next entry or return;
 *   - C++ exceptions: the unwinder must see real return addresses, so
 *     _Unwind_RaiseException puts every original back; __cxa_begin_catch
 *     closes the frames that were unwound and re-hooks the survivors
 *     (where the return address comes in a register, in the frame: see
 *     unhook_for_unwind);
 *   - pthread_exit: every frame is closed and unhooked first;
 *   - exit() from a nested frame: the streams end with open entries, which
 *     readers close.
 * Frames closed without returning end in the ring with one exit_depth per
 * run (close_unwound), which readers show as unwound.
 *
 * Tail calls are not unwinds: a function that ends by jumping to another
 * leaves its hook in the slot where the callee finds its return address.
 * The callee's entry sees the top frame's slot and hook there and opens
 * its frame above it at the same slot, with that hook as its "original"
 * return address; its return goes through the hook twice (once for each
 * frame, the callee's first), so the tail-caller ends when the callee
 * returns and the trace shows `tailer() { leafb(); }`. A chain of tail
 * calls stacks one frame per function on the same slot.
 * Stack switches (swapcontext, setcontext, longjmp to another stack) are
 * not unwinds: context.c sets the frames of the stack left aside until
 * the thread switches back (ctx_resolve, called where frames seem left).
 * The shadow stack is the thread's own (mmap'd at its first traced call);
 * nothing else touches it, signal handlers of the same thread nest on it in
 * LIFO order.
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dynftrace/dynftrace.h"
#include "internal.h"
#include "arch.h"
#include "got.h"
#include "ring.h"
#include "sites.h"
#include "trace.h"
#include "args.h"
#include "trace_int.h"
#include "trigger.h"

extern const char dft_return_tramp[] HIDDEN;
extern const char dft_return_tramp_all[] HIDDEN;

/* ---- events ------------------------------------------------------------- */

/* Event ID with the N-byte payload at V; *TS = 0 when it was not written. */
static void emit(unsigned id, const void *v, size_t n, uint64_t *ts)
{
	uint8_t *p = ring_event_begin(id, n, ts);
	if (p) {
		memcpy(p, v, n);
		ring_event_end(p);
	} else {
		*ts = 0;
	}
}

static void emit_u32(unsigned id, uint32_t v, uint64_t *ts)
{
	emit(id, &v, 4, ts);
}

/* An entry: entry16 (4 bytes) when the site id fits, else entry (6). */
static void emit_entry(uint32_t id, uint64_t *ts)
{
	uint16_t v = (uint16_t)id;
	if (id > FMT_ENTRY16_MAX)
		emit_u32(RING_EV_ENTRY, id, ts);
	else
		emit(RING_EV_ENTRY16, &v, 2, ts);
}

static bool emit_exit(void)
{
	uint64_t ts;
	uint8_t *p = ring_event_begin(RING_EV_EXIT, 0, &ts);
	if (p)
		ring_event_end(p);
	return p != NULL;
}

/* exit_retval of frame E from RETVAL (out of line: the common exits keep
 * a small frame). */
static __attribute__((noinline, cold)) bool emit_exit_retval(const struct shadow_ent *e,
							     const unsigned long *retval)
{
	const struct arg_spec *spec;
	/* only dft_return_tramp(_all) save the results where args.c reads them */
	int all = e->hook == (uintptr_t)dft_return_tramp_all;
	if (!retval || (!all && e->hook != (uintptr_t)dft_return_tramp))
		return emit_exit();
	/* a return is outside any callback: the map's read side here */
	rcu_read_lock();
	spec = args_of(e->id);
	int have = spec && spec->has_ret;
	uint8_t data[FMT_ARGS_BUF];
	uint16_t n = have ? (uint16_t)args_encode_ret(spec, retval, all, data) : 0;
	rcu_read_unlock();
	if (!have)
		return emit_exit(); /* the specification changed since the entry */
	uint64_t ts;
	uint8_t *p = ring_event_begin(RING_EV_EXIT_RETVAL, 2u + n, &ts);
	if (p) {
		memcpy(p, &n, 2);
		memcpy(p + 2, data, n);
		ring_event_end(p);
	}
	return p != NULL;
}

/* The exit of frame E, which returned with the results RETVAL saved by
 * its return trampoline (NULL: unknown): exit_retval when its return
 * value is wanted (SE_RETVAL, args.c). */
static inline bool emit_exit_of(const struct shadow_ent *e, const unsigned long *retval)
{
	if (likely(!(e->fl & SE_RETVAL)))
		return emit_exit();
	return emit_exit_retval(e, retval);
}

/* A frame left the stack while exits are owed: the new top one takes the
 * slow exit, which pays. */
static inline void debt_mark_top(struct fg_thread *g)
{
	if (unlikely(g->exit_debt) && g->depth)
		g->ent[g->depth - 1].fl2 |= SE2_DEBT;
}

/* The entry of ID with the arguments SPEC wants from REGS: ts 0 when
 * it was not written. */
static void emit_entry_data(uint32_t id, const uint8_t *data, uint16_t n, uint64_t *ts)
{
	uint8_t *p = ring_event_begin(RING_EV_ENTRY_ARGS, 6u + n, ts);
	if (p) {
		memcpy(p, &id, 4);
		memcpy(p + 4, &n, 2);
		memcpy(p + 6, data, n);
		ring_event_end(p);
	} else {
		*ts = 0;
	}
}

static __attribute__((noinline, cold)) void emit_entry_args(uint32_t id,
							    const struct arg_spec *spec,
							    const struct dynftrace_regs *regs,
							    uint64_t *ts)
{
	uint8_t data[FMT_ARGS_BUF];
	emit_entry_data(id, data, (uint16_t)args_encode_entry(spec, regs, data), ts);
}

/* Write one exit_depth for the *PEND unwound frames counted so far. */
static void unwound_flush(struct fg_thread *g, uint32_t *pend)
{
	if (!*pend)
		return;
	uint64_t ts = 0;
	if (likely(!g->exit_debt) || fg_debt_pay(g))
		emit_u32(RING_EV_EXIT_DEPTH, *pend, &ts); /* a failure counts 1 lost */
	else
		ring_count_lost(1);
	if (!ts)
		g->exit_debt += *pend; /* their exit_depth could not be written */
	*pend = 0;
}

/*
 * Close the top frame at time NOW. UNWOUND is NULL when the frame returned;
 * otherwise it was left without returning (longjmp, exception,
 * pthread_exit) and, if its entry went to the ring, it is counted in
 * *UNWOUND instead of getting an exit: the caller ends the run with
 * unwound_flush(), one exit_depth for all of them. Only SE_RING frames
 * count: the reader sees no entry of the others (held back by -t, lost,
 * notrace, profile), so they must not be popped. Everything else (profile,
 * -t calls) happens per frame, as for a return.
 */
static void frame_close(struct fg_thread *g, uint64_t now, uint32_t *unwound,
			const unsigned long *retval)
{
	struct shadow_ent *e = &g->ent[--g->depth];
	uint64_t dur = now > e->ts ? now - e->ts : 0;
	/* the time filter inside a time= trigger, its own frame included
	 * (a trigger frame counts in notrace_depth) */
	uint64_t thresh = unlikely(g->notrace_depth) && g->trig_time
			      ? g->trig_time
			      : READ_ONCE(trace_cfg.time_filter);
	if (e->fl & SE_ROOT)
		g->filter_depth--;
	if (unwound && e->hooked && *e->slot == e->hook)
		*e->slot = e->orig; /* still live somewhere? leave it returning right */
	if (e->fl & SE_TRIG)
		trig_leave(g);
	if (e->fl & SE_SKIP)
		return; /* kept only for its trigger */
	if (e->fl & SE_NOTRACE) {
		g->notrace_depth--;
		return;
	}
	switch (e->kind) {
	case TR_PROFILE:
		profile_account(g, e, dur);
		if (g->depth)
			g->ent[g->depth - 1].child_ns += dur;
		break;
	case TR_GRAPH:
		if (e->fl & SE_RING) {
			if (unwound)
				(*unwound)++;
			else if (unlikely(g->exit_debt) && !fg_debt_pay(g)) {
				g->exit_debt++; /* its exit is owed too */
				ring_count_lost(1);
			} else if (!emit_exit_of(e, retval)) { /* counted lost by the ring */
				g->exit_debt++;
			}
		} else {
			if (thresh && dur >= thresh && trace_ring_is_on()) {
				uint64_t ts;
				/* The frames unwound above this one end before
				 * it: their exit_depth goes first. */
				if (unwound)
					unwound_flush(g, unwound);
				uint8_t *p = ring_event_begin(RING_EV_CALL, 12, &ts);
				if (p) {
					memcpy(p, &e->id, 4);
					memcpy(p + 4, &dur, 8);
					ring_event_end(p);
				}
			}
		}
		break;
	default:
		break;
	}
}

/* Close the N top frames, unwound at time NOW. */
static void close_unwound(struct fg_thread *g, uint32_t n, uint64_t now)
{
	uint32_t pend = 0;
	while (n--)
		frame_close(g, now, &pend, NULL);
	unwound_flush(g, &pend);
	debt_mark_top(g);
}

/* Frames whose slot lies below LIMIT were left by longjmp (or unwound by
 * an exception): close them. With SLOT, the slot of the entry or return
 * that found them: they may be another stack's (context.c), set aside. */
static void close_dead(struct fg_thread *g, uintptr_t limit, uintptr_t *slot)
{
	if (likely(!g->depth || (uintptr_t)g->ent[g->depth - 1].slot >= limit))
		return;
	if (slot && ctx_resolve(g, slot) == CTX_NEST)
		return;
	if (!g->depth || (uintptr_t)g->ent[g->depth - 1].slot >= limit)
		return;
	uint32_t n = 0;
	while (n < g->depth && (uintptr_t)g->ent[g->depth - 1 - n].slot < limit &&
	       !(g->ent[g->depth - 1 - n].fl & SE_BASE))
		n++;
	close_unwound(g, n, ring_now());
}

/*
 * The entry of function ID whose return address is at SLOT: 1 when a shadow
 * entry was pushed, and the function must return through HOOK:
 * dft_return_tramp, written into SLOT here, or a graph thunk's hook (the
 * thunk's own call puts it there, see tramp.S). 0: not traced (always,
 * for the function tracer, which takes the same thunks).
 */
static int graph_enter(uint32_t id, uintptr_t *slot, uintptr_t hook,
		       const struct dynftrace_regs *regs)
{
	if (unlikely(id == UINT32_MAX))
		return 0;
	if (READ_ONCE(trace_cfg.kind) == TR_FUNCTION) {
		/* The function tracer on the shortcut (the assembly entry did
		 * not take the call): its event, and the call is not hooked. */
		trace_function_write(id, arch_graph_thunk_site(hook - THUNK_HOOK), *slot);
		return 0;
	}
	struct fg_thread *g = fg_get();
	if (unlikely(!g)) {
		ring_count_lost(2);
		return 0;
	}
	/* A live caller's slot is above ours; a frame at or below it was left
	 * by longjmp or an exception, unless it is the top frame and our slot
	 * still holds its hook: then that function jumped here (a tail call),
	 * and we run inside it. Its frame stays open and ends when we return,
	 * through its hook (see dft_graph_return). */
	uintptr_t limit = (uintptr_t)slot + 1;
	if (g->depth) {
		const struct shadow_ent *top = &g->ent[g->depth - 1];
		if (top->slot == slot && top->hooked && *slot == top->hook)
			limit = (uintptr_t)slot;
	}
	close_dead(g, limit, slot);
	/* A trigger (trigger.c) acts first; one that changes the thread's
	 * limits (TRIG) keeps a frame, traced or not (SE_SKIP), to undo
	 * them when the function returns. */
	int trig = unlikely(trace_trigs != NULL) ? trig_enter(g, id) : 0;
	uint8_t root = 0, fl = 0;
	int skip = 0;
	unsigned max_depth = READ_ONCE(trace_cfg.max_depth);
	uint64_t thresh = READ_ONCE(trace_cfg.time_filter);
	if (unlikely(g->notrace_depth)) {
		/* below a graph_notrace function, or inside a trigger's frame
		 * (each counts in notrace_depth: without one, the trigger
		 * fields, far from the top of the stack, are not read) */
		skip = g->notrace_depth > g->trig_n;
		if (g->trig_limit)
			max_depth = g->trig_limit;
		if (g->trig_time)
			thresh = g->trig_time;
	}
	if (max_depth && g->depth >= max_depth)
		skip = 1;
	const struct root_map *r = __atomic_load_n(&trace_roots, __ATOMIC_ACQUIRE);
	if (unlikely(r != NULL) && !skip) {
		uint8_t f = id < r->n ? r->flags[id] : 0;
		if (f & ROOT_FL_NOTRACE)
			fl = SE_NOTRACE;
		else if (r->has_roots && g->filter_depth == 0) {
			if (!(f & ROOT_FL_ROOT))
				skip = 1;
			root = !skip;
		}
	}
	if (skip) {
		if (!trig)
			return 0;
		fl = SE_SKIP;
	}
	if (unlikely(g->depth == SHADOW_MAX)) {
		if (trig)
			trig_leave(g);
		g->overflow++;
		ring_count_lost(2);
		return 0;
	}
	enum tracer_kind kind = READ_ONCE(trace_cfg.kind);
	uint64_t ts = 0;
	if (kind == TR_GRAPH && !fl && !thresh) {
		if (trace_ring_is_on()) {
			/* arguments (args.c): only through a full trampoline
			 * body (REGS), whose return comes back through
			 * dft_return_tramp(_all) with the results saved */
			const struct arg_spec *spec = regs ? args_of(id) : NULL;
			if (unlikely(g->exit_debt) && !fg_debt_pay(g))
				ring_count_lost(1); /* its entry: not after exits owed */
			else if (unlikely(spec != NULL) && spec->n)
				emit_entry_args(id, spec, regs, &ts);
			else
				emit_entry(id, &ts);
			if (ts)
				fl |= SE_RING | (spec && spec->has_ret ? SE_RETVAL : 0);
			else
				ring_count_lost(1); /* its exit */
		}
		if (!fl) {
			if (trig)
				trig_leave(g);
			return 0;
		}
	} else {
		ts = ring_now();
	}
	struct shadow_ent *e = &g->ent[g->depth];
	e->slot = slot;
	e->orig = *slot;
	e->hook = hook;
	e->ts = ts;
	e->child_ns = 0;
	e->id = id;
	e->hooked = 1;
	e->kind = (uint8_t)kind;
	e->fl = fl | (root ? SE_ROOT : 0) | (trig ? SE_TRIG : 0);
	e->fl2 = kind == TR_PROFILE && !(fl & (SE_SKIP | SE_NOTRACE)) && profile_enter(g, id)
		     ? SE2_PROF_OUTER
		     : 0;
	g->filter_depth += root;
	g->notrace_depth += !!(fl & SE_NOTRACE);
	if (hook == (uintptr_t)dft_return_tramp || hook == (uintptr_t)dft_return_tramp_all)
		*slot = hook;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* a nested handler sees the push */
	g->depth++;
	return 1;
}

/* The graph shortcut's generic entry (ops.c): no saved registers to read
 * arguments from (a site with arguments leaves the shortcut). */
HIDDEN int trace_graph_enter(uint32_t id, uintptr_t *slot, uintptr_t hook)
{
	return graph_enter(id, slot, hook, NULL);
}

void trace_graph_func(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
		      struct dynftrace_regs *regs)
{
	(void)parent_ip;
	(void)ops;
	/* Through the preserving trampoline (a relocated entry): its return
	 * must give back every register too. */
	graph_enter(site_id_lookup(ip), ARCH_REGS_RET_SLOT(regs),
		    ARCH_REGS_PRESERVE_ALL(regs) ? (uintptr_t)dft_return_tramp_all
						 : (uintptr_t)dft_return_tramp,
		    regs);
}

/* Called by dft_return_tramp and the graph thunks' exit (the slow path);
 * returns where the traced function returns. */
HIDDEN uintptr_t dft_graph_return(uintptr_t sp, const unsigned long *retval)
{
	struct fg_thread *g = fg_self;
	uintptr_t *slot = (uintptr_t *)(sp - sizeof(uintptr_t));
	/* Like dispatch, hold the recursion guard: a signal handler tracing
	 * meanwhile would push onto the entry being closed. */
	dft_self.recursion++;
	if (g) {
		close_dead(g, (uintptr_t)slot, slot);
		/* not the top frame's: one of a context set aside? */
		if (unlikely(!g->depth || g->ent[g->depth - 1].slot != slot) &&
		    ctx_resolve(g, slot) == CTX_SWITCHED)
			close_dead(g, (uintptr_t)slot, slot);
	}
	if (unlikely(!g || !g->depth || g->ent[g->depth - 1].slot != slot)) {
		/* We hooked this return but lost track of it: nothing sane to
		 * return to. Say why before dying. */
		dft_log("function_graph: return through %p has no shadow entry; aborting",
			(void *)slot);
		abort();
	}
	struct shadow_ent *e = &g->ent[g->depth - 1];
	uintptr_t orig = e->orig;
	if (likely(e->kind == TR_GRAPH && !(e->fl & (SE_NOTRACE | SE_ROOT | SE_TRIG)) &&
		   (e->fl & SE_RING) && !g->exit_debt)) {
		/* The common case: the exit event carries its own time. */
		g->depth--;
		if (unlikely(!emit_exit_of(e, retval)))
			g->exit_debt++;
	} else {
		frame_close(g, ring_now(), NULL, retval);
	}
	debt_mark_top(g);
	dft_self.recursion--;
	return orig;
}

/* ---- a call the runtime makes for the program ----------------------------- */

/*
 * An exec wrapper's call of site ID with the integer arguments ARGS[NARGS]
 * (trace.c): its entry is written here, just before the recording ends,
 * since the image may be gone before the call reaches its site with the
 * ring on. As graph_enter would write it (depth, notrace, -F roots, -A),
 * but no shadow entry is pushed: nothing returns through a hook, the exit
 * is written by trace_graph_call_exit after a failed exec. A -t
 * recording writes calls at their end: none here. 0: nothing written;
 * else 1, or 2 when the return value is wanted too.
 */
HIDDEN int trace_graph_call_entry(uint32_t id, const unsigned long *args, unsigned nargs)
{
	struct fg_thread *g = fg_get();
	if (!g || !trace_ring_is_on() || READ_ONCE(trace_cfg.time_filter))
		return 0;
	unsigned max_depth = READ_ONCE(trace_cfg.max_depth);
	if (g->notrace_depth) {
		if (g->notrace_depth > g->trig_n || g->trig_time)
			return 0;
		if (g->trig_limit)
			max_depth = g->trig_limit;
	}
	if (max_depth && g->depth >= max_depth)
		return 0;
	const struct root_map *r = __atomic_load_n(&trace_roots, __ATOMIC_ACQUIRE);
	if (r) {
		uint8_t f = id < r->n ? r->flags[id] : 0;
		if ((f & ROOT_FL_NOTRACE) ||
		    (r->has_roots && g->filter_depth == 0 && !(f & ROOT_FL_ROOT)))
			return 0;
	}
	if (g->exit_debt && !fg_debt_pay(g)) {
		ring_count_lost(1);
		return 0;
	}
	const struct arg_spec *spec = args_of(id);
	uint64_t ts = 0;
	if (spec && spec->n) {
		uint8_t data[FMT_ARGS_BUF];
		emit_entry_data(id, data, (uint16_t)args_encode_values(spec, args, nargs, data),
				&ts);
	} else {
		emit_entry(id, &ts);
	}
	if (!ts)
		return 0;
	return spec && spec->has_ret ? 2 : 1;
}

/* The exit of such a call that returned RET (OWED: what the entry
 * returned), under RCU. */
HIDDEN void trace_graph_call_exit(uint32_t id, int owed, long ret)
{
	const struct arg_spec *spec = owed == 2 ? args_of(id) : NULL;
	if (!spec || !spec->has_ret) {
		emit_exit();
		return;
	}
	/* as a return trampoline leaves them: the integer result first, the
	 * floating-point one (none here) further on */
	unsigned long rv[32] = {(unsigned long)ret};
	uint8_t data[FMT_ARGS_BUF];
	uint16_t n = (uint16_t)args_encode_ret(spec, rv, 0, data);
	uint64_t ts;
	uint8_t *p = ring_event_begin(RING_EV_EXIT_RETVAL, 2u + n, &ts);
	if (p) {
		memcpy(p, &n, 2);
		memcpy(p + 2, data, n);
		ring_event_end(p);
	}
}

/* ---- frames that leave without returning -------------------------------- */

/* Put every original return address back (an unwinder is about to walk).
 * From the top down: frames of a tail call share a slot, and the bottom
 * one of them holds the real return address. */
static void unhook_all(struct fg_thread *g)
{
	for (uint32_t i = g->depth; i-- > 0;) {
		struct shadow_ent *e = &g->ent[i];
		if (e->hooked && *e->slot == e->hook) {
			*e->slot = e->orig;
			e->hooked = 0;
		}
	}
}

#if ARCH_RET_IN_REG
/*
 * Where the return address comes in a register (aarch64's x30, riscv64's
 * ra), the slot is the trampoline's copy at entry sp - 8, which orders
 * frames but is not what an unwinder reads: the function got the hook in
 * the register and saved it where its prologue chose, which only its CFI
 * says (gcc on aarch64: the frame record at the bottom of the frame; on
 * riscv64 often entry sp - 8, the slot itself, but not always). Rather
 * than interpret CFI, every word of the function's frame that holds its
 * hook is rewritten. The frame lies between its entry sp (slot + 1) and
 * the entry sp of the next traced frame below it (or LO, the live bottom
 * of the stack). The untraced frames in between hold their own return
 * addresses, not the hook (one the function tail-called holds it, and is
 * rightly unhooked with it). No other word holds the hook's value but a
 * copy of the return address (__builtin_return_address), which then reads
 * what it would untraced, and dead words, which nobody reads. The catch
 * rewrites the original back to the hook the same way; a rewrite at both
 * ends costs a read of the stack between the throw and the bottom traced
 * frame. The scan never leaves the stack the throw is on.
 */

/* The frames that can be scanned: ent[BASE..depth), from the top down to
 * the first without a slot (a longjmp mark, the bottom of a makecontext
 * stack) or outside the stack LO is on (whose memory is known to be
 * there): the alternate signal stack, the current context's, or the
 * thread's own. On a stack none of them is (a switch no wrapper saw), or
 * whose bounds are not known, none. */
static uint32_t unwind_base(struct fg_thread *g, uintptr_t lo)
{
	uintptr_t slo, shi;
	stack_t ss;
	if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) {
		slo = (uintptr_t)ss.ss_sp;
		shi = slo + ss.ss_size;
	} else if (g->ctx_lo != g->ctx_hi && lo >= g->ctx_lo && lo < g->ctx_hi) {
		slo = g->ctx_lo;
		shi = g->ctx_hi;
	} else {
		if (!g->stack_hi) {
			pthread_attr_t a;
			void *addr;
			size_t size;
			if (pthread_getattr_np(pthread_self(), &a) == 0) {
				if (pthread_attr_getstack(&a, &addr, &size) == 0) {
					g->stack_lo = (uintptr_t)addr;
					g->stack_hi = (uintptr_t)addr + size;
				}
				pthread_attr_destroy(&a);
			}
		}
		slo = g->stack_lo;
		shi = g->stack_hi;
	}
	uint32_t i = g->depth;
	if (lo < slo || lo >= shi)
		return i;
	while (i > 0) {
		uintptr_t s = (uintptr_t)g->ent[i - 1].slot;
		if (!s || s < slo || s >= shi)
			break;
		i--;
	}
	return i;
}

/* The bottom of frame I: the entry sp of the next traced frame below it
 * (tail calls share its slot), not below LO. */
static uintptr_t frame_low(const struct fg_thread *g, uint32_t i, uintptr_t lo)
{
	uintptr_t s = (uintptr_t)g->ent[i].slot;
	for (uint32_t k = i + 1; k < g->depth; k++) {
		uintptr_t t = (uintptr_t)g->ent[k].slot;
		if (t && t < s) {
			t += sizeof(uintptr_t);
			return t > lo ? t : lo;
		}
	}
	return lo;
}

/* Rewrite every word FROM in frame I (above LO) to TO; how many. */
static unsigned frame_swap(const struct fg_thread *g, uint32_t i, uintptr_t lo, uintptr_t from,
			   uintptr_t to)
{
	uintptr_t hi = (uintptr_t)(g->ent[i].slot + 1);
	uintptr_t *p =
	    (uintptr_t *)((frame_low(g, i, lo) + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1));
	unsigned n = 0;
	for (; (uintptr_t)p < hi; p++) {
		if (*p == from) {
			*p = to;
			n++;
		}
	}
	return n;
}

/* Put the original return addresses back where an unwinder reads them;
 * LO: the caller's sp (the live stack starts there). */
static void unhook_for_unwind(struct fg_thread *g, uintptr_t lo)
{
	/* from the top down, as unhook_all: a tail call's frames share one */
	for (uint32_t i = g->depth, base = unwind_base(g, lo); i-- > base;) {
		struct shadow_ent *e = &g->ent[i];
		if (e->hooked && frame_swap(g, i, lo, e->hook, e->orig))
			e->hooked = 0;
	}
}

/* The frames that survived a catch return through their hooks again. */
static void rehook_after_catch(struct fg_thread *g, uintptr_t lo)
{
	for (uint32_t i = unwind_base(g, lo); i < g->depth; i++) {
		struct shadow_ent *e = &g->ent[i];
		if (!e->hooked && frame_swap(g, i, lo, e->orig, e->hook))
			e->hooked = 1;
	}
}
#else
/* The return address is at the slot, where the call put it. */
static void unhook_for_unwind(struct fg_thread *g, uintptr_t lo)
{
	(void)lo;
	unhook_all(g);
}

static void rehook_after_catch(struct fg_thread *g, uintptr_t lo)
{
	(void)lo;
	for (uint32_t i = 0; i < g->depth; i++) {
		struct shadow_ent *e = &g->ent[i];
		if (!e->hooked && e->slot && *e->slot == e->orig) {
			*e->slot = e->hook;
			e->hooked = 1;
		}
	}
}
#endif

/* The caller's sp: the canonical frame address of the function this
 * expands in (x86-64: above the return address; aarch64, riscv64: the sp
 * at its entry). */
#ifdef ARCH_CALLER_SP
#define CALLER_SP() ARCH_CALLER_SP()
#else
#define CALLER_SP() ((uintptr_t)__builtin_dwarf_cfa())
#endif

void trace_fatal_unhook(void)
{
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++; /* for good: the thread is dying */
		/* at the slots only: in a fatal signal's handler, finding the
		 * stack's bounds (malloc, /proc) is not safe */
		unhook_all(g);
	}
}

typedef int (*unwind_raise_fn)(void *);

PUBLIC int _Unwind_RaiseException(void *exc)
{
	static unwind_raise_fn real;
	if (!real)
		real = (unwind_raise_fn)dft_real("_Unwind_RaiseException");
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		unhook_for_unwind(g, CALLER_SP());
		dft_self.recursion--;
	}
	return real ? real(exc) : 5 /* _URC_END_OF_STACK */;
}
DFT_WRAPPER(_Unwind_RaiseException);

PUBLIC int _Unwind_Resume_or_Rethrow(void *exc)
{
	static unwind_raise_fn real;
	if (!real)
		real = (unwind_raise_fn)dft_real("_Unwind_Resume_or_Rethrow");
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		unhook_for_unwind(g, CALLER_SP());
		dft_self.recursion--;
	}
	return real ? real(exc) : 5;
}
DFT_WRAPPER(_Unwind_Resume_or_Rethrow);

/*
 * A landing pad that ran cleanups (destructors) resumes the unwinding here.
 * A cleanup may itself have caught an exception of its own, whose
 * __cxa_begin_catch re-hooked every surviving frame, those this unwinding
 * has still to walk through included: take the hooks out again.
 * Not on riscv64: a program whose exception passes through this wrapper
 * there (gcc -O2, CALL_OPS sites) aborts in libgcc's unwinder, the cause
 * not found yet; such nested catches stay unsupported there.
 */
#ifndef __riscv
PUBLIC void _Unwind_Resume(void *exc)
{
	static void (*real)(void *);
	if (!real)
		real = (void (*)(void *))dft_real("_Unwind_Resume");
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		unhook_for_unwind(g, CALLER_SP());
		dft_self.recursion--;
	}
	if (!real)
		abort(); /* what libgcc does when the unwinding cannot go on */
	real(exc);
	__builtin_unreachable();
}
DFT_WRAPPER(_Unwind_Resume);
#endif

/*
 * A backtrace reads every frame's return address, and stopped at the first
 * traced frame's hook (no unwind information there): the originals go back
 * for its duration, the hooks after. glibc's backtrace() reaches libgcc's
 * _Unwind_Backtrace by its own dlsym, so both are wrapped.
 */
static void unhook_around(struct fg_thread *g, uintptr_t lo, int back)
{
	dft_self.recursion++;
	if (back)
		rehook_after_catch(g, lo);
	else
		unhook_for_unwind(g, lo);
	dft_self.recursion--;
}

typedef int (*unwind_trace_fn)(void *ctx, void *arg);
typedef int (*unwind_backtrace_fn)(unwind_trace_fn, void *);

/* The caller's callback, without the first frame: the wrapper's own. */
struct bt_fwd {
	unwind_trace_fn fn;
	void *arg;
	int seen;
};

static int bt_forward(void *ctx, void *arg)
{
	struct bt_fwd *f = arg;
	if (!f->seen++)
		return 0; /* _URC_NO_REASON: go on */
	return f->fn(ctx, f->arg);
}

PUBLIC int _Unwind_Backtrace(unwind_trace_fn fn, void *arg)
{
	static unwind_backtrace_fn real;
	if (!real)
		real = (unwind_backtrace_fn)dft_real("_Unwind_Backtrace");
	struct fg_thread *g = fg_self;
	uintptr_t lo = CALLER_SP();
	struct bt_fwd f = {fn, arg, 0};
	if (g)
		unhook_around(g, lo, 0);
	int r = real ? real(bt_forward, &f) : 5 /* _URC_END_OF_STACK */;
	if (g)
		unhook_around(g, lo, 1);
	return r;
}
DFT_WRAPPER(_Unwind_Backtrace);

/* Frames asked of backtrace() through a copy on the stack (a crash
 * handler's alternate stack may be small); a longer one through a mapping
 * of its own (mmap: safe in a signal handler, unlike malloc), or, without
 * memory, in place and shifted, one frame short. */
#define BT_MAX 128

PUBLIC int backtrace(void **buf, int size)
{
	static int (*real)(void **, int);
	if (!real)
		real = (int (*)(void **, int))dft_real("backtrace");
	if (!real || size <= 0)
		return 0;
	struct fg_thread *g = fg_self;
	uintptr_t lo = CALLER_SP();
	/* one frame more, the wrapper's, dropped: what the caller would get */
	void *tmp[BT_MAX + 1], **to = tmp;
	size_t maplen = 0;
	if (size > BT_MAX) {
		maplen = ((size_t)size + 1) * sizeof(void *);
		to = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (to == MAP_FAILED) {
			to = buf;
			maplen = 0;
		}
	}
	int ask = to == buf ? size : size + 1;
	if (g)
		unhook_around(g, lo, 0);
	int r = real(to, ask);
	if (g)
		unhook_around(g, lo, 1);
	if (r > 1)
		memmove(buf, to + 1, (size_t)(r - 1) * sizeof(void *));
	if (maplen)
		munmap(to, maplen);
	return r > 1 ? r - 1 : 0;
}
DFT_WRAPPER(backtrace);

/* The catching frame called us: frames below it were unwound. */
PUBLIC __attribute__((noinline)) void *__cxa_begin_catch(void *exc)
{
	static void *(*real)(void *);
	if (!real)
		real = (void *(*)(void *))dft_real("__cxa_begin_catch");
	struct fg_thread *g = fg_self;
	if (g && g->depth) {
		dft_self.recursion++;
		uintptr_t caller_sp = CALLER_SP();
		close_dead(g, caller_sp, NULL);
		rehook_after_catch(g, caller_sp);
		dft_self.recursion--;
	}
	return real ? real(exc) : NULL;
}
DFT_WRAPPER(__cxa_begin_catch);

PUBLIC void pthread_exit(void *ret)
{
	static void (*real)(void *);
	if (!real)
		real = (void (*)(void *))dft_real("pthread_exit");
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++; /* for good: the thread is leaving */
		unhook_for_unwind(g, CALLER_SP());
		close_unwound(g, g->depth, ring_now());
	}
	real(ret);
	__builtin_unreachable();
}
DFT_WRAPPER(pthread_exit);

/* ---- detach ------------------------------------------------------------- */

/*
 * Detach, with every other thread stopped: put back every return address
 * the graph tracer replaced in thread T's stack (it cannot be running its
 * epilogue: the agent checked its instruction pointer) and free its
 * shadow stack. Every thread's fg_self lies at the same distance from its
 * dft_self: one static TLS block per thread, laid out alike.
 */
static struct fg_thread **fg_of(struct dft_thread *t)
{
	ptrdiff_t off = (char *)&fg_self - (char *)&dft_self;
	return (struct fg_thread **)((char *)t + off);
}

/*
 * Detach, every other thread stopped, before trace_detach_thread: where
 * the return address comes in a register, thread T's hooked functions
 * hold their hook where their code put it (the frame record, x30 of a
 * leaf, a signal frame's saved x30), not at the slot that unhook_all
 * rewrites; left there, they would return into unmapped code. The agent
 * gives the thread's SP, the mapping [LO, HI) that holds it and its link
 * register *LINK. The frames on that stack are rewritten as for an
 * unwinder (frame_swap, from SP: a signal frame lies inside the frame of
 * the function it interrupted); *LINK, if it holds the hook of the
 * deepest live frame (a leaf, an epilogue), becomes its original (and
 * the agent writes it back). Frames on another stack than SP's (below a
 * handler on the alternate stack, a context set aside) are not reached.
 */
HIDDEN void trace_detach_frames(struct dft_thread *t, uint64_t sp, uint64_t lo, uint64_t hi,
				uint64_t *link)
{
#if ARCH_RET_IN_REG
	struct fg_thread *g = *fg_of(t);
	if (!g || sp < lo || sp >= hi)
		return;
	uint32_t base = g->depth;
	while (base > 0) {
		uintptr_t s = (uintptr_t)g->ent[base - 1].slot;
		if (!s || s < lo || s >= hi)
			break;
		base--;
	}
	/* the link register: the deepest live frame's (frames below sp were
	 * left by longjmp), through a tail call's frames on the same slot */
	for (uint32_t i = g->depth; i-- > base;) {
		const struct shadow_ent *e = &g->ent[i];
		if ((uintptr_t)e->slot < sp)
			continue;
		if (!e->hooked || *link != e->hook)
			break;
		*link = e->orig;
		if (i == base || g->ent[i - 1].slot != e->slot)
			break;
	}
	for (uint32_t i = g->depth; i-- > base;) {
		struct shadow_ent *e = &g->ent[i];
		if (e->hooked && frame_swap(g, i, sp, e->hook, e->orig))
			e->hooked = 0;
	}
#else
	(void)t, (void)sp, (void)lo, (void)hi, (void)link;
#endif
}

HIDDEN int trace_detach_thread(struct dft_thread *t, void *ctx UNUSED)
{
	struct fg_thread **gp = fg_of(t);
	struct fg_thread *g = *gp;
	if (!g)
		return 0;
	unhook_all(g);
	ctx_unhook_all(g);
	*gp = NULL;
	ctx_free(g);
	fg_free(g);
	return 0;
}
