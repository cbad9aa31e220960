/* SPDX-License-Identifier: MIT */
/*
 * tramp.S - the trampolines, riscv64.
 *
 * A site is `auipc t0, hi; jalr t0, lo(t0)` (or `jal t0, COPY` when COPY is
 * within +-1 MiB) at the traced function's entry (see arch_impl.h), COPY a
 * copy of a template below. On entry:
 *	t0 = site + 4, the return into the traced function
 *	ra = the traced function's return address into its caller
 *	sp = the traced function's entry sp (16-aligned: the psABI keeps it so)
 * a0-a7 and fa0-fa7 (arguments), t1 (a per-ops stub's index) and t2 (the
 * static chain of GNU C nested functions) are saved and put back around
 * the C entry; t3-t6 are free at a function's entry (temporaries). The
 * frame record {s0, ra} sits at the function's entry sp - 16, where the
 * frame pointer convention puts one (s0 = entry sp), so that unwinders
 * walk through it and the graph tracer finds the return address at entry
 * sp - 8 (ARCH_REGS_RET_SLOT); ra is reloaded from there on the way out.
 * Each copy reaches its C entry through a pointer slot of its own, read
 * pc-relative: relaxation is off so that the offsets inside a template
 * stay what the assembler computed when it is copied elsewhere.
 */
#include "regs.h"

	.option	norelax

/*
 * The save and restore sequences both entry trampolines share (the
 * preserving one adds its own): each register has its fixed slot in the
 * regs (regs.h), which the C side reads, so they are written out here
 * once. SLOTS stores or loads (OP) the registers listed, in that order,
 * at OFF, OFF + 8, ... from sp.
 */
.macro SLOTS op, off, r, rest:vararg
	\op	\r, \off(sp)
	.ifnb	\rest
	SLOTS	\op, (\off + 8), \rest
	.endif
.endm

/* The integer argument registers, t1 (a stub's index) and t2 (the static
 * chain). */
.macro SAVE_INT_ARGS
	SLOTS	sd, REGS_A0, a0, a1, a2, a3, a4, a5, a6, a7
	sd	t1, REGS_T1(sp)
	sd	t2, REGS_T2(sp)
.endm
.macro LOAD_INT_ARGS
	SLOTS	ld, REGS_A0, a0, a1, a2, a3, a4, a5, a6, a7
	ld	t1, REGS_T1(sp)
	ld	t2, REGS_T2(sp)
.endm

/* The floating-point argument registers. */
.macro SAVE_FP_ARGS
	SLOTS	fsd, REGS_F, fa0, fa1, fa2, fa3, fa4, fa5, fa6, fa7
.endm
.macro LOAD_FP_ARGS
	SLOTS	fld, REGS_F, fa0, fa1, fa2, fa3, fa4, fa5, fa6, fa7
.endm

/* regs->fp and regs->lr, and the frame record {s0, ra} at RECORD(sp). */
.macro SAVE_FRAME_RECORD record
	sd	s0, REGS_FP(sp)
	sd	ra, REGS_LR(sp)
	sd	s0, \record(sp)
	sd	ra, \record + 8(sp)
.endm

.macro SAVE_ARGS
	addi	sp, sp, -TRAMP_FRAME
	SAVE_INT_ARGS
	sd	zero, REGS_RET(sp)		/* not the preserving trampoline */
	SAVE_FP_ARGS
	SAVE_FRAME_RECORD REGS_SIZE
	addi	s0, sp, TRAMP_FRAME
	addi	a0, t0, -4			/* ip: the site */
	sd	s0, REGS_SP(sp)			/* regs->sp: the entry sp */
	sd	a0, REGS_IP(sp)
	mv	a1, ra				/* parent ip */
	mv	a2, sp				/* regs */
.endm

/* Back into the traced function at site + 4, with ra its return address
 * (the graph tracer's hook if it replaced it). */
.macro RESTORE_ARGS_RET
	LOAD_FP_ARGS
	LOAD_INT_ARGS
	ld	t0, REGS_IP(sp)
	addi	t0, t0, 4
	ld	s0, REGS_SIZE(sp)
	ld	ra, REGS_SIZE + 8(sp)
	addi	sp, sp, TRAMP_FRAME
	jr	t0
.endm

/*
 * The common trampoline. Copies serve two routes, told apart by the C entry
 * in their slot: dft_dispatch (the single ops or the list function) and
 * dft_callops_entry (CALL_OPS: the ops is the literal 8 bytes before the
 * traced function, at t0 - 16 as the kernel's riscv CALL_OPS reads it,
 * which the C entry loads).
 */
	.text
	.globl	dft_caller_tmpl
	.hidden	dft_caller_tmpl
	.globl	dft_caller_tmpl_end
	.hidden	dft_caller_tmpl_end
	.globl	dft_caller_tmpl_slot
	.hidden	dft_caller_tmpl_slot
	.globl	dft_caller_tmpl_vec
	.hidden	dft_caller_tmpl_vec
	.type	dft_caller_tmpl, %function
	.p2align 4
dft_caller_tmpl:
	.cfi_startproc
	SAVE_ARGS
1:	auipc	t3, %pcrel_hi(dft_caller_tmpl_slot)	/* a copy reads its own */
	ld	t3, %pcrel_lo(1b)(t3)
	jalr	t3
	RESTORE_ARGS_RET
	.cfi_endproc
	.p2align 3
dft_caller_tmpl_slot:
	.quad	0
dft_caller_tmpl_vec:
	.quad	0
dft_caller_tmpl_end:
	.size	dft_caller_tmpl, dft_caller_tmpl_end - dft_caller_tmpl

/*
 * The per-ops route. Each ops owns a stub per region,
 *	lui t1, IDX >> 12; addiw t1, t1, IDX & 0xfff; j dft_ops_tmpl-copy
 * and this shared body hands IDX to dft_stub_entry.
 */
	.globl	dft_ops_tmpl
	.hidden	dft_ops_tmpl
	.globl	dft_ops_tmpl_end
	.hidden	dft_ops_tmpl_end
	.globl	dft_ops_tmpl_slot
	.hidden	dft_ops_tmpl_slot
	.globl	dft_ops_tmpl_vec
	.hidden	dft_ops_tmpl_vec
	.type	dft_ops_tmpl, %function
	.p2align 4
dft_ops_tmpl:
	.cfi_startproc
	SAVE_ARGS
	mv	a3, t1				/* IDX */
1:	auipc	t3, %pcrel_hi(dft_ops_tmpl_slot)
	ld	t3, %pcrel_lo(1b)(t3)
	jalr	t3
	RESTORE_ARGS_RET
	.cfi_endproc
	.p2align 3
dft_ops_tmpl_slot:
	.quad	0
dft_ops_tmpl_vec:
	.quad	0
dft_ops_tmpl_end:
	.size	dft_ops_tmpl, dft_ops_tmpl_end - dft_ops_tmpl

/*
 * The light bodies (x86-64: general registers only, the common case in
 * assembly) are not written for riscv64: each template goes straight to
 * the full body in its FULL slot (t0 and t1 untouched), which is what the
 * x86-64 ones do outside their common case. The other slots exist for the
 * region's layout (sites.c fills them) and are not read.
 */
.macro LIGHT_TMPL name, extra
	.globl	\name
	.hidden	\name
	.globl	\name\()_end
	.hidden	\name\()_end
	.type	\name, %function
	.p2align 4
\name:
1:	auipc	t3, %pcrel_hi(2f)
	ld	t3, %pcrel_lo(1b)(t3)
	jr	t3
	.p2align 3
2:
	.irp	s, \extra
	.globl	\name\()_\s
	.hidden	\name\()_\s
\name\()_\s:
	.quad	0
	.endr
\name\()_end:
	.size	\name, \name\()_end - \name
.endm

	LIGHT_TMPL dft_ops_light_tmpl, "full,table,stub0,tls,seq,gp"
	LIGHT_TMPL dft_callops_light_tmpl, "full,tls,seq,gp"

/*
 * A relocated entry's light route goes to its arena's preserving
 * trampoline, whose address is the block's first word (ARCH_BLOCK_SITE
 * before the site; t0 = site + 4). No register is free to jump through:
 * t0 is, once the site + 4 it holds is in the block's area on the stack,
 * where the preserving trampoline reads it (it enters past its own store
 * of it, ENTRY_LIGHT).
 */
	.globl	dft_reloc_light_tmpl
	.hidden	dft_reloc_light_tmpl
	.globl	dft_reloc_light_tmpl_end
	.hidden	dft_reloc_light_tmpl_end
	.type	dft_reloc_light_tmpl, %function
	.p2align 4
dft_reloc_light_tmpl:
	sd	t0, ENTRY_RET(sp)
	ld	t0, -(4 + 32)(t0)		/* ARCH_BLOCK_SITE */
	jalr	zero, ENTRY_LIGHT(t0)
	.p2align 3
	.irp	s, tls, seq, gp
	.globl	dft_reloc_light_tmpl_\s
	.hidden	dft_reloc_light_tmpl_\s
dft_reloc_light_tmpl_\s:
	.quad	0
	.endr
dft_reloc_light_tmpl_end:
	.size	dft_reloc_light_tmpl, dft_reloc_light_tmpl_end - dft_reloc_light_tmpl

/*
 * The preserving trampoline (relocated entries: lib/core/entries.c). The
 * block ran `addi sp, sp, -ENTRY_AREA; sd t0, ENTRY_T0(sp)` then its
 * site, `jal t0, COPY`: t0 = site + 4, ra = the function's return
 * address, sp = its entry sp - ENTRY_AREA; the function's ip is the
 * block's word at site - 16 (ARCH_BLOCK_IP). Code built without a site
 * may have callers that keep values in any register the function does
 * not write (-fipa-ra), so everything comes back: a0-a7, t1-t6, fa0-fa7,
 * ft0-ft11, fcsr (the callbacks' own floating point may raise its flags);
 * t0 is the block's to restore (after its site), ra is reloaded from the
 * frame record (the graph tracer's hook if it replaced it). The vector
 * registers are not kept: the runtime is built without V (rv64gc), as
 * every other trampoline assumes. regs->ret[0] says so to the callbacks
 * (ARCH_REGS_PRESERVE_ALL): the graph tracer hooks the return through
 * dft_return_tramp_all. The light route enters at ENTRY_LIGHT, the
 * block's site + 4 already stored, t0 free.
 */
	.globl	dft_caller_all_tmpl
	.hidden	dft_caller_all_tmpl
	.globl	dft_caller_all_tmpl_end
	.hidden	dft_caller_all_tmpl_end
	.globl	dft_caller_all_tmpl_slot
	.hidden	dft_caller_all_tmpl_slot
	.type	dft_caller_all_tmpl, %function
	.p2align 4
dft_caller_all_tmpl:
	.cfi_startproc
	.option	push
	.option	norvc				/* the light entry is 4 bytes in */
	sd	t0, ENTRY_RET(sp)
	.option	pop
	addi	sp, sp, -ALL_FRAME
	SAVE_INT_ARGS
	SLOTS	sd, ALL_T3, t3, t4, t5, t6
	SAVE_FP_ARGS
	SLOTS	fsd, ALL_FT, ft0, ft1, ft2, ft3, ft4, ft5, ft6, ft7, ft8, ft9, ft10, ft11
	frcsr	t3
	sd	t3, ALL_FCSR(sp)
	SAVE_FRAME_RECORD ALL_FRAME + 16
	addi	s0, sp, ALL_FRAME + ENTRY_AREA	/* the entry sp */
	sd	s0, REGS_SP(sp)
	ld	t0, ALL_FRAME + ENTRY_RET(sp)	/* site + 4 */
	ld	a0, -(4 + 32 - 16)(t0)		/* ip: ARCH_BLOCK_IP */
	sd	a0, REGS_IP(sp)
1:	auipc	t3, %pcrel_hi(.Lall_magic)
	ld	t3, %pcrel_lo(1b)(t3)
	sd	t3, REGS_RET(sp)
	mv	a1, ra				/* parent ip */
	mv	a2, sp				/* regs */
2:	auipc	t3, %pcrel_hi(dft_caller_all_tmpl_slot)	/* a copy reads its own */
	ld	t3, %pcrel_lo(2b)(t3)
	jalr	t3
	sd	zero, REGS_RET(sp)
	ld	t3, ALL_FCSR(sp)
	fscsr	t3
	SLOTS	fld, ALL_FT, ft0, ft1, ft2, ft3, ft4, ft5, ft6, ft7, ft8, ft9, ft10, ft11
	LOAD_FP_ARGS
	LOAD_INT_ARGS
	SLOTS	ld, ALL_T3, t3, t4, t5, t6
	ld	t0, ALL_FRAME + ENTRY_RET(sp)
	ld	s0, ALL_FRAME + 16(sp)
	ld	ra, ALL_FRAME + 24(sp)		/* the return, or the hook */
	addi	sp, sp, ALL_FRAME
	jr	t0				/* to the block, past its site */
	.cfi_endproc
	.p2align 3
.Lall_magic:
	.quad	REGS_ALL_MAGIC
dft_caller_all_tmpl_slot:
	.quad	0
dft_caller_all_tmpl_end:
	.size	dft_caller_all_tmpl, dft_caller_all_tmpl_end - dft_caller_all_tmpl

/*
 * The graph shortcut (x86-64's per-site thunks) has no riscv64 version:
 * ARCH_THUNK_SIZE is 0, so the graph tracer takes the per-ops route and
 * these are never entered.
 */
.macro TRAP_SYM name
	.globl	\name
	.hidden	\name
	.type	\name, %function
\name:
	ebreak
	.size	\name, . - \name
.endm
	.p2align 4
	TRAP_SYM dft_graph_entry
	TRAP_SYM dft_graph_entry_all
	TRAP_SYM dft_graph_entry_wide
	TRAP_SYM dft_graph_entry_all_wide
	TRAP_SYM dft_graph_exit
	TRAP_SYM dft_graph_exit_all
	LIGHT_TMPL dft_gentry_tmpl, "fast"
	LIGHT_TMPL dft_gexit_tmpl, "fast"

/*
 * dft_return_tramp - where a function hooked by the graph tracer returns
 * (its return address was replaced in the trampoline's frame record, so
 * the function ran with this as ra). sp is the function's entry sp again;
 * its results are in a0-a1 and fa0-fa1 (a0-a7 kept, cheaply).
 * dft_graph_return() records the exit and gives the real return address
 * back.
 */
	.text
	.globl	dft_return_tramp
	.hidden	dft_return_tramp
	.type	dft_return_tramp, %function
	.p2align 4
dft_return_tramp:
	.cfi_startproc
	.cfi_undefined ra
	addi	sp, sp, -96
	sd	a0, 0(sp)
	sd	a1, 8(sp)
	sd	a2, 16(sp)
	sd	a3, 24(sp)
	sd	a4, 32(sp)
	sd	a5, 40(sp)
	sd	a6, 48(sp)
	sd	a7, 56(sp)
	fsd	fa0, 64(sp)
	fsd	fa1, 72(sp)
	sd	s0, 80(sp)
	addi	a0, sp, 96			/* the traced function's sp after ret */
	mv	a1, sp				/* its results */
	call	dft_graph_return
	mv	ra, a0
	ld	s0, 80(sp)
	fld	fa1, 72(sp)
	fld	fa0, 64(sp)
	ld	a7, 56(sp)
	ld	a6, 48(sp)
	ld	a5, 40(sp)
	ld	a4, 32(sp)
	ld	a3, 24(sp)
	ld	a2, 16(sp)
	ld	a1, 8(sp)
	ld	a0, 0(sp)
	addi	sp, sp, 96
	ret
	.cfi_endproc
	.size	dft_return_tramp, . - dft_return_tramp

/*
 * dft_return_tramp_all - dft_return_tramp for the functions that entered
 * through the preserving trampoline: every register but ra (the call
 * that returned here wrote it) comes back as the function left it. The
 * results are where dft_return_tramp keeps them (a0 at 0, fa0 at 64).
 */
	.globl	dft_return_tramp_all
	.hidden	dft_return_tramp_all
	.type	dft_return_tramp_all, %function
	.p2align 4
dft_return_tramp_all:
	.cfi_startproc
	.cfi_undefined ra
	addi	sp, sp, -RALL_FRAME
	sd	a0, 0(sp)
	sd	a1, 8(sp)
	sd	a2, 16(sp)
	sd	a3, 24(sp)
	sd	a4, 32(sp)
	sd	a5, 40(sp)
	sd	a6, 48(sp)
	sd	a7, 56(sp)
	fsd	fa0, 64(sp)
	fsd	fa1, 72(sp)
	fsd	fa2, 80(sp)
	fsd	fa3, 88(sp)
	fsd	fa4, 96(sp)
	fsd	fa5, 104(sp)
	fsd	fa6, 112(sp)
	fsd	fa7, 120(sp)
	sd	t0, RALL_T0 + 0(sp)
	sd	t1, RALL_T0 + 8(sp)
	sd	t2, RALL_T0 + 16(sp)
	sd	t3, RALL_T0 + 24(sp)
	sd	t4, RALL_T0 + 32(sp)
	sd	t5, RALL_T0 + 40(sp)
	sd	t6, RALL_T0 + 48(sp)
	fsd	ft0, RALL_FT + 0(sp)
	fsd	ft1, RALL_FT + 8(sp)
	fsd	ft2, RALL_FT + 16(sp)
	fsd	ft3, RALL_FT + 24(sp)
	fsd	ft4, RALL_FT + 32(sp)
	fsd	ft5, RALL_FT + 40(sp)
	fsd	ft6, RALL_FT + 48(sp)
	fsd	ft7, RALL_FT + 56(sp)
	fsd	ft8, RALL_FT + 64(sp)
	fsd	ft9, RALL_FT + 72(sp)
	fsd	ft10, RALL_FT + 80(sp)
	fsd	ft11, RALL_FT + 88(sp)
	frcsr	t0
	sd	t0, RALL_FCSR(sp)
	sd	s0, RALL_S0(sp)
	addi	a0, sp, RALL_FRAME		/* the traced function's sp after ret */
	mv	a1, sp				/* its results */
	call	dft_graph_return
	mv	ra, a0
	ld	t0, RALL_FCSR(sp)
	fscsr	t0
	ld	s0, RALL_S0(sp)
	fld	ft0, RALL_FT + 0(sp)
	fld	ft1, RALL_FT + 8(sp)
	fld	ft2, RALL_FT + 16(sp)
	fld	ft3, RALL_FT + 24(sp)
	fld	ft4, RALL_FT + 32(sp)
	fld	ft5, RALL_FT + 40(sp)
	fld	ft6, RALL_FT + 48(sp)
	fld	ft7, RALL_FT + 56(sp)
	fld	ft8, RALL_FT + 64(sp)
	fld	ft9, RALL_FT + 72(sp)
	fld	ft10, RALL_FT + 80(sp)
	fld	ft11, RALL_FT + 88(sp)
	ld	t0, RALL_T0 + 0(sp)
	ld	t1, RALL_T0 + 8(sp)
	ld	t2, RALL_T0 + 16(sp)
	ld	t3, RALL_T0 + 24(sp)
	ld	t4, RALL_T0 + 32(sp)
	ld	t5, RALL_T0 + 40(sp)
	ld	t6, RALL_T0 + 48(sp)
	fld	fa0, 64(sp)
	fld	fa1, 72(sp)
	fld	fa2, 80(sp)
	fld	fa3, 88(sp)
	fld	fa4, 96(sp)
	fld	fa5, 104(sp)
	fld	fa6, 112(sp)
	fld	fa7, 120(sp)
	ld	a7, 56(sp)
	ld	a6, 48(sp)
	ld	a5, 40(sp)
	ld	a4, 32(sp)
	ld	a3, 24(sp)
	ld	a2, 16(sp)
	ld	a1, 8(sp)
	ld	a0, 0(sp)
	addi	sp, sp, RALL_FRAME
	ret
	.cfi_endproc
	.size	dft_return_tramp_all, . - dft_return_tramp_all

/*
 * dft_thread_entry: the start routine the pthread_create wrapper gives a
 * new thread. dft_thread_prepare (interpose.c) returns the program's start
 * routine (a0) and argument (a1); this goes there with the stack and ra
 * as the C library left them, so no frame of ours stays below the
 * program's.
 */
	.globl	dft_thread_entry
	.hidden	dft_thread_entry
	.type	dft_thread_entry, %function
	.p2align 4
dft_thread_entry:
	.cfi_startproc
	addi	sp, sp, -16
	.cfi_def_cfa_offset 16
	sd	ra, 8(sp)
	sd	s0, 0(sp)
	.cfi_offset ra, -8
	.cfi_offset s0, -16
	addi	s0, sp, 16
	call	dft_thread_prepare
	ld	ra, 8(sp)
	ld	s0, 0(sp)
	.cfi_restore ra
	.cfi_restore s0
	addi	sp, sp, 16
	.cfi_def_cfa_offset 0
	mv	t1, a0
	mv	a0, a1
	jr	t1
	.cfi_endproc
	.size	dft_thread_entry, . - dft_thread_entry

/* _mcount: what `-pg`'s calls reach (they are not sites here). */
	.globl	_mcount
	.type	_mcount, %function
	.p2align 4
_mcount:
	ret
	.size	_mcount, . - _mcount

	.section .note.GNU-stack,"",%progbits
