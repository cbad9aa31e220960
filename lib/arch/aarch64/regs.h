/* SPDX-License-Identifier: MIT */
/* regs.h - aarch64 layout of struct dynftrace_regs, as tramp.S saves it. */
#ifndef DYNFTRACE_ARCH_REGS_H
#define DYNFTRACE_ARCH_REGS_H

/*
 * The trampolines' frame, from the stack pointer up: the regs (REGS_SIZE),
 * then a frame record {x29, the traced function's return address} whose
 * second word is where that return address lives while the callbacks run
 * (ARCH_REGS_RET_SLOT: the traced function's entry sp - 8). The graph
 * tracer replaces it there; the trampoline loads x30 from it on the way
 * out. Offsets used by tramp.S; checked against the struct below.
 */
#define REGS_X0	    0 /* x0-x7 arguments, x8 indirect result */
#define REGS_X8	    64
#define REGS_FP	    72
#define REGS_LR	    80	/* the traced function's return address at entry */
#define REGS_SP	    88	/* sp at the traced function's entry */
#define REGS_IP	    96	/* the site (the BL) */
#define REGS_RET    104 /* x0, x1 on return (graph tracer) */
#define REGS_PAD    120 /* REGS_ALL_MAGIC from the preserving trampoline, else 0 */
#define REGS_V	    128 /* q0-q7 */
#define REGS_SIZE   256
#define TRAMP_FRAME (REGS_SIZE + 16)
/*
 * The preserving trampoline's frame (relocated entries, tramp.S:
 * dft_caller_all_tmpl): the regs, then what the others leave to the
 * callee-saved rules, then the frame record at the entry sp - 16.
 */
#define ALL_X9	       (REGS_SIZE + 0)	/* x9-x15, x18 */
#define ALL_FLAGS      (REGS_SIZE + 64) /* nzcv, fpsr */
#define ALL_SITE       (REGS_SIZE + 80) /* x30 at entry: site + 4 */
#define ALL_V8	       (REGS_SIZE + 96) /* q8-q31 */
#define ALL_FRAME      (ALL_V8 + 384 + 16)
#define REGS_ALL_MAGIC 0x616c6c7265677321
/* dft_return_tramp_all's frame: x0-x7, q0-q7 (where the results are read,
 * as dft_return_tramp's), x8-x15, x18, flags, q8-q31. */
#define RALL_X8	   192
#define RALL_FLAGS 272
#define RALL_V8	   288
#define RALL_FRAME (RALL_V8 + 384)

/* Shared with the runtime's C code (layouts the x86-64 assembly reads;
 * the same on every LP64 target). */
/* struct dft_thread (internal.h) fields used by the light per-ops body
 * on x86-64 (tramp.S), as offsets from dft_self; checked in ops.c. */
#define THR_RECURSION		      0 /* rcu_nest at 4 */
#define THR_API_DEPTH		      8 /* state at 12 */
#define THR_RCU_CTR		      16
#define THR_CALLBACK		      0x100000001 /* recursion 1, rcu_nest 1 */
#define THR_IDLE		      0x100000000 /* api_depth 0, state THREAD_REGISTERED */
#define DYNFTRACE_OPS_FL_GPR_ONLY_ASM 1		  /* in the low byte of ops->flags */
#define THREAD_REGISTERED_ASM	      1

/* What the graph shortcut's exit (tramp.S: dft_graph_exit) reads and
 * writes; checked in graph_fast.c. struct fg_thread and shadow_ent
 * (trace_int.h): */
#define FG_DEPTH	 0
#define FG_NOTRACE_DEPTH 8
#define FG_ENT		 64
#define SE_SIZE		 48
#define SE_SLOT		 0
#define SE_ORIG		 8
#define SE_HOOK		 16
#define SE_TS		 24
#define SE_CHILD_NS	 32
#define SE_ID		 40
#define SE_HOOKED	 44 /* then kind, fl, unused: one byte each */
#define SE_KIND		 45
#define SHADOW_MAX_ASM	 4096
#define TR_GRAPH_ASM	 2
#define TR_FUNCTION_ASM	 1
#define SE_RING_ASM	 1
#define THUNK_HOOK_ASM	 0 /* no graph thunks (ARCH_THUNK_SIZE 0) */
/* struct trace_cfg (trace_int.h): kind at 0 */
#define CFG_MAX_DEPTH	4164
#define CFG_TIME_FILTER 4168
/* struct ring_buf (ring_fast.h): */
#define RB_OFFSET	     0
#define RB_LAST_TS	     8
#define RB_NEST		     48
#define RB_STOP		     52
#define RB_WLIMIT	     64
#define RB_WBASE	     72
#define RB_WCOMMIT	     80
#define RB_CSEQ		     88
#define RB_CBASE_TSC	     96
#define RB_CMULT	     104
#define RB_CBASE_NS	     112
#define RING_NEST_MAX_ASM    8
#define RING_TS_WRAP_ASM     8192
#define RING_COMPACT_HDR_ASM 2
#define RING_EV_ENTRY_ASM    0
#define RING_EV_ENTRY16_ASM  4 /* an entry whose site id fits 16 bits */
#define RING_EV_NEAR_ASM     6 /* function_near: 8 bytes, format.h */
#define RING_EV_FUNCTION_ASM 2
#define NEAR_FUNC_BITS_ASM   22
#define NEAR_OFF_BITS_ASM    26
#define RING_EV_EXIT_ASM     1

#ifndef __ASSEMBLER__
struct dynftrace_regs {
	unsigned long x[9];
	unsigned long fp, lr, sp, ip;
	unsigned long ret[2];
	unsigned long pad;
	unsigned char v[8][16];
};
_Static_assert(__builtin_offsetof(struct dynftrace_regs, sp) == REGS_SP, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, ip) == REGS_IP, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, ret) == REGS_RET, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, v) == REGS_V, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, pad) == REGS_PAD, "regs layout");
_Static_assert(sizeof(struct dynftrace_regs) == REGS_SIZE, "regs layout");
#endif
#endif
