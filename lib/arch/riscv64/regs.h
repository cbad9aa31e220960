/* SPDX-License-Identifier: MIT */
/* regs.h - riscv64 layout of struct dynftrace_regs, as tramp.S saves it. */
#ifndef DYNFTRACE_ARCH_REGS_H
#define DYNFTRACE_ARCH_REGS_H

/*
 * The trampolines' frame, from the stack pointer up: the regs (REGS_SIZE),
 * then a frame record {s0, the traced function's return address} at the
 * traced function's entry sp - 16, as the RISC-V frame pointer convention
 * lays one out (ra at fp - 8, the caller's fp at fp - 16). Its second word
 * is where that return address lives while the callbacks run
 * (ARCH_REGS_RET_SLOT: entry sp - 8): the graph tracer replaces it there,
 * the trampoline loads ra from it on the way out. Offsets used by tramp.S;
 * checked against the struct below.
 */
#define REGS_A0	    0  /* a0-a7: arguments */
#define REGS_T1	    64 /* t1 (the per-ops stub's index), t2 (static chain) */
#define REGS_T2	    72
#define REGS_FP	    80
#define REGS_LR	    88	/* ra: the traced function's return address at entry */
#define REGS_SP	    96	/* sp at the traced function's entry */
#define REGS_IP	    104 /* the site (the jal/jalr word) */
#define REGS_RET    112 /* a0, a1 on return (graph tracer) */
#define REGS_F	    128 /* fa0-fa7 */
#define REGS_SIZE   192
#define TRAMP_FRAME (REGS_SIZE + 16)
/*
 * A relocated entry's block (arch_impl.h: arch_reloc_pre) moves sp down
 * ENTRY_AREA bytes and keeps t0 at the bottom before its site's call
 * overwrites it: from the site's sp, ENTRY_T0 the function's t0, ENTRY_RET
 * the block's site + 4 (the light route stores it, the preserving
 * trampoline's first instruction otherwise), and the frame record at the
 * function's entry sp - 16, as the other trampolines'.
 */
#define ENTRY_AREA  32
#define ENTRY_T0    0
#define ENTRY_RET   8
#define ENTRY_LIGHT 4 /* where the light route enters the preserving trampoline */
/*
 * The preserving trampoline's frame (tramp.S: dft_caller_all_tmpl): the
 * regs, then what the others leave to the calling convention, then the
 * block's area above it.
 */
#define ALL_T3	       (REGS_SIZE + 0)	 /* t3-t6 */
#define ALL_FT	       (REGS_SIZE + 32)	 /* ft0-ft11 */
#define ALL_FCSR       (REGS_SIZE + 128) /* fcsr: rounding mode and accrued flags */
#define ALL_FRAME      (REGS_SIZE + 144)
#define REGS_ALL_MAGIC 0x616c6c7265677321 /* in regs->ret[0]: came through it */
/* dft_return_tramp_all's frame: a0-a7, fa0-fa7 (the results where
 * dft_return_tramp keeps them: a0 at 0, fa0 at 64), t0-t6, ft0-ft11, fcsr,
 * s0. */
#define RALL_T0	   128
#define RALL_FT	   184
#define RALL_FCSR  280
#define RALL_S0	   288
#define RALL_FRAME 304

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
	unsigned long x[8]; /* a0-a7 */
	unsigned long t1, t2;
	unsigned long fp, lr, sp, ip;
	unsigned long ret[2];
	unsigned long f[8]; /* fa0-fa7, as stored by fsd */
};
_Static_assert(__builtin_offsetof(struct dynftrace_regs, t1) == REGS_T1, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, fp) == REGS_FP, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, sp) == REGS_SP, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, ip) == REGS_IP, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, ret) == REGS_RET, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, f) == REGS_F, "regs layout");
_Static_assert(sizeof(struct dynftrace_regs) == REGS_SIZE, "regs layout");
#endif
#endif
