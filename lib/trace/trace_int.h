/* SPDX-License-Identifier: MIT */
/*
 * trace_int.h - state of the built-in tracers (trace.c) that the
 * function-graph fast path (graph_fast.c) reads too.
 */
#ifndef DYNFTRACE_TRACE_INT_H
#define DYNFTRACE_TRACE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

struct prof_ent;

enum tracer_kind { TR_NONE, TR_FUNCTION, TR_GRAPH, TR_PROFILE };

/*
 * Configuration. dir, img, filter, notrace: written by trace_init (and img
 * by the fork child) before anything reads them. kind, max_depth and
 * time_filter: written by trace_init, then by the control thread under
 * tctl_lock (kind only while trace_ops is unregistered); callbacks read
 * them with READ_ONCE.
 */
struct trace_cfg {
	enum tracer_kind kind;
	char dir[4096];
	char img[64];
	unsigned max_depth;
	uint64_t time_filter;
	const char *filter, *notrace; /* comma-separated globs (environment) */
};
extern struct trace_cfg trace_cfg HIDDEN;
extern int trace_rec_on HIDDEN; /* recording into a session directory: set by
				  trace_init before any callback */
/* The ring exists (recording, or live control's buffers): set before the
 * ring is turned on (trace_ring_set, below), never cleared. The ring alone
 * is turned off while a trace_off or finish trigger pauses recording
 * (trigger.c). */
extern int trace_ring_made HIDDEN;

/* Graph roots (set_graph_function, or -F with function_graph/profile) and
 * graph_notrace functions, by site id; replaced under patch_lock, read
 * under RCU (callbacks). NULL: no graph list. */
#define ROOT_FL_ROOT	1
#define ROOT_FL_NOTRACE 2
struct root_map {
	uint32_t n;
	uint8_t has_roots;   /* graphs start only at ROOT_FL_ROOT functions */
	uint8_t has_notrace; /* some function is ROOT_FL_NOTRACE */
	uint8_t flags[];
};
extern struct root_map *trace_roots HIDDEN;

/*
 * The graph shortcut's view of the configuration in two words, so that its
 * assembly (tramp.S) tests one word where it would test the ops, the ring,
 * kind, time_filter and trace_roots, and compares the depth once. Callbacks
 * read them inside the RCU read side, as they read the fields themselves.
 *   trace_fast:      TR_GRAPH when function_graph runs with no time filter
 *                    and no graph lists, TR_FUNCTION for the function
 *                    tracer, TR_NONE otherwise (the generic entry decides);
 *                    derived by trace_fast_update (session.c) after every
 *                    change of those fields, under its own lock (their
 *                    writers hold different locks). Or'ed with two state
 *                    bits, each changed by one atomic RMW: TF_RING_OFF
 *                    while the tracers must not write into the ring (the
 *                    one place that state lives: trace_ring_set,
 *                    trace_ring_is_on), TF_OPS_OFF while trace_ops is not
 *                    registered (set before an unregister's grace period,
 *                    cleared after a register).
 *                    So the word equals TR_GRAPH or TR_FUNCTION only when
 *                    the shortcut may trace.
 *   trace_depth_lim: max_depth, or SHADOW_MAX if that is lower or there
 *                    is no limit: one test in the shortcut's entry for
 *                    both (a depth at SHADOW_MAX goes the generic way).
 */
#define TF_RING_OFF 0x100u
#define TF_OPS_OFF  0x200u
#define TF_BITS	    (TF_RING_OFF | TF_OPS_OFF)
extern uint32_t trace_fast HIDDEN;
extern uint32_t trace_depth_lim HIDDEN;
/* The tracers write events into the ring (ring.h): recording, or live
 * control's buffers in memory. Turned on before any callback can run
 * (trace_init) or before the control thread can start a tracer
 * (trace_ctl_start), after the ring is made. */
void trace_ring_set(int on) HIDDEN;
static inline int trace_ring_is_on(void)
{
	return !(__atomic_load_n(&trace_fast, __ATOMIC_ACQUIRE) & TF_RING_OFF);
}
void trace_fast_ops(int live) HIDDEN;
void trace_fast_update(void) HIDDEN;

/* Shadow stack: the thread's own (see trace.c). */
struct shadow_ent {
	uintptr_t *slot;   /* where the return address lives */
	uintptr_t orig;	   /* the real return address */
	uintptr_t hook;	   /* what *slot holds while hooked: dft_return_tramp or a thunk's */
	uint64_t ts;	   /* entry time */
	uint64_t child_ns; /* time spent in traced callees (profile) */
	uint32_t id;
	uint8_t hooked; /* *slot holds hook (or will: a thunk's call writes it) */
	uint8_t kind;	/* enum tracer_kind at entry */
	uint8_t fl;	/* SE_* */
	uint8_t fl2;	/* SE2_* (the graph shortcut stores hooked..fl2 as one
			   word, and its exit tests them as one) */
};
#define SE_RING	   1  /* its entry event went to the ring: exit goes there too */
#define SE_SKIP	   2  /* not traced: pushed only to close a trigger frame */
#define SE_NOTRACE 4  /* a graph_notrace function: nothing below it is traced */
#define SE_ROOT	   8  /* a graph root (-F, set_graph_function) */
#define SE_TRIG	   16 /* opened a trigger frame (trigger.c: depth=, time=) */
/* A mark pushed by longjmp (context.c): slot NULL, so that the next traced
 * entry or return of the thread takes the slow path (its slot is above
 * NULL; NULL is no return's slot), where the jump is told apart: within
 * the stack (an unwind) or to another one (a context switch). Never hooked,
 * never in the ring. */
#define SE_JUMP 32
/* The bottom of a context that runs on a stack of its own (makecontext):
 * slot NULL as well, so that while the context has no frame open every
 * traced entry takes the slow path, which tells a call on this stack from
 * one on another (the context ended or was left, by uc_link or a jump).
 * Never closed as unwound (close_dead stops at it); it comes and goes with
 * its context. */
#define SE_BASE 64

struct fg_ctx;
#define SE_RETVAL 128 /* its return value is wanted (args.c): never the fast exits' */
/* fl2: */
#define SE2_PROF_OUTER 1 /* profile: no other frame of its id open below */
#define SE2_DEBT       2 /* exits are owed (shadow.c: fg_debt_pay): its exit is the slow one */

#define SHADOW_MAX    4096
#define TRIG_NEST_MAX 64 /* nested depth=/time= functions applied per thread */

struct fg_thread {
	uint32_t depth;
	uint32_t filter_depth;	/* open -F roots */
	uint32_t notrace_depth; /* open graph_notrace frames */
	uint32_t exit_debt;	/* exits of ring frames not written (shadow.c:
				   fg_debt_pay); with notrace_depth, one quadword
				   the shortcut's entry tests */
	uint64_t overflow;	/* entries not traced for lack of room */
	struct prof_ent *prof;	/* profile table, by site id (see prof_lock) */
	uint32_t prof_n;
	uint32_t prof_linked; /* on prof_threads */
	uint64_t prof_gen;    /* the profile session its counters belong to */
	struct fg_thread *prof_next, *prof_prev;
	struct shadow_ent ent[SHADOW_MAX];
	/* Triggers (trigger.c; after ent[]: the assembly's offsets stay):
	 * the thread's limits while depth= or time= functions run, and what
	 * each of them replaced. */
	uint32_t trig_n;     /* open trigger frames, each counted in notrace_depth too */
	uint32_t trig_limit; /* no entry is traced at this shadow depth (0: max_depth's) */
	uint64_t trig_time;  /* the time filter inside (0: the configured one) */
	struct {
		uint32_t limit;
		uint64_t time;
	} trig_save[TRIG_NEST_MAX];
	/* Contexts (context.c): ent[] holds the frames of one stack, context
	 * ctx_id (0: the thread's first); those of the others are set aside
	 * in ctx[] until the thread switches back to them. */
	uint32_t ctx_id;
	uint32_t ctx_next;	  /* the id of the next new context */
	uintptr_t ctx_lo, ctx_hi; /* the current context's stack, if known (else 0, 0) */
	struct fg_ctx *ctx;	  /* mmap'd: ctx_cap slots, ctx_n used */
	uint32_t ctx_n, ctx_cap;
	/* The thread's own stack, found at its first exception where the
	 * return address comes in a register (graph.c: unwind_base); 0, 0
	 * until then, or if unknown. */
	uintptr_t stack_lo, stack_hi;
};

extern __thread struct fg_thread *fg_self HIDDEN __attribute__((tls_model("initial-exec")));

/* shadow.c: the calling thread's state, made at its first traced call
 * (NULL: no memory); freed by whoever clears the thread's fg_self, after
 * ctx_free. */
struct fg_thread *fg_alloc(void) HIDDEN;
void fg_free(struct fg_thread *g) HIDDEN;
/* shadow.c: write what the thread owes (g->exit_debt) as one exit_lost
 * event, before any event that moves the reader's stack; false: still owed. */
bool fg_debt_pay(struct fg_thread *g) HIDDEN;
static inline struct fg_thread *fg_get(void)
{
	struct fg_thread *g = fg_self;
	return __builtin_expect(g != NULL, 1) ? g : fg_alloc();
}

/* context.c: stack switches. ctx_resolve: the thread's next traced event
 * (an entry or return through SLOT) found the top frame's slot below its
 * own, or (a return) not its own: a longjmp mark is dropped and the
 * frames are told apart. CTX_SAME: the same stack, frames below SLOT were
 * left (an unwind); CTX_NEST: a signal handler on the alternate stack,
 * nothing was left; CTX_SWITCHED: another stack, whose frames ent[] now
 * holds. */
enum { CTX_SAME, CTX_NEST, CTX_SWITCHED };
int ctx_resolve(struct fg_thread *g, uintptr_t *slot) HIDDEN;
/* Put back the return addresses of the contexts set aside (detach), and
 * free them (thread exit). */
void ctx_unhook_all(struct fg_thread *g) HIDDEN;
void ctx_free(struct fg_thread *g) HIDDEN;

/* The tracers' callbacks (function.c, graph.c), registered by trace.c. */
struct dynftrace_ops;
struct dynftrace_regs;
void trace_function_write(uint32_t id, uintptr_t ip, uintptr_t parent) HIDDEN;
void trace_function_func(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
			 struct dynftrace_regs *regs) HIDDEN;
void trace_graph_func(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
		      struct dynftrace_regs *regs) HIDDEN;

/* graph_fast.c: the fast exit of function_graph for dft_return_tramp (see
 * there; the graph shortcut's are in tramp.S). */
uintptr_t dft_graph_fast_return(uintptr_t sp, uint64_t tsc) HIDDEN;
/* trace.c: the entry of function ID whose return address is at SLOT (see
 * there); 1: traced, it returns through HOOK. */
int trace_graph_enter(uint32_t id, uintptr_t *slot, uintptr_t hook) HIDDEN;
/* graph.c: an exec wrapper's call of site ID, written without a shadow
 * entry: its entry (0: not written, 1, 2: its return value wanted), then
 * its exit if the exec failed (RCU read side held for both). */
int trace_graph_call_entry(uint32_t id, const unsigned long *args, unsigned nargs) HIDDEN;
void trace_graph_call_exit(uint32_t id, int owed, long ret) HIDDEN;

/* profile.c: the profile tracer's tables (see its header). */
int profile_enter(struct fg_thread *g, uint32_t id) HIDDEN;
void profile_account(struct fg_thread *g, const struct shadow_ent *e, uint64_t dur) HIDDEN;
void profile_thread_merge(void) HIDDEN; /* this thread's counts into the process's */
void profile_thread_gone(struct fg_thread *g) HIDDEN;
void profile_dump(void) HIDDEN;		 /* profile-IMG.txt */
void profile_fatal_dump(int sig) HIDDEN; /* async-signal-safe */
void profile_atfork_child(struct fg_thread *g) HIDDEN;
void profile_restart(void) HIDDEN;

#endif
