/* SPDX-License-Identifier: MIT */
/*
 * context.c - stack switches of the graph tracers: swapcontext, setcontext
 * and longjmp to another stack switch contexts, they unwind nothing.
 *
 * The shadow stack (graph.c) is the thread's, but each frame belongs to the
 * stack it was called on: a function that switched to another context is
 * still open, and it returns after the thread switched back. So ent[] holds
 * the frames of the current context only. A switch sets them aside (one
 * struct fg_ctx, keyed by what will name the context when the thread comes
 * back) and brings back those of the context switched to. The ring gets one
 * ctx_switch event: the top DEPTH open entries are context FROM's (readers
 * set them aside), the ones set aside as TO's come back on top.
 *
 * How a switch is known (docs/ARCHITECTURE.md, "Context switches"):
 *   - swapcontext(OUCP, UCP) and setcontext(UCP), wrapped (hooked in the
 *     GOT when attached): UCP is a context set aside under that ucontext
 *     (swapcontext saved it there), or a new one: its uc_stack, which does
 *     not hold our stack pointer, is the stack makecontext gave it. The
 *     current frames go aside under OUCP. Any other UCP (a getcontext of
 *     this very stack: a jump back, as longjmp) is left to stack position.
 *   - a context on a stack of its own starts with a base mark (SE_BASE):
 *     while it has no frame open, every traced entry takes the slow path,
 *     so the thread's return to another context without a wrapper
 *     (makecontext's uc_link after its function returned, a jump) is found
 *     at its first traced entry or return.
 *   - longjmp, siglongjmp, _longjmp, __longjmp_chk (wrapped) push a SE_JUMP
 *     mark, whose NULL slot sends the next traced entry or return to the
 *     slow path. There, and at every slow-path event that finds frames
 *     below its own slot or a return that is not the top frame's,
 *     ctx_resolve() decides by stack position: the return of a context's
 *     innermost frame, or a slot inside a context's known stack, is a
 *     switch to it; a slot outside the current context's known stack is a
 *     switch back to the thread's own stack; a slot on the signal
 *     alternate stack being run is a handler nested on the frames; anything
 *     else happened on the current stack: frames below the slot were
 *     unwound, as before.
 * Without the wrappers (attach before a hook, a switch written in assembly,
 * stacks never seen in a ucontext) a switch is still found where it
 * reaches the slow path: returns of frames set aside; entries above the
 * top frame. An entry below the top frame on another stack is then
 * pushed on the current context's frames until the next slow-path event.
 *
 * Only the thread touches its contexts, and the wrappers and ctx_resolve
 * run with dft_self.recursion held (a handler traces nothing meanwhile).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "got.h"
#include "ring.h"
#include "trace_int.h"

/* A context set aside. */
struct fg_ctx {
	uint32_t id;
	uint32_t used;		/* 0: a free slot (ent kept for reuse) */
	uint32_t n, cap;	/* frames, room in ent */
	uint64_t seq;		/* when it was set aside (the latest wins a tie) */
	uintptr_t key;		/* the ucontext_t it was saved into, or 0 */
	uintptr_t lo, hi;	/* its stack, if known (else 0, 0) */
	struct shadow_ent *ent; /* mmap'd */
};

/* Contexts set aside per thread. A thread that leaves more at once keeps
 * the new ones' frames on the current context (the old behaviour). */
#define CTX_MAX 4096

static uint64_t ctx_seq_next(struct fg_thread *g)
{
	uint64_t s = 0;
	for (uint32_t i = 0; i < g->ctx_n; i++)
		if (g->ctx[i].used && g->ctx[i].seq >= s)
			s = g->ctx[i].seq + 1;
	return s;
}

static struct fg_ctx *find_key(struct fg_thread *g, uintptr_t key)
{
	for (uint32_t i = 0; i < g->ctx_n; i++)
		if (g->ctx[i].used && g->ctx[i].key == key)
			return &g->ctx[i];
	return NULL;
}

/* The context whose innermost frame returns through SLOT. */
static struct fg_ctx *find_top(struct fg_thread *g, uintptr_t *slot)
{
	for (uint32_t i = 0; i < g->ctx_n; i++) {
		struct fg_ctx *c = &g->ctx[i];
		if (c->used && c->n && c->ent[c->n - 1].slot == slot)
			return c;
	}
	return NULL;
}

/* The context whose known stack holds A; with A == 0, the latest set
 * aside of those whose stack is not known (the thread's own). */
static struct fg_ctx *find_addr(struct fg_thread *g, uintptr_t a)
{
	struct fg_ctx *best = NULL;
	for (uint32_t i = 0; i < g->ctx_n; i++) {
		struct fg_ctx *c = &g->ctx[i];
		if (!c->used)
			continue;
		if (a ? c->lo <= a && a < c->hi : c->lo == c->hi) {
			if (a)
				return c;
			if (!best || c->seq > best->seq)
				best = c;
		}
	}
	return best;
}

/* A free slot with room for N frames, or NULL. */
static struct fg_ctx *ctx_slot(struct fg_thread *g, uint32_t n)
{
	struct fg_ctx *c = NULL;
	if (!g->ctx) {
		void *p = mmap(NULL, CTX_MAX * sizeof(*g->ctx), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		g->ctx = p;
		g->ctx_cap = CTX_MAX;
	}
	for (uint32_t i = 0; i < g->ctx_n; i++) {
		if (g->ctx[i].used)
			continue;
		if (g->ctx[i].cap >= n)
			return &g->ctx[i];
		c = &g->ctx[i];
	}
	if (!c) {
		if (g->ctx_n == g->ctx_cap)
			return NULL;
		c = &g->ctx[g->ctx_n++];
	}
	size_t page = 4096, sz = ((size_t)n * sizeof(struct shadow_ent) + page - 1) & ~(page - 1);
	void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (c->ent)
		munmap(c->ent, (size_t)c->cap * sizeof(struct shadow_ent));
	c->ent = p;
	c->cap = (uint32_t)(sz / sizeof(struct shadow_ent));
	return c;
}

/* The frames that count the thread's open roots and graph_notrace frames
 * leave with their context and come back with it. (A trigger's limits,
 * depth= and time=, stay with the thread until its function returns.) */
static void count_frames(struct fg_thread *g, const struct shadow_ent *e, uint32_t n, int sign)
{
	for (uint32_t i = 0; i < n; i++) {
		if (e[i].fl & SE_ROOT)
			g->filter_depth += (uint32_t)sign;
		if ((e[i].fl & (SE_NOTRACE | SE_SKIP)) == SE_NOTRACE)
			g->notrace_depth += (uint32_t)sign;
	}
}

static void drop_marks(struct fg_thread *g)
{
	while (g->depth && (g->ent[g->depth - 1].fl & SE_JUMP))
		g->depth--;
}

/*
 * Switch from the current context, its frames set aside under KEY, to
 * context TO (its frames come back), or with TO NULL to a new context,
 * id NEW_ID, on the stack [LO, HI) (0, 0: not known). -ENOMEM: nothing
 * changed.
 */
static int ctx_switch(struct fg_thread *g, uintptr_t key, struct fg_ctx *to, uint32_t new_id,
		      uintptr_t lo, uintptr_t hi)
{
	uint32_t from = g->ctx_id, nring = 0;
	drop_marks(g);
	if (g->depth == 1 && (g->ent[0].fl & SE_BASE))
		g->depth = 0; /* nothing open: it is made again if needed */
	if (g->depth) {
		struct fg_ctx *c = ctx_slot(g, g->depth);
		if (!c)
			return -ENOMEM;
		memcpy(c->ent, g->ent, g->depth * sizeof(struct shadow_ent));
		c->n = g->depth;
		for (uint32_t i = 0; i < c->n; i++)
			nring += (c->ent[i].fl & SE_RING) != 0;
		count_frames(g, c->ent, c->n, -1);
		struct fg_ctx *old = key ? find_key(g, key) : NULL;
		if (old)
			old->key = 0; /* that ucontext now holds this one */
		c->id = from;
		c->key = key;
		c->lo = g->ctx_lo;
		c->hi = g->ctx_hi;
		c->seq = ctx_seq_next(g);
		c->used = 1;
		g->depth = 0;
	}
	if (to) {
		memcpy(g->ent, to->ent, to->n * sizeof(struct shadow_ent));
		count_frames(g, to->ent, to->n, 1);
		g->ctx_id = to->id;
		g->ctx_lo = to->lo;
		g->ctx_hi = to->hi;
		to->used = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		g->depth = to->n;
	} else {
		g->ctx_id = new_id;
		g->ctx_lo = lo;
		g->ctx_hi = hi;
		if (lo != hi) {
			struct shadow_ent *e = &g->ent[0];
			memset(e, 0, sizeof(*e));
			e->kind = TR_NONE;
			e->fl = SE_BASE | SE_SKIP;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			g->depth = 1;
		}
	}
	if (trace_ring_is_on() && (nring || from != g->ctx_id)) {
		uint64_t ts;
		uint32_t v[3] = {nring, from, g->ctx_id};
		uint8_t *p = likely(!g->exit_debt) || fg_debt_pay(g)
				 ? ring_event_begin(RING_EV_CTX_SWITCH, sizeof(v), &ts)
				 : NULL;
		if (p) {
			memcpy(p, v, sizeof(v));
			ring_event_end(p);
		} else if (nring) {
			ring_count_lost(1);
		}
	}
	return 0;
}

static uint32_t ctx_new_id(struct fg_thread *g)
{
	return ++g->ctx_next;
}

/* Is A on the signal alternate stack the thread runs on? */
static int on_altstack(uintptr_t a)
{
	stack_t ss;
	if (sigaltstack(NULL, &ss) || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	return a >= (uintptr_t)ss.ss_sp && a - (uintptr_t)ss.ss_sp < ss.ss_size;
}

int ctx_resolve(struct fg_thread *g, uintptr_t *slot)
{
	uintptr_t a = (uintptr_t)slot;
	drop_marks(g);
	if (on_altstack(a))
		return CTX_NEST;
	struct fg_ctx *c = g->ctx_n ? find_top(g, slot) : NULL;
	if (!c && g->ctx_n)
		c = find_addr(g, a);
	if (!c) {
		if (g->ctx_lo == g->ctx_hi || (a >= g->ctx_lo && a < g->ctx_hi))
			/* on this stack: above its base, nothing was left */
			return g->depth && (g->ent[g->depth - 1].fl & SE_BASE) ? CTX_NEST
									       : CTX_SAME;
		/* off the current context's stack, onto no known one: the
		 * thread's own stack */
		c = g->ctx_n ? find_addr(g, 0) : NULL;
	}
	if (c ? ctx_switch(g, 0, c, 0, 0, 0) : ctx_switch(g, 0, NULL, ctx_new_id(g), 0, 0))
		return CTX_SAME;
	return CTX_SWITCHED;
}

/* ---- the wrappers --------------------------------------------------------- */

static void push_mark(struct fg_thread *g)
{
	if (g->depth == SHADOW_MAX || (g->depth && (g->ent[g->depth - 1].fl & SE_JUMP)))
		return;
	struct shadow_ent *e = &g->ent[g->depth];
	memset(e, 0, sizeof(*e));
	e->kind = TR_NONE;
	e->fl = SE_JUMP | SE_SKIP;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	g->depth++;
}

/*
 * The thread at SP is about to switch to UCP, saving its context into KEY
 * (0: setcontext): set the current frames aside and bring back UCP's, or
 * leave the switch to stack position (a jump mark).
 */
static void ctx_leave(struct fg_thread *g, uintptr_t key, const ucontext_t *ucp, uintptr_t sp)
{
	uintptr_t lo = 0, hi = 0;
	struct fg_ctx *c = NULL;
	drop_marks(g);
	if (ucp && g->ctx_n)
		c = find_key(g, (uintptr_t)ucp);
	if (!c && ucp) {
		uintptr_t base = (uintptr_t)ucp->uc_stack.ss_sp;
		size_t size = ucp->uc_stack.ss_size;
		if (base && size && size <= ((size_t)1 << 36) && base + size > base &&
		    !(sp >= base && sp - base < size)) {
			lo = base;
			hi = base + size;
			c = g->ctx_n ? find_addr(g, lo) : NULL;
		}
	}
	if ((!c && !hi) || ctx_switch(g, key, c, c ? 0 : ctx_new_id(g), lo, hi))
		push_mark(g);
}

typedef int (*swapcontext_fn)(ucontext_t *, const ucontext_t *);
typedef int (*setcontext_fn)(const ucontext_t *);

/* The wrappers' hidden aliases (DFT_WRAPPER). */
int dft_swapcontext(ucontext_t *oucp, const ucontext_t *ucp) HIDDEN;
int dft_setcontext(const ucontext_t *ucp) HIDDEN;
void dft_longjmp(struct __jmp_buf_tag env[1], int val) HIDDEN __attribute__((noreturn));
void dft__longjmp(struct __jmp_buf_tag env[1], int val) HIDDEN __attribute__((noreturn));
void dft_siglongjmp(struct __jmp_buf_tag env[1], int val) HIDDEN __attribute__((noreturn));
void dft___longjmp_chk(struct __jmp_buf_tag env[1], int val) HIDDEN __attribute__((noreturn));

PUBLIC int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	static swapcontext_fn real;
	if (!real)
		real = (swapcontext_fn)dft_real("swapcontext");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		ctx_leave(g, (uintptr_t)oucp, ucp, (uintptr_t)__builtin_frame_address(0));
		dft_self.recursion--;
	}
	/* A tail call: a context suspended here keeps no frame of ours (a
	 * detach may unmap the runtime meanwhile). Whoever switches back
	 * brings our frames back: a wrapper, or the slow path (ctx_resolve:
	 * uc_link, a jump). */
	return real(oucp, ucp);
}
DFT_WRAPPER(swapcontext);

PUBLIC int setcontext(const ucontext_t *ucp)
{
	static setcontext_fn real;
	if (!real)
		real = (setcontext_fn)dft_real("setcontext");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		ctx_leave(g, 0, ucp, (uintptr_t)__builtin_frame_address(0));
		dft_self.recursion--;
	}
	return real(ucp);
}
DFT_WRAPPER(setcontext);

static void jump_mark(void)
{
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		push_mark(g);
		dft_self.recursion--;
	}
}

typedef void (*longjmp_fn)(struct __jmp_buf_tag *, int);

/* The jump itself, by the C library. */
static __attribute__((noreturn)) void jump(longjmp_fn *real, const char *name,
					   struct __jmp_buf_tag *env, int val)
{
	longjmp_fn f = __atomic_load_n(real, __ATOMIC_RELAXED);
	if (!f) {
		f = (longjmp_fn)dft_real(name);
		__atomic_store_n(real, f, __ATOMIC_RELAXED);
	}
	if (!f)
		abort();
	jump_mark();
	f(env, val);
	__builtin_unreachable();
}

static longjmp_fn real_longjmp, real__longjmp, real_siglongjmp, real___longjmp_chk;

PUBLIC void longjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(&real_longjmp, "longjmp", env, val);
}
DFT_WRAPPER(longjmp);

PUBLIC void _longjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(&real__longjmp, "_longjmp", env, val);
}
DFT_WRAPPER(_longjmp);

PUBLIC void siglongjmp(struct __jmp_buf_tag env[1], int val)
{
	jump(&real_siglongjmp, "siglongjmp", env, val);
}
DFT_WRAPPER(siglongjmp);

void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
PUBLIC void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
{
	jump(&real___longjmp_chk, "__longjmp_chk", env, val);
}
DFT_WRAPPER(__longjmp_chk);

/* ---- detach, thread exit ---------------------------------------------------- */

/* Put back a return address on a stack that may be gone: through the
 * kernel, which answers EFAULT instead of a fault. */
static void unhook_safe(const struct shadow_ent *e)
{
	uintptr_t cur = 0;
	pid_t pid = getpid();
	struct iovec l = {&cur, sizeof(cur)}, r = {e->slot, sizeof(cur)};
	long n = syscall(SYS_process_vm_readv, pid, &l, 1, &r, 1, 0);
	if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
		/* refused (seccomp): the stack is most likely still there */
		if (*e->slot == e->hook)
			*e->slot = e->orig;
		return;
	}
	if (n != (long)sizeof(cur) || cur != e->hook)
		return;
	l.iov_base = (void *)&e->orig;
	syscall(SYS_process_vm_writev, pid, &l, 1, &r, 1, 0);
}

void ctx_unhook_all(struct fg_thread *g)
{
	for (uint32_t i = 0; i < g->ctx_n; i++) {
		struct fg_ctx *c = &g->ctx[i];
		if (!c->used)
			continue;
		for (uint32_t k = c->n; k-- > 0;)
			if (c->ent[k].hooked && c->ent[k].slot)
				unhook_safe(&c->ent[k]);
	}
}

void ctx_free(struct fg_thread *g)
{
	if (!g->ctx)
		return;
	for (uint32_t i = 0; i < g->ctx_n; i++)
		if (g->ctx[i].ent)
			munmap(g->ctx[i].ent, (size_t)g->ctx[i].cap * sizeof(struct shadow_ent));
	munmap(g->ctx, CTX_MAX * sizeof(*g->ctx));
	g->ctx = NULL;
	g->ctx_n = 0;
}
