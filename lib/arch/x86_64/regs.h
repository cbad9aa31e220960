/* SPDX-License-Identifier: MIT */
/* regs.h - x86-64 layout of struct dynftrace_regs, as tramp.S saves it. */
#ifndef DYNFTRACE_ARCH_REGS_H
#define DYNFTRACE_ARCH_REGS_H

/* Offsets used by tramp.S; checked against the struct by _Static_assert. */
#define REGS_RDI  0
#define REGS_RSI  8
#define REGS_RDX  16
#define REGS_RCX  24
#define REGS_R8	  32
#define REGS_R9	  40
#define REGS_RAX  48
#define REGS_R10  56
#define REGS_R11  64
#define REGS_RBP  72
#define REGS_SP	  80 /* rsp at the traced function's entry: &return address */
#define REGS_IP	  88 /* site address */
#define REGS_RET  96 /* rax, rdx on return (graph tracer) */
#define REGS_XMM  112
#define REGS_SIZE 240
/* The preserving trampolines' frame (tramp.S): the regs, then (64-byte
 * aligned) zmm0-31 or what of them the CPU has, k0-7, and the alignment's
 * slack; regs->ret[0] holds REGS_ALL_MAGIC there. */
#define ALL_XSAVE      256
#define ALL_FRAME      (ALL_XSAVE + 32 * 64 + 8 * 8 + 64)
#define REGS_ALL_MAGIC 0x616c6c7265677321
/* The light bodies' frame: the regs, then &dft_self (REGS_SIZE) and the
 * caller's %rbp (LIGHT_RBP), which keeps the frame while the C call runs
 * on a realigned stack. */
#define LIGHT_RBP   (REGS_SIZE + 8)
#define LIGHT_FRAME 264
/* Above it, in the full trampolines' frame: the upper parts of the vector
 * argument registers, when the CPU has them (tramp.S, SAVE_VEC_UPPER):
 * bits 128-255 of ymm0-7 (8 x 16 bytes), then bits 256-511 of zmm0-7
 * (8 x 32 bytes). */
#define VEC_UP	    248
#define VEC_UP_ZMM  (VEC_UP + 8 * 16)
#define TRAMP_FRAME (VEC_UP_ZMM + 8 * 32) /* 632: 8 mod 16, as LIGHT_FRAME */
/* arch_vec_kind(): what SAVE_VEC_UPPER saves */
#define VEC_SSE	   0 /* xmm only */
#define VEC_AVX	   1 /* and the ymm upper halves */
#define VEC_AVX512 2 /* and the zmm upper halves */

/* struct dft_thread (internal.h) fields used by the light per-ops body
 * (tramp.S), as offsets from dft_self; checked in ops.c. It reads and
 * writes them as two quadwords (same-size stores forward to the loads of
 * the next call): recursion and rcu_nest, then api_depth and state. */
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
#define FG_NOTRACE_DEPTH 8 /* then exit_debt: the entry tests both as one quadword */
#define FG_ENT		 64
#define SE_SIZE		 48
#define SE_SLOT		 0
#define SE_ORIG		 8
#define SE_HOOK		 16
#define SE_TS		 24
#define SE_CHILD_NS	 32
#define SE_ID		 40
#define SE_HOOKED	 44 /* then kind, fl, fl2: one byte each */
#define SE_KIND		 45
#define SHADOW_MAX_ASM	 4096
#define TR_GRAPH_ASM	 2
#define TR_FUNCTION_ASM	 1
#define SE_RING_ASM	 1
#define THUNK_HOOK_ASM	 7
/* A relocated entry's block (entries.c, which checks them): the function's
 * address at ARCH_BLOCK_IP, the site at ARCH_BLOCK_SITE; the trampolines
 * read the address BLOCK_IP_BACK_ASM bytes before the site's end. */
#define ARCH_BLOCK_SITE	  24
#define ARCH_BLOCK_IP	  16
#define BLOCK_IP_BACK_ASM (5 + ARCH_BLOCK_SITE - ARCH_BLOCK_IP)
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
#define RING_EV_EXIT_ASM     1
#define RING_EV_NEAR_ASM     6 /* function_near: 8 bytes, format.h */
#define RING_EV_FUNCTION_ASM 2
#define NEAR_FUNC_BITS_ASM   22
#define NEAR_OFF_BITS_ASM    26

#ifndef __ASSEMBLER__
struct dynftrace_regs {
	unsigned long rdi, rsi, rdx, rcx, r8, r9;
	unsigned long rax, r10, r11, rbp;
	unsigned long sp;
	unsigned long ip;
	unsigned long ret[2];
	unsigned char xmm[8][16];
};
_Static_assert(__builtin_offsetof(struct dynftrace_regs, sp) == REGS_SP, "regs layout");
_Static_assert(__builtin_offsetof(struct dynftrace_regs, xmm) == REGS_XMM, "regs layout");
_Static_assert(sizeof(struct dynftrace_regs) == REGS_SIZE, "regs layout");
#endif
#endif
