/* SPDX-License-Identifier: MIT */
/*
 * dynftrace.h - the ops API of the dynftrace runtime (libdynftrace.so).
 *
 * A program built with function-entry sites (see `dynftrace cflags`) runs
 * with every site turned into one 5-byte NOP. Registering an ops patches the
 * sites its filter selects into calls, live, while other threads run them;
 * unregistering turns them back into NOPs.
 *
 * Contract shared by every function here:
 *  - Return 0 on success or a negative errno value; nothing is printed.
 *  - All of them may be called from any thread at any time, also while other
 *    threads run traced code. They serialise on one internal mutex.
 *  - None may be called from inside an ops callback: they return -EDEADLK.
 *  - After a fatal inconsistency (see dynftrace_get_stats().killed) tracing is
 *    stopped for good and they return -ENODEV.
 *
 * Concurrency rules for callers:
 *  | object              | who may touch it                                   |
 *  |---------------------|----------------------------------------------------|
 *  | ops->func, ->flags  | caller, only while the ops is not registered       |
 *  | ops->private        | caller; callbacks read it (caller synchronises)    |
 *  | internal fields     | the runtime, under its mutex; zero them before use |
 *  | the ops memory      | caller may free it once unregister has returned 0  |
 *
 * Filters are kept across unregister/register. The runtime allocates them;
 * before freeing an ops that had a filter or notrace selection, release them
 * with dynftrace_free_filter(ops) (or by resetting both selections with a
 * NULL glob), else they leak.
 */
#ifndef DYNFTRACE_DYNFTRACE_H
#define DYNFTRACE_DYNFTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#define DYNFTRACE_VERSION "0.1.0"

/* Exported from the runtime whatever the compiler's default visibility. */
#define DYNFTRACE_API __attribute__((visibility("default")))

struct dynftrace_ops;

/*
 * Saved machine state at a traced function's entry: the argument registers
 * and, for the graph tracer, room for the return value registers. The layout
 * is the architecture's (lib/arch/<arch>/regs.h); use the accessors.
 */
struct dynftrace_regs;

/* Argument N (0..5) of the traced function, as passed in registers; 0 for
 * an N out of range. Uses general registers only (callable from a
 * DYNFTRACE_OPS_FL_GPR_ONLY callback). */
DYNFTRACE_API unsigned long dynftrace_regs_arg(const struct dynftrace_regs *regs, int n);

/*
 * An ops callback. IP is the address of the traced site (inside the traced
 * function's first bytes), PARENT_IP the return address into its caller.
 * It runs on the traced thread with a per-thread recursion guard set: traced
 * functions it calls do not call it again. It must not throw C++ exceptions
 * nor longjmp out.
 */
typedef void (*dynftrace_func_t)(unsigned long ip, unsigned long parent_ip,
				 struct dynftrace_ops *ops, struct dynftrace_regs *regs);

/*
 * ops->flags. Unknown bits make dynftrace_register_ops() fail with -EINVAL.
 *
 * DYNFTRACE_OPS_FL_GPR_ONLY: the callback, and everything it calls, touches
 * no vector, x87 or MMX register (no floating point, no SIMD, no libc
 * function that may use them: memcpy, printf, malloc...). Build it, and all
 * it calls, with -mgeneral-regs-only (and without sanitizers, whose
 * run-time calls use them), as the kernel's ftrace callbacks never touch
 * the FPU. Its per-ops trampoline and its CALL_OPS trampoline then save
 * and restore the general registers only (rdi rsi rdx rcx r8 r9 rax r10;
 * r11 is saved in *regs but, scratch at a function's entry, not put back):
 * the traced function's xmm arguments stay live in their registers through
 * the call, and the xmm part of *regs is not filled. (On a function patched
 * by relocation, -P, every register is put back, r11 too: its callers may
 * keep values in any of them.) A callback that breaks
 * the promise corrupts the traced function's floating-point arguments. The
 * list function (several ops sharing a site) saves everything anyway.
 * dynftrace_register_direct() refuses it (-EINVAL): no trampoline runs
 * there.
 */
#define DYNFTRACE_OPS_FL_GPR_ONLY 0x1UL

struct dynftrace_ops {
	dynftrace_func_t func;
	unsigned long flags;
	void *private;

	/* Internal, owned by the runtime (protected by its mutex); must be
	 * zero before the first dynftrace_register_ops/set_filter. */
	struct dynftrace_ops *next; /* RCU list of registered ops */
	void *filter;		    /* struct ops_filter *: which sites are wanted */
	unsigned long state;	    /* OPS_ST_* bits */
	void *tramp;		    /* private trampoline, if any */
	unsigned long reserved[8];
};

/*
 * Start calling ops->func for every function its filter selects (all
 * functions when no filter was set). -EBUSY: already registered; -EINVAL:
 * no func; -ENOMEM; -EFAULT: a site held unexpected bytes (tracing is then
 * stopped, see killed).
 */
DYNFTRACE_API int dynftrace_register_ops(struct dynftrace_ops *ops);

/*
 * Stop calling ops->func. When it returns 0, no thread is still inside
 * ops->func, so the ops may be freed (release its filters first, see
 * above). -EINVAL: not registered.
 */
DYNFTRACE_API int dynftrace_unregister_ops(struct dynftrace_ops *ops);

/*
 * Select functions by pattern, matched against the function names of the
 * program and its libraries (C++ symbols also by their full and simple
 * demangled names): a shell glob (fnmatch: * ? [...], the whole name), or
 * a POSIX extended regex (anywhere in the name) when it holds one of
 * ^ $ + | ( ) { }, a '.' before * + ? {, or a '.' without * ? [
 * (DYNFTRACE_MATCH=glob|regex decides for every pattern instead).
 * FUNC@OBJECT or FUNC:mod:OBJECT limits it to objects whose file name
 * matches the glob OBJECT. RESET replaces the selection, otherwise it is
 * added to. "!pattern" removes the matches. A NULL or empty GLOB with
 * RESET clears the selection (= all functions; with both selections
 * cleared the ops holds no runtime memory). Works on registered ops too:
 * sites are re-patched at once.
 * -ENOENT: no function matches (nothing changed); -EINVAL: bad glob, or a
 * regex that does not compile.
 */
DYNFTRACE_API int dynftrace_set_filter(struct dynftrace_ops *ops, const char *glob, int reset);

/* The same for the notrace selection: functions never traced by this ops. */
DYNFTRACE_API int dynftrace_set_notrace(struct dynftrace_ops *ops, const char *glob, int reset);

/*
 * Release the memory of an unregistered ops' filter and notrace selections
 * (they survive unregister so that a later register keeps them). Call it
 * before freeing an ops that had filters. -EBUSY: still registered.
 */
DYNFTRACE_API int dynftrace_free_filter(struct dynftrace_ops *ops);

struct dynftrace_stats {
	unsigned long batches;		/* patch batches run */
	unsigned long syncs;		/* cross-thread syncs done by batches */
	unsigned long sites_patched;	/* site writes completed by batches */
	unsigned long traps;		/* breakpoint hits handled by emulation */
	unsigned long sites;		/* sites known in the process */
	unsigned long sites_enabled;	/* sites currently calling a trampoline */
	unsigned long objects;		/* objects (exe + libraries) with sites */
	unsigned long grace_periods;	/* RCU grace periods waited for */
	unsigned long recursion_miss;	/* callbacks skipped by the recursion guard */
	unsigned long converted;	/* sites turned into the canonical NOP at load */
	unsigned long refused;		/* sites refused for unexpected bytes */
	unsigned long last_batch_ns;	/* wall time of the last batch */
	unsigned long last_batch_sites; /* sites in the last batch */
	unsigned long late_entries;	/* entries that found no ops wanting their site
					   (the site changed meanwhile: a stub whose ops
					   left or was reused, a cleared or changed
					   CALL_OPS literal, a list walk finding nobody);
					   nothing called, harmless */
	int killed;			/* tracing stopped after an inconsistency */
	char kill_reason[160];		/* why, when killed */
};

DYNFTRACE_API void dynftrace_get_stats(struct dynftrace_stats *st);

/*
 * Iterate over every known site: CB(ip, function name or NULL, object path,
 * enabled, refcount, data). Stops early when CB returns non-zero and returns
 * that value. Runs under the runtime's mutex: CB must not call dynftrace_*.
 */
typedef int (*dynftrace_site_cb)(unsigned long ip, const char *func, const char *object,
				 int enabled, int refcount, void *data);
DYNFTRACE_API int dynftrace_for_each_site(dynftrace_site_cb cb, void *data);

/*
 * Routes a site may take (per-ops trampolines, CALL_OPS). A site wanted by one ops calls
 * that ops' own trampoline (TRAMP), or, when built with
 * `dynftrace cflags --call-ops`, the CALL_OPS trampoline that reads the ops
 * from a literal before the function. Without either, every site goes
 * through the common trampoline: the single ops or the list function. All
 * routes are allowed by default; DYNFTRACE_ROUTES=list|tramp|callops|all in
 * the environment sets the initial mask. Re-routes every enabled site at
 * once. -EINVAL: unknown bits.
 */
#define DYNFTRACE_ROUTE_TRAMP	 0x1u
#define DYNFTRACE_ROUTE_CALL_OPS 0x2u
#define DYNFTRACE_ROUTE_LIST	 0x0u /* none of the above: the baseline */
DYNFTRACE_API int dynftrace_set_routes(unsigned routes);

/*
 * Direct calls (the kernel's register_ftrace_direct): every site OPS' filter
 * selects calls ADDR itself, with no trampoline in between; ops->func is not
 * used. Undo with dynftrace_unregister_ops(ops).
 *
 * Calling contract of ADDR (x86-64): it is entered by a `call` placed at the
 * traced function's first instruction (after endbr64), so on entry
 *   0(%rsp) = return address into the traced function (site + 5)
 *   8(%rsp) = the traced function's own return address (into its caller)
 *   rdi rsi rdx rcx r8 r9, xmm0-7 (and al for varargs, r10 static chain)
 *     = the traced function's arguments, stack arguments above 8(%rsp)
 * and %rsp is 16-byte aligned (the traced function's entry %rsp - 8). ADDR
 * must preserve every one of those registers and all callee-saved ones
 * (rbx rbp r12-r15), may use r11 and the flags, and must return with `ret`.
 * A C function does not meet this; write it in assembly or save and
 * restore the argument registers around C code. Far targets are reached
 * through a jump placed near the code (`jmp *addr`).
 *
 * aarch64: entered by the site's `bl` (after `mov x9, x30`), so x30 =
 * the return into the traced function and x9 = its own return address;
 * x0-x8, q0-q7 and the callee-saved registers must be kept, x16 and x17
 * may be used, and it returns with `mov x16, x30; mov x30, x9; ret x16`.
 * Far targets: `ldr x16, lit; br x16` placed near the code.
 *
 * riscv64: entered by the site's `jal t0` (or `jalr t0` after the site's
 * `auipc t0`), so t0 = the return into the traced function and ra = its
 * own return address; a0-a7, fa0-fa7, t2 (static chain), ra and the
 * callee-saved registers must be kept, t1 and t3-t6 may be used, and it
 * returns with `jr t0`. ADDR must be within +-1 MiB of the site, or of a
 * jump page placed near the code (`auipc t1; ld t1; jr t1`); beyond that
 * the site keeps its other ops.
 *
 * A site holds at most one direct call, and while it does the other ops
 * that select it do not see it. -EBUSY: a selected site already has a direct
 * call, or OPS is registered; -ENOENT: the filter selects nothing;
 * -ESTALE: libraries changed since the filter was set (set it again).
 */
DYNFTRACE_API int dynftrace_register_direct(struct dynftrace_ops *ops, unsigned long addr);

/* One site, as the kernel's enabled_functions shows it. */
struct dynftrace_site_info {
	unsigned long ip;
	const char *func; /* NULL when the object has no symbol for it */
	const char *object;
	int enabled;		   /* holds a call */
	int refcount;		   /* ops that want it */
	const char *route;	   /* "nop"; "list" (the list function runs: several ops
				      want the site, or one does but several are
				      registered, or routes are 0); "ops" (the only
				      registered ops, via the common trampoline);
				      "tramp" (its per-ops trampoline); "call_ops"
				      (the literal holds the ops, or the list ops);
				      "graph" (the graph tracer's shortcut, its only
				      ops, see lib/trace/graph_fast.c); "direct" */
	unsigned long target;	   /* call target when enabled */
	unsigned long literal;	   /* address of its CALL_OPS literal, 0 if none */
	struct dynftrace_ops *ops; /* the one ops when refcount == 1 */
};
DYNFTRACE_API int dynftrace_for_each_site_info(int (*cb)(const struct dynftrace_site_info *si,
							 void *data),
					       void *data);

#ifdef __cplusplus
}
#endif
#endif /* DYNFTRACE_DYNFTRACE_H */
