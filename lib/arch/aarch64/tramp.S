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
	/* relocated entries are x86-64 only: never entered */
	LIGHT_TMPL dft_reloc_light_tmpl, "tls,seq,gp"

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

	/* only the preserving trampoline's functions return here (x86-64) */
	.p2align 4
	TRAP_SYM dft_return_tramp_all

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
