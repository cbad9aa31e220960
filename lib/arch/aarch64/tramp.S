/* SPDX-License-Identifier: MIT */
/*
 * tramp.S - the trampolines, aarch64.
 *
 * A site is `mov x9, x30; bl COPY` at the traced function's entry (see
 * arch_impl.h), COPY a copy of a template below placed within BL reach
 * (+-128 MiB, sites.c: trampoline regions). On entry:
 *	x30 = site + 4, the return into the traced function
 *	x9  = the traced function's return address into its caller
 *	sp  = the traced function's entry sp (16-aligned: AAPCS64 keeps it so)
 * x0-x7 and q0-q7 (arguments), x8 (indirect result) are saved and put
 * back around the C entry; x9-x17 are free at a function's entry (AAPCS64
 * temporaries, and the compiler knows the site's `mov` takes x9). The
 * frame record {x29, x9} tops the frame, at the function's entry sp - 16,
 * so that unwinders walk through it and so that the graph tracer finds the
 * return address at entry sp - 8 (ARCH_REGS_RET_SLOT); x30 is reloaded
 * from there on the way out. Each copy reaches its C entry through a
 * pointer slot of its own.
 */
#include "regs.h"

.macro SAVE_ARGS
	sub	sp, sp, #TRAMP_FRAME
	stp	x0, x1, [sp, #REGS_X0]
	stp	x2, x3, [sp, #REGS_X0 + 16]
	stp	x4, x5, [sp, #REGS_X0 + 32]
	stp	x6, x7, [sp, #REGS_X0 + 48]
	str	x8, [sp, #REGS_X8]
	str	xzr, [sp, #REGS_PAD]		/* not the preserving trampoline */
	stp	q0, q1, [sp, #REGS_V]
	stp	q2, q3, [sp, #REGS_V + 32]
	stp	q4, q5, [sp, #REGS_V + 64]
	stp	q6, q7, [sp, #REGS_V + 96]
	stp	x29, x9, [sp, #REGS_FP]		/* regs->fp, regs->lr */
	stp	x29, x9, [sp, #REGS_SIZE]	/* the frame record */
	add	x29, sp, #REGS_SIZE
	add	x0, sp, #TRAMP_FRAME
	sub	x1, x30, #4			/* ip: the site */
	stp	x0, x1, [sp, #REGS_SP]		/* regs->sp, regs->ip */
	mov	x0, x1				/* ip */
	mov	x1, x9				/* parent ip */
	mov	x2, sp				/* regs */
.endm

/* q8-q31 whole (callee-saved are only d8-d15's low halves). */
.macro SAVE_Q8_31 base, off
	stp	q8, q9, [\base, #\off + 0]
	stp	q10, q11, [\base, #\off + 32]
	stp	q12, q13, [\base, #\off + 64]
	stp	q14, q15, [\base, #\off + 96]
	stp	q16, q17, [\base, #\off + 128]
	stp	q18, q19, [\base, #\off + 160]
	stp	q20, q21, [\base, #\off + 192]
	stp	q22, q23, [\base, #\off + 224]
	stp	q24, q25, [\base, #\off + 256]
	stp	q26, q27, [\base, #\off + 288]
	stp	q28, q29, [\base, #\off + 320]
	stp	q30, q31, [\base, #\off + 352]
.endm
.macro RESTORE_Q8_31 base, off
	ldp	q8, q9, [\base, #\off + 0]
	ldp	q10, q11, [\base, #\off + 32]
	ldp	q12, q13, [\base, #\off + 64]
	ldp	q14, q15, [\base, #\off + 96]
	ldp	q16, q17, [\base, #\off + 128]
	ldp	q18, q19, [\base, #\off + 160]
	ldp	q20, q21, [\base, #\off + 192]
	ldp	q22, q23, [\base, #\off + 224]
	ldp	q24, q25, [\base, #\off + 256]
	ldp	q26, q27, [\base, #\off + 288]
	ldp	q28, q29, [\base, #\off + 320]
	ldp	q30, q31, [\base, #\off + 352]
.endm


/* Back into the traced function at site + 4, with x30 its return address
 * (the graph tracer's hook if it replaced it). */
.macro RESTORE_ARGS_RET
	ldp	q0, q1, [sp, #REGS_V]
	ldp	q2, q3, [sp, #REGS_V + 32]
	ldp	q4, q5, [sp, #REGS_V + 64]
	ldp	q6, q7, [sp, #REGS_V + 96]
	ldp	x0, x1, [sp, #REGS_X0]
	ldp	x2, x3, [sp, #REGS_X0 + 16]
	ldp	x4, x5, [sp, #REGS_X0 + 32]
	ldp	x6, x7, [sp, #REGS_X0 + 48]
	ldr	x8, [sp, #REGS_X8]
	ldr	x16, [sp, #REGS_IP]
	add	x16, x16, #4
	ldp	x29, x30, [sp, #REGS_SIZE]
	add	sp, sp, #TRAMP_FRAME
	ret	x16
.endm

/*
 * The common trampoline. Copies serve two routes, told apart by the C entry
 * in their slot: dft_dispatch (the single ops or the list function) and
 * dft_callops_entry (CALL_OPS: the ops is the literal 8 bytes before the
 * traced function, which the C entry loads).
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
	ldr	x16, .Lcaller_slot		/* local: a copy reads its own */
	blr	x16
	RESTORE_ARGS_RET
	.cfi_endproc
	.p2align 3
dft_caller_tmpl_slot:
.Lcaller_slot:
	.quad	0
dft_caller_tmpl_vec:
	.quad	0
dft_caller_tmpl_end:
	.size	dft_caller_tmpl, dft_caller_tmpl_end - dft_caller_tmpl

/*
 * The per-ops route. Each ops owns a stub per region,
 *	movz x10, #IDX; movk x10, #IDX >> 16, lsl 16; b dft_ops_tmpl-copy
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
	mov	x3, x10				/* IDX */
	ldr	x16, .Lops_slot
	blr	x16
	RESTORE_ARGS_RET
	.cfi_endproc
	.p2align 3
dft_ops_tmpl_slot:
.Lops_slot:
	.quad	0
dft_ops_tmpl_vec:
	.quad	0
dft_ops_tmpl_end:
	.size	dft_ops_tmpl, dft_ops_tmpl_end - dft_ops_tmpl

/*
 * The light bodies (x86-64: general registers only, the common case in
 * assembly) are not written for aarch64 yet: each template goes straight
 * to the full body in its FULL slot, which is what the x86-64 ones do
 * outside their common case. The other slots exist for the region's
 * layout (sites.c fills them) and are not read.
 */
.macro LIGHT_TMPL name, extra
	.globl	\name
	.hidden	\name
	.globl	\name\()_end
	.hidden	\name\()_end
	.type	\name, %function
	.p2align 4
\name:
	ldr	x16, 1f
	br	x16
	.p2align 3
1:
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
 * before the site, x30 = site + 4), with every register as the block's
 * site left it (x17 is free: see reloc.c).
 */
	.globl	dft_reloc_light_tmpl
	.hidden	dft_reloc_light_tmpl
	.globl	dft_reloc_light_tmpl_end
	.hidden	dft_reloc_light_tmpl_end
	.type	dft_reloc_light_tmpl, %function
	.p2align 4
dft_reloc_light_tmpl:
	ldur	x17, [x30, #-(4 + 32)]		/* ARCH_BLOCK_SITE */
	br	x17
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
 * block's `mov x16, x30; bl COPY` leaves x30 = site + 4 and x16 = the
 * function's return address; the function's ip is the block's word at
 * site - 16 (ARCH_BLOCK_IP). Code built without a site may have callers
 * that keep values in any register the function does not write (-fipa-ra),
 * so everything comes back: x0-x15, x18, q0-q31 whole, NZCV and FPSR (x16,
 * x17 are free at an entry). regs->pad says so to the callbacks
 * (ARCH_REGS_PRESERVE_ALL): the graph tracer hooks the return through
 * dft_return_tramp_all. The frame record {x29, x16} is at the entry sp -
 * 16, as the other trampolines'.
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
	sub	sp, sp, #ALL_FRAME
	stp	x0, x1, [sp, #REGS_X0]
	stp	x2, x3, [sp, #REGS_X0 + 16]
	stp	x4, x5, [sp, #REGS_X0 + 32]
	stp	x6, x7, [sp, #REGS_X0 + 48]
	str	x8, [sp, #REGS_X8]
	stp	x9, x10, [sp, #ALL_X9]
	stp	x11, x12, [sp, #ALL_X9 + 16]
	stp	x13, x14, [sp, #ALL_X9 + 32]
	stp	x15, x18, [sp, #ALL_X9 + 48]
	mrs	x9, nzcv
	mrs	x10, fpsr
	stp	x9, x10, [sp, #ALL_FLAGS]
	str	x30, [sp, #ALL_SITE]
	stp	q0, q1, [sp, #REGS_V]
	stp	q2, q3, [sp, #REGS_V + 32]
	stp	q4, q5, [sp, #REGS_V + 64]
	stp	q6, q7, [sp, #REGS_V + 96]
	SAVE_Q8_31 sp, ALL_V8
	stp	x29, x16, [sp, #REGS_FP]	/* regs->fp, regs->lr */
	add	x17, sp, #ALL_FRAME - 16
	stp	x29, x16, [x17]			/* the frame record */
	mov	x29, x17
	add	x0, sp, #ALL_FRAME
	ldur	x1, [x30, #-(4 + 32 - 16)]	/* ip: ARCH_BLOCK_IP */
	stp	x0, x1, [sp, #REGS_SP]		/* regs->sp, regs->ip */
	ldr	x9, .Lall_magic
	str	x9, [sp, #REGS_PAD]
	mov	x0, x1				/* ip */
	mov	x1, x16				/* parent ip */
	mov	x2, sp				/* regs */
	ldr	x16, dft_caller_all_tmpl_slot	/* local: a copy reads its own */
	blr	x16
	str	xzr, [sp, #REGS_PAD]
	RESTORE_Q8_31 sp, ALL_V8
	ldp	q0, q1, [sp, #REGS_V]
	ldp	q2, q3, [sp, #REGS_V + 32]
	ldp	q4, q5, [sp, #REGS_V + 64]
	ldp	q6, q7, [sp, #REGS_V + 96]
	ldp	x9, x10, [sp, #ALL_FLAGS]
	msr	nzcv, x9
	msr	fpsr, x10
	ldp	x0, x1, [sp, #REGS_X0]
	ldp	x2, x3, [sp, #REGS_X0 + 16]
	ldp	x4, x5, [sp, #REGS_X0 + 32]
	ldp	x6, x7, [sp, #REGS_X0 + 48]
	ldr	x8, [sp, #REGS_X8]
	ldp	x9, x10, [sp, #ALL_X9]
	ldp	x11, x12, [sp, #ALL_X9 + 16]
	ldp	x13, x14, [sp, #ALL_X9 + 32]
	ldp	x15, x18, [sp, #ALL_X9 + 48]
	ldr	x16, [sp, #ALL_SITE]
	add	x17, sp, #ALL_FRAME - 16
	ldp	x29, x30, [x17]			/* x30: the return, or the hook */
	add	sp, sp, #ALL_FRAME
	ret	x16				/* to the block, past its site */
	.cfi_endproc
	.p2align 3
.Lall_magic:
	.quad	REGS_ALL_MAGIC
dft_caller_all_tmpl_slot:
	.quad	0
dft_caller_all_tmpl_end:
	.size	dft_caller_all_tmpl, dft_caller_all_tmpl_end - dft_caller_all_tmpl

/*
 * The graph shortcut (x86-64's per-site thunks) has no aarch64 version:
 * ARCH_THUNK_SIZE is 0, so the graph tracer takes the per-ops route and
 * these are never entered.
 */
.macro TRAP_SYM name
	.globl	\name
	.hidden	\name
	.type	\name, %function
\name:
	brk	#0xdf
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
 * the function ran with this as x30). sp is the function's entry sp again;
 * its results are in x0-x7 (x0-x1 and HFA q0-q3 for the C ABI; all of
 * x0-x7 kept, cheaply). dft_graph_return() records the exit and gives the
 * real return address back.
 */
	.text
	.globl	dft_return_tramp
	.hidden	dft_return_tramp
	.type	dft_return_tramp, %function
	.p2align 4
dft_return_tramp:
	.cfi_startproc
	.cfi_undefined x30
	sub	sp, sp, #144
	stp	x0, x1, [sp, #0]
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	q0, q1, [sp, #64]
	stp	q2, q3, [sp, #96]
	stp	x29, x8, [sp, #128]
	add	x0, sp, #144			/* the traced function's sp after ret */
	mov	x1, sp				/* its results */
	bl	dft_graph_return
	mov	x30, x0
	ldp	q0, q1, [sp, #64]
	ldp	q2, q3, [sp, #96]
	ldp	x29, x8, [sp, #128]
	ldp	x6, x7, [sp, #48]
	ldp	x4, x5, [sp, #32]
	ldp	x2, x3, [sp, #16]
	ldp	x0, x1, [sp, #0]
	add	sp, sp, #144
	ret
	.cfi_endproc
	.size	dft_return_tramp, . - dft_return_tramp

/*
 * dft_return_tramp_all - dft_return_tramp for the functions that entered
 * through the preserving trampoline: every register but x16, x17 (free at
 * a return too) and x30 comes back as the function left it. The results
 * are where dft_return_tramp keeps them (x0 at 0, q0 at 64).
 */
	.globl	dft_return_tramp_all
	.hidden	dft_return_tramp_all
	.type	dft_return_tramp_all, %function
	.p2align 4
dft_return_tramp_all:
	.cfi_startproc
	.cfi_undefined x30
	sub	sp, sp, #RALL_FRAME
	stp	x0, x1, [sp, #0]
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	q0, q1, [sp, #64]
	stp	q2, q3, [sp, #96]
	stp	q4, q5, [sp, #128]
	stp	q6, q7, [sp, #160]
	stp	x8, x9, [sp, #RALL_X8]
	stp	x10, x11, [sp, #RALL_X8 + 16]
	stp	x12, x13, [sp, #RALL_X8 + 32]
	stp	x14, x15, [sp, #RALL_X8 + 48]
	stp	x18, x29, [sp, #RALL_X8 + 64]
	mrs	x9, nzcv
	mrs	x10, fpsr
	stp	x9, x10, [sp, #RALL_FLAGS]
	SAVE_Q8_31 sp, RALL_V8
	add	x0, sp, #RALL_FRAME		/* the traced function's sp after ret */
	mov	x1, sp				/* its results */
	bl	dft_graph_return
	mov	x30, x0
	RESTORE_Q8_31 sp, RALL_V8
	ldp	x9, x10, [sp, #RALL_FLAGS]
	msr	nzcv, x9
	msr	fpsr, x10
	ldp	x8, x9, [sp, #RALL_X8]
	ldp	x10, x11, [sp, #RALL_X8 + 16]
	ldp	x12, x13, [sp, #RALL_X8 + 32]
	ldp	x14, x15, [sp, #RALL_X8 + 48]
	ldp	x18, x29, [sp, #RALL_X8 + 64]
	ldp	q0, q1, [sp, #64]
	ldp	q2, q3, [sp, #96]
	ldp	q4, q5, [sp, #128]
	ldp	q6, q7, [sp, #160]
	ldp	x6, x7, [sp, #48]
	ldp	x4, x5, [sp, #32]
	ldp	x2, x3, [sp, #16]
	ldp	x0, x1, [sp, #0]
	add	sp, sp, #RALL_FRAME
	ret
	.cfi_endproc
	.size	dft_return_tramp_all, . - dft_return_tramp_all

/*
 * dft_thread_entry: the start routine the pthread_create wrapper gives a
 * new thread. dft_thread_prepare (interpose.c) returns the program's start
 * routine (x0) and argument (x1); this goes there with the stack and x30
 * as the C library left them, so no frame of ours stays below the
 * program's.
 */
	.globl	dft_thread_entry
	.hidden	dft_thread_entry
	.type	dft_thread_entry, %function
	.p2align 4
dft_thread_entry:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset x29, -16
	.cfi_offset x30, -8
	mov	x29, sp
	bl	dft_thread_prepare
	ldp	x29, x30, [sp], #16
	.cfi_def_cfa_offset 0
	.cfi_restore x29
	.cfi_restore x30
	mov	x16, x0
	mov	x0, x1
	br	x16
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
