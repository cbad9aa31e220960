/* SPDX-License-Identifier: MIT */
/*
 * tramp.S - the common trampoline, x86-64.
 *
 * A site `call`s a copy of this template placed within rel32 reach of it
 * (see sites.c: trampoline regions). The copy is position independent: it
 * reaches the C dispatcher through its own pointer slot at the end.
 *
 * Stack on entry:  0(%rsp) = site + 5 (return into the traced function)
 *                  8(%rsp) = parent's return address
 * The stack need not be 16-byte aligned there: a compiler may call a local
 * function that needs no alignment (gcc's -fipa-stack-alignment, on by
 * default) with %rsp 8 off, and an mcount site sits after the prologue.
 * Every path that calls C aligns %rsp first (andq $-16), so each keeps its
 * way back to the entry %rsp in %rbp or a register the call preserves.
 * Everything the traced function may receive in registers is saved and
 * restored: rdi rsi rdx rcx r8 r9, rax (varargs count), r10 (static chain),
 * r11, xmm0-7, and the upper parts of ymm0-7 / zmm0-7 where the CPU has
 * them (SAVE_VEC). The light bodies save general registers only (their
 * callbacks promise to touch no vector register).
 */
#include "regs.h"

/* The argument registers into the regs at %rsp, and back (r11 is
 * scratch at a function's entry: RESTORE_GPRS leaves it). */
.macro SAVE_GPRS
	movq	%rdi, REGS_RDI(%rsp)
	movq	%rsi, REGS_RSI(%rsp)
	movq	%rdx, REGS_RDX(%rsp)
	movq	%rcx, REGS_RCX(%rsp)
	movq	%r8, REGS_R8(%rsp)
	movq	%r9, REGS_R9(%rsp)
	movq	%rax, REGS_RAX(%rsp)
	movq	%r10, REGS_R10(%rsp)
	movq	%r11, REGS_R11(%rsp)
.endm

.macro RESTORE_GPRS
	movq	REGS_RDI(%rsp), %rdi
	movq	REGS_RSI(%rsp), %rsi
	movq	REGS_RDX(%rsp), %rdx
	movq	REGS_RCX(%rsp), %rcx
	movq	REGS_R8(%rsp), %r8
	movq	REGS_R9(%rsp), %r9
	movq	REGS_RAX(%rsp), %rax
	movq	REGS_R10(%rsp), %r10
.endm

/* Save / restore everything a traced function may receive in registers,
 * into the struct dynftrace_regs at %rsp (and, for the vector registers'
 * upper parts, the frame above it). KIND is the copy's slot holding
 * arch_vec_kind(). */
.macro SAVE_ARGS kind
	SAVE_GPRS
	SAVE_VEC \kind
	movq	0(%rbp), %rax
	movq	%rax, REGS_RBP(%rsp)
.endm

.macro RESTORE_ARGS kind
	RESTORE_VEC \kind
	RESTORE_GPRS
	movq	REGS_R11(%rsp), %r11
.endm

/*
 * xmm0-7 into regs->xmm, and where the CPU has them the upper parts of
 * ymm0-7 / zmm0-7 (arguments of vector-ABI functions: __m256, __m512),
 * which the C code called next may clobber (glibc's AVX string functions
 * end with vzeroupper). VEC_SSE: legacy-SSE moves. VEC_AVX and VEC_AVX512:
 * VEX/EVEX encodings only, then vzeroupper before the C code runs: a
 * legacy-SSE instruction while the upper state is dirty costs a state
 * transition (measured: 170 ns per call on this CPU), in here as in the
 * callbacks, which are built for SSE. RESTORE_VEC loads xmm with VEX
 * (zeroing bits 128 and up), vinsertf128 sets bits 128-255 (zeroing 256
 * and up), vinserti64x4 bits 256-511. The flags of a compare survive the
 * vector moves.
 */
.macro SAVE_VEC kind
	cmpb	$VEC_AVX, \kind(%rip)
	jae	.Lsa\@
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	movdqu	%xmm\n, REGS_XMM+\n*16(%rsp)
	.endr
	jmp	.Lsd\@
.Lsa\@:
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	vmovdqu	%xmm\n, REGS_XMM+\n*16(%rsp)
	.endr
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	vextractf128	$1, %ymm\n, VEC_UP+\n*16(%rsp)
	.endr
	je	.Lsz\@			/* VEC_AVX: no zmm */
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	vextracti64x4	$1, %zmm\n, VEC_UP_ZMM+\n*32(%rsp)
	.endr
.Lsz\@:
	vzeroupper
.Lsd\@:
.endm

.macro RESTORE_VEC kind
	cmpb	$VEC_AVX, \kind(%rip)
	jae	.Lra\@
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	movdqu	REGS_XMM+\n*16(%rsp), %xmm\n
	.endr
	jmp	.Lrd\@
.Lra\@:
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	vmovdqu	REGS_XMM+\n*16(%rsp), %xmm\n
	.endr
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	vinsertf128	$1, VEC_UP+\n*16(%rsp), %ymm\n, %ymm\n
	.endr
	je	.Lrd\@
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	vinserti64x4	$1, VEC_UP_ZMM+\n*32(%rsp), %zmm\n, %zmm\n
	.endr
.Lrd\@:
.endm

/*
 * The return-value vector registers at OFF(%rsp): xmm0 and xmm1 (16 bytes
 * each), then, per dft_vec_kind, their ymm upper halves (+32, +48:
 * __m256 results) and zmm upper quarters (+64, +96: __m512), 128 bytes in
 * all. VEX encodings only (see SAVE_VEC); vzeroupper before C code.
 * Clobbers the flags.
 */
.macro SAVE_RETVEC off
	cmpb	$VEC_AVX, dft_vec_kind(%rip)
	jae	.Lrvs_avx\@
	movdqu	%xmm0, \off(%rsp)
	movdqu	%xmm1, \off+16(%rsp)
	jmp	.Lrvs_done\@
.Lrvs_avx\@:
	vmovdqu	%xmm0, \off(%rsp)
	vmovdqu	%xmm1, \off+16(%rsp)
	vextractf128	$1, %ymm0, \off+32(%rsp)
	vextractf128	$1, %ymm1, \off+48(%rsp)
	je	.Lrvs_vz\@
	vextracti64x4	$1, %zmm0, \off+64(%rsp)
	vextracti64x4	$1, %zmm1, \off+96(%rsp)
.Lrvs_vz\@:
	vzeroupper
.Lrvs_done\@:
.endm

.macro RESTORE_RETVEC off
	cmpb	$VEC_AVX, dft_vec_kind(%rip)
	jae	.Lrvr_avx\@
	movdqu	\off(%rsp), %xmm0
	movdqu	\off+16(%rsp), %xmm1
	jmp	.Lrvr_done\@
.Lrvr_avx\@:
	vmovdqu	\off(%rsp), %xmm0
	vmovdqu	\off+16(%rsp), %xmm1
	vinsertf128	$1, \off+32(%rsp), %ymm0, %ymm0
	vinsertf128	$1, \off+48(%rsp), %ymm1, %ymm1
	je	.Lrvr_done\@
	vinserti64x4	$1, \off+64(%rsp), %zmm0, %zmm0
	vinserti64x4	$1, \off+96(%rsp), %zmm1, %zmm1
.Lrvr_done\@:
.endm

/*
 * The common trampoline. Copies serve two routes, told apart by the C entry
 * in their slot: dft_dispatch (the single ops or the list function) and
 * dft_callops_entry (CALL_OPS: the ops comes from the literal before the
 * traced function).
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
	.type	dft_caller_tmpl, @function
	.p2align 4
dft_caller_tmpl:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$TRAMP_FRAME, %rsp
	andq	$-16, %rsp		/* for the C call: see the top */
	SAVE_ARGS dft_caller_tmpl_vec
	leaq	16(%rbp), %rax
	movq	%rax, REGS_SP(%rsp)
	movq	8(%rbp), %rdi
	subq	$5, %rdi		/* ip: the site */
	movq	%rdi, REGS_IP(%rsp)
	movq	16(%rbp), %rsi		/* parent ip */
	movq	%rsp, %rdx		/* regs */
	call	*dft_caller_tmpl_slot(%rip)
	RESTORE_ARGS dft_caller_tmpl_vec
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.p2align 3
dft_caller_tmpl_slot:
	.quad	0
dft_caller_tmpl_vec:
	.quad	0
dft_caller_tmpl_end:
	.size	dft_caller_tmpl, dft_caller_tmpl_end - dft_caller_tmpl

/*
 * The vector and mask registers to the area at ALL_XSAVE(%rsp), and back,
 * as much of them as the CPU has (KIND: a byte, 0 xmm0-15, 1 ymm0-15,
 * 2 zmm0-31 and k0-7; arch_save_all_tramp reads XCR0): what the
 * runtime's C code, the libc routines it calls (their AVX/EVEX variants)
 * and callbacks can change. x87 and AMX state they leave alone. Stores,
 * not XSAVE/XRSTOR: 9 ns against 190 for the pair on the development VM.
 * Clobber the flags only.
 */
.macro SAVE_VEC_ALL kind
	cmpb	$1, \kind
	ja	.Lsvz\@
	je	.Lsvy\@
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	movdqu	%xmm\r, ALL_XSAVE+\r*64(%rsp)
	.endr
	jmp	.Lsvd\@
.Lsvy\@:
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu	%ymm\r, ALL_XSAVE+\r*64(%rsp)
	.endr
	jmp	.Lsvd\@
.Lsvz\@:
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu64 %zmm\r, ALL_XSAVE+\r*64(%rsp)
	.endr
	.irp	r, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	vmovdqu64 %zmm\r, ALL_XSAVE+\r*64(%rsp)
	.endr
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7
	kmovq	%k\r, ALL_XSAVE+2048+\r*8(%rsp)
	.endr
.Lsvd\@:
.endm

/*
 * Every vector and mask register saved (SAVE_VEC_ALL, with KIND's save
 * form), xmm0-7 copied into regs->xmm for the callbacks, and regs marked
 * as the preserving trampolines' (REGS_ALL_MAGIC). Clobbers rax.
 */
.macro SAVE_VEC_REGS_ALL kind
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7
	movdqu	%xmm\n, REGS_XMM+\n*16(%rsp)
	.endr
	SAVE_VEC_ALL \kind
	movabsq	$REGS_ALL_MAGIC, %rax
	movq	%rax, REGS_RET(%rsp)
.endm

.macro RESTORE_VEC_ALL kind
	cmpb	$1, \kind
	ja	.Lrvz\@
	je	.Lrvy\@
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	movdqu	ALL_XSAVE+\r*64(%rsp), %xmm\r
	.endr
	jmp	.Lrvd\@
.Lrvy\@:
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu	ALL_XSAVE+\r*64(%rsp), %ymm\r
	.endr
	jmp	.Lrvd\@
.Lrvz\@:
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	vmovdqu64 ALL_XSAVE+\r*64(%rsp), %zmm\r
	.endr
	.irp	r, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	vmovdqu64 ALL_XSAVE+\r*64(%rsp), %zmm\r
	.endr
	.irp	r, 0, 1, 2, 3, 4, 5, 6, 7
	kmovq	ALL_XSAVE+2048+\r*8(%rsp), %k\r
	.endr
.Lrvd\@:
.endm

/*
 * The preserving trampoline: what a relocated entry's site calls (code
 * built without sites, entries.c). gcc lets a caller keep values in
 * call-clobbered registers across a call to a local function that does not
 * touch them (-fipa-ra, on at -O2; off for functions built with entry
 * sites), so nothing may change here: every general register is put back,
 * r11 too, and every vector and mask register (SAVE_VEC_ALL) around the C
 * call. Its slots: the C entry (dft_dispatch) and what the CPU has of the
 * vector state (SAVE_VEC_ALL's KIND). regs->ret[0] holds REGS_ALL_MAGIC:
 * the graph tracer then returns through dft_return_tramp_all.
 */
	.globl	dft_caller_all_tmpl
	.hidden	dft_caller_all_tmpl
	.globl	dft_caller_all_tmpl_end
	.hidden	dft_caller_all_tmpl_end
	.globl	dft_caller_all_tmpl_slot
	.hidden	dft_caller_all_tmpl_slot
	.globl	dft_caller_all_tmpl_kind
	.hidden	dft_caller_all_tmpl_kind
	.type	dft_caller_all_tmpl, @function
	.p2align 4
dft_caller_all_tmpl:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$ALL_FRAME, %rsp
	andq	$-64, %rsp		/* the zmm stores' alignment (C calls 16) */
	SAVE_GPRS
	movq	0(%rbp), %rax
	movq	%rax, REGS_RBP(%rsp)
	SAVE_VEC_REGS_ALL dft_caller_all_tmpl_kind(%rip)
	leaq	16(%rbp), %rax
	movq	%rax, REGS_SP(%rsp)
	movq	8(%rbp), %rdi
	movq	-BLOCK_IP_BACK_ASM(%rdi), %rdi	/* ip: the function's, before the site */
	movq	%rdi, REGS_IP(%rsp)
	movq	16(%rbp), %rsi		/* parent ip */
	movq	%rsp, %rdx		/* regs */
	call	*dft_caller_all_tmpl_slot(%rip)
	RESTORE_VEC_ALL dft_caller_all_tmpl_kind(%rip)
	RESTORE_GPRS
	movq	REGS_R11(%rsp), %r11
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.p2align 3
dft_caller_all_tmpl_slot:
	.quad	0
dft_caller_all_tmpl_kind:
	.quad	0
dft_caller_all_tmpl_end:
	.size	dft_caller_all_tmpl, dft_caller_all_tmpl_end - dft_caller_all_tmpl

/*
 * The per-ops route (the kernel's per-ops trampolines). Each ops owns a 10-byte stub per region:
 *	push $IDX ; jmp dft_ops_tmpl-copy
 * so a site used by that ops alone calls its stub, and this shared body
 * hands IDX to dft_stub_entry, which calls the ops' func directly: no list
 * walk, no filter test. Stack on entry: 0 = IDX, 8 = site + 5, 16 = parent.
 */
	.globl	dft_ops_tmpl
	.hidden	dft_ops_tmpl
	.globl	dft_ops_tmpl_end
	.hidden	dft_ops_tmpl_end
	.globl	dft_ops_tmpl_slot
	.hidden	dft_ops_tmpl_slot
	.globl	dft_ops_tmpl_vec
	.hidden	dft_ops_tmpl_vec
	.type	dft_ops_tmpl, @function
	.p2align 4
dft_ops_tmpl:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	pushq	%rbp
	.cfi_def_cfa_offset 24
	.cfi_offset %rbp, -24
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$TRAMP_FRAME, %rsp
	andq	$-16, %rsp		/* for the C call: see the top */
	SAVE_ARGS dft_ops_tmpl_vec
	leaq	24(%rbp), %rax
	movq	%rax, REGS_SP(%rsp)
	movq	16(%rbp), %rdi
	subq	$5, %rdi
	movq	%rdi, REGS_IP(%rsp)
	movq	24(%rbp), %rsi
	movq	%rsp, %rdx
	movq	8(%rbp), %rcx		/* IDX */
	call	*dft_ops_tmpl_slot(%rip)
	RESTORE_ARGS dft_ops_tmpl_vec
	leave
	.cfi_def_cfa %rsp, 16
	leaq	8(%rsp), %rsp		/* drop IDX, flags untouched */
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.p2align 3
dft_ops_tmpl_slot:
	.quad	0
dft_ops_tmpl_vec:
	.quad	0
dft_ops_tmpl_end:
	.size	dft_ops_tmpl, dft_ops_tmpl_end - dft_ops_tmpl

/* Enter a callback's context, or go to BAIL having changed nothing: the
 * thread is registered, outside any callback (recursion), the API
 * (api_depth) and any read side (rcu_nest): two quadwords of dft_self,
 * found as the thread pointer plus the copy's TLS offset. Then routes_seq
 * is read (r9; r10 = its address) before the route's state, and the
 * recursion guard and the RCU read side are taken (rcu_ctr = rcu_gp_ctr;
 * ordered for the writer by membarrier, see rcu.c). Leaves r11 = &dft_self,
 * also kept at REGS_SIZE(%rsp) for the way out. TLS, SEQ, GP: the copy's
 * slots. */
.macro LIGHT_ENTER tls, seq, gp, bail
	movq	%fs:0, %r11		/* the thread pointer */
	addq	\tls(%rip), %r11	/* &dft_self */
	cmpq	$0, THR_RECURSION(%r11)	/* no recursion, no read side */
	jne	\bail
	movabsq	$THR_IDLE, %rax
	cmpq	%rax, THR_API_DEPTH(%r11)	/* registered, not in the API */
	jne	\bail
	movq	%r11, REGS_SIZE(%rsp)
	movq	\seq(%rip), %r10
	movq	(%r10), %r9		/* routes_seq, before the route's state */
	movabsq	$THR_CALLBACK, %rax
	movq	%rax, THR_RECURSION(%r11)	/* recursion = rcu_nest = 1 */
	movq	\gp(%rip), %rax
	movq	(%rax), %rax
	movq	%rax, THR_RCU_CTR(%r11)	/* rcu_read_lock() */
.endm

/* Unless a filter change overlapped (routes_seq in r9 odd or moved: to
 * LATE, still inside the read side), call op->func(ip, parent, op, regs)
 * for the op in rdx and the site + 5 in rdi, leave the read side and put
 * the argument registers back. LIGHT_FRAME + 16(%rsp) is the parent's
 * return address (both bodies' frames end 8 bytes below the site's). The
 * ip is the site's, or (RELOC) the function's, kept before its block's
 * site. */
.macro LIGHT_CALL late, reloc=0
	testb	$1, %r9b
	jnz	\late
	cmpq	(%r10), %r9
	jne	\late
	.if \reloc
	movq	-BLOCK_IP_BACK_ASM(%rdi), %rdi	/* ip */
	.else
	subq	$5, %rdi		/* ip */
	.endif
	movq	%rdi, REGS_IP(%rsp)
	leaq	LIGHT_FRAME+16(%rsp), %rax
	movq	%rax, REGS_SP(%rsp)
	movq	%rbp, REGS_RBP(%rsp)
	movq	%rbp, LIGHT_RBP(%rsp)	/* regs->rbp is the callback's to change */
	.cfi_rel_offset %rbp, LIGHT_RBP
	movq	LIGHT_FRAME+16(%rsp), %rsi	/* parent */
	movq	%rsp, %rcx		/* regs */
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp		/* for the C call: see the top */
	call	*(%rdx)			/* op->func(ip, parent, op, regs) */
	movq	%rbp, %rsp
	.cfi_def_cfa_register %rsp
	movq	LIGHT_RBP(%rsp), %rbp
	.cfi_restore %rbp
	movq	REGS_SIZE(%rsp), %r11
	movq	$0, THR_RCU_CTR(%r11)	/* rcu_read_unlock() */
	movq	$0, THR_RECURSION(%r11)	/* recursion = rcu_nest = 0 */
	RESTORE_GPRS
.endm

/*
 * The light per-ops body (DYNFTRACE_OPS_FL_GPR_ONLY), all in assembly.
 * Stubs of the light range jump here instead of to dft_ops_tmpl: the ops'
 * callback, and all it calls, touch no vector or x87 register, so only the
 * general registers that may carry arguments are saved (xmm0-7 stay live
 * through the call; the xmm part of the regs structure is not filled), and
 * what dft_stub_entry does in C is done inline, for the common case only:
 *   - the thread is registered, outside any callback (recursion), the API
 *     (api_depth) and any read side (rcu_nest): two quadwords of dft_self,
 *     found as the thread pointer (%fs:0) plus the copy's offset
 *     (initial-exec TLS: the same in every thread; addressing every field
 *     through %fs with a base register measured 1.7 ns slower per call);
 *   - routes_seq read, recursion and the RCU read side taken (rcu_ctr =
 *     rcu_gp_ctr; ordered for the writer by membarrier, see rcu.c);
 *   - the stub's ops read from the region's table, the site checked to call
 *     this very stub when the entry says so (STUB_VERIFY), routes_seq even
 *     and unchanged (the late-entry check, see ops.c);
 *   - op->func(ip, parent, op, regs) called straight from here.
 * Anything else leaves before any side effect, or after undoing the read
 * side, with every register as the stub left it, and jumps to the region's
 * full body (dft_ops_tmpl), which handles it (registration, recursion
 * count, late entries) with every register saved. The fields' offsets are
 * checked against struct dft_thread in ops.c. r11 is scratch at a
 * function's entry (SysV); it is saved for regs but not put back.
 * Stack on entry: 0 = IDX, 8 = site + 5, 16 = parent.
 */
	.globl	dft_ops_light_tmpl
	.hidden	dft_ops_light_tmpl
	.globl	dft_ops_light_tmpl_end
	.hidden	dft_ops_light_tmpl_end
	.globl	dft_ops_light_tmpl_full
	.hidden	dft_ops_light_tmpl_full
	.globl	dft_ops_light_tmpl_table
	.hidden	dft_ops_light_tmpl_table
	.globl	dft_ops_light_tmpl_stub0
	.hidden	dft_ops_light_tmpl_stub0
	.globl	dft_ops_light_tmpl_tls
	.hidden	dft_ops_light_tmpl_tls
	.globl	dft_ops_light_tmpl_seq
	.hidden	dft_ops_light_tmpl_seq
	.globl	dft_ops_light_tmpl_gp
	.hidden	dft_ops_light_tmpl_gp
	.type	dft_ops_light_tmpl, @function
	.p2align 4
dft_ops_light_tmpl:
	.cfi_startproc
	.cfi_def_cfa_offset 16
	subq	$LIGHT_FRAME, %rsp	/* a whole dynftrace_regs and two slots */
	.cfi_def_cfa_offset 16+LIGHT_FRAME
	SAVE_GPRS
	LIGHT_ENTER dft_ops_light_tmpl_tls, dft_ops_light_tmpl_seq, dft_ops_light_tmpl_gp, 2f
	movl	LIGHT_FRAME(%rsp), %ecx	/* IDX */
	andl	$0xfff, %ecx
	movq	dft_ops_light_tmpl_table(%rip), %rdx
	movq	(%rdx,%rcx,8), %rdx	/* op: the owner, or late_ops */
	movq	LIGHT_FRAME+8(%rsp), %rdi	/* site + 5 */
	testb	$1, %dl			/* STUB_VERIFY (ops.c): */
	jz	4f
	andq	$-2, %rdx
	shlq	$4, %rcx
	addq	dft_ops_light_tmpl_stub0(%rip), %rcx	/* this stub */
	cmpb	$0xe8, -5(%rdi)		/* the site still calls this stub */
	jne	1f
	movslq	-4(%rdi), %rax
	addq	%rdi, %rax
	cmpq	%rax, %rcx
	jne	1f
4:	LIGHT_CALL 1f
	addq	$LIGHT_FRAME+8, %rsp	/* and IDX */
	.cfi_remember_state
	.cfi_def_cfa_offset 8
	ret
	.cfi_restore_state
1:	/* inside the read side: leave it, the full body decides */
	movq	$0, THR_RCU_CTR(%r11)
	movq	$0, THR_RECURSION(%r11)
2:	RESTORE_GPRS
	movq	REGS_R11(%rsp), %r11
	addq	$LIGHT_FRAME, %rsp
	.cfi_def_cfa_offset 16
	jmp	*dft_ops_light_tmpl_full(%rip)	/* IDX still pushed */
	.cfi_endproc
	.p2align 3
dft_ops_light_tmpl_full:
	.quad	0
dft_ops_light_tmpl_table:
	.quad	0
dft_ops_light_tmpl_stub0:
	.quad	0
dft_ops_light_tmpl_tls:
	.quad	0
dft_ops_light_tmpl_seq:
	.quad	0
dft_ops_light_tmpl_gp:
	.quad	0
dft_ops_light_tmpl_end:
	.size	dft_ops_light_tmpl, dft_ops_light_tmpl_end - dft_ops_light_tmpl

/*
 * The light CALL_OPS body: CALL_OPS sites whose literal holds a
 * DYNFTRACE_OPS_FL_GPR_ONLY ops call this copy (REGION_CALLOPS_LIGHT)
 * instead of the full one (REGION_CALLOPS). As the light per-ops body:
 * general registers only, the common case inline, anything else back to
 * the full copy (its slot) with every register as the site left it. The
 * literal is read inside the read side, and the ops it holds must be
 * GPR_ONLY itself: a thread that came here just before the site moved to
 * another ops (literal first, then the site) finds that ops and takes the
 * full copy. Stack on entry: 0 = site + 5, 8 = parent.
 */
	.globl	dft_callops_light_tmpl
	.hidden	dft_callops_light_tmpl
	.globl	dft_callops_light_tmpl_end
	.hidden	dft_callops_light_tmpl_end
	.globl	dft_callops_light_tmpl_full
	.hidden	dft_callops_light_tmpl_full
	.globl	dft_callops_light_tmpl_tls
	.hidden	dft_callops_light_tmpl_tls
	.globl	dft_callops_light_tmpl_seq
	.hidden	dft_callops_light_tmpl_seq
	.globl	dft_callops_light_tmpl_gp
	.hidden	dft_callops_light_tmpl_gp
	.type	dft_callops_light_tmpl, @function
	.p2align 4
dft_callops_light_tmpl:
	.cfi_startproc
	subq	$LIGHT_FRAME+8, %rsp	/* a whole dynftrace_regs and two slots */
	.cfi_def_cfa_offset 16+LIGHT_FRAME
	SAVE_GPRS
	LIGHT_ENTER dft_callops_light_tmpl_tls, dft_callops_light_tmpl_seq, dft_callops_light_tmpl_gp, 2f
	movq	LIGHT_FRAME+8(%rsp), %rdi	/* site + 5 */
	leaq	-13(%rdi), %rax		/* the literal: 8 bytes before the site, */
	cmpl	$0xfa1e0ff3, -9(%rdi)	/* or before its endbr64 */
	jne	3f
	subq	$4, %rax
3:	movq	(%rax), %rdx		/* op */
	testq	%rdx, %rdx
	jz	1f
	testb	$DYNFTRACE_OPS_FL_GPR_ONLY_ASM, 8(%rdx)	/* op->flags */
	jz	1f
	LIGHT_CALL 1f
	addq	$LIGHT_FRAME+8, %rsp
	.cfi_remember_state
	.cfi_def_cfa_offset 8
	ret
	.cfi_restore_state
1:	/* inside the read side: leave it, the full copy decides */
	movq	$0, THR_RCU_CTR(%r11)
	movq	$0, THR_RECURSION(%r11)
2:	RESTORE_GPRS
	movq	REGS_R11(%rsp), %r11
	addq	$LIGHT_FRAME+8, %rsp
	.cfi_def_cfa_offset 8
	jmp	*dft_callops_light_tmpl_full(%rip)
	.cfi_endproc
	.p2align 3
dft_callops_light_tmpl_full:
	.quad	0
dft_callops_light_tmpl_tls:
	.quad	0
dft_callops_light_tmpl_seq:
	.quad	0
dft_callops_light_tmpl_gp:
	.quad	0
dft_callops_light_tmpl_end:
	.size	dft_callops_light_tmpl, dft_callops_light_tmpl_end - dft_callops_light_tmpl

/*
 * The light body of relocated entries (entries.c): a block whose literal
 * holds a DYNFTRACE_OPS_FL_GPR_ONLY ops calls this copy; as the light
 * CALL_OPS body, but every register comes back as it was, r11 too (see
 * dft_caller_all_tmpl: callers may keep values in any register), the
 * literal and the function's address are the block's (21 and 13 bytes
 * before the site's end), and anything else goes to the block's arena's
 * preserving trampoline (its address 29 bytes before), every register as
 * the site left it. The callback touches no vector register (GPR_ONLY).
 * Stack on entry: 0 = site + 5, 8 = parent.
 */
	.globl	dft_reloc_light_tmpl
	.hidden	dft_reloc_light_tmpl
	.globl	dft_reloc_light_tmpl_end
	.hidden	dft_reloc_light_tmpl_end
	.globl	dft_reloc_light_tmpl_tls
	.hidden	dft_reloc_light_tmpl_tls
	.globl	dft_reloc_light_tmpl_seq
	.hidden	dft_reloc_light_tmpl_seq
	.globl	dft_reloc_light_tmpl_gp
	.hidden	dft_reloc_light_tmpl_gp
	.type	dft_reloc_light_tmpl, @function
	.p2align 4
dft_reloc_light_tmpl:
	.cfi_startproc
	subq	$LIGHT_FRAME+8, %rsp
	.cfi_def_cfa_offset 16+LIGHT_FRAME
	SAVE_GPRS
	LIGHT_ENTER dft_reloc_light_tmpl_tls, dft_reloc_light_tmpl_seq, dft_reloc_light_tmpl_gp, 2f
	movq	LIGHT_FRAME+8(%rsp), %rdi	/* site + 5 */
	movq	-21(%rdi), %rdx		/* op: the block's literal */
	testq	%rdx, %rdx
	jz	1f
	testb	$DYNFTRACE_OPS_FL_GPR_ONLY_ASM, 8(%rdx)	/* op->flags */
	jz	1f
	LIGHT_CALL 1f, 1
	movq	REGS_R11(%rsp), %r11
	addq	$LIGHT_FRAME+8, %rsp
	.cfi_remember_state
	.cfi_def_cfa_offset 8
	ret
	.cfi_restore_state
1:	/* inside the read side: leave it, the preserving trampoline decides */
	movq	$0, THR_RCU_CTR(%r11)
	movq	$0, THR_RECURSION(%r11)
2:	RESTORE_GPRS
	movq	LIGHT_FRAME+8(%rsp), %r11	/* site + 5 */
	movq	-29(%r11), %r11		/* the arena's trampoline */
	movq	%r11, LIGHT_FRAME(%rsp)	/* the slot below the site's */
	movq	REGS_R11(%rsp), %r11
	addq	$LIGHT_FRAME, %rsp
	.cfi_def_cfa_offset 16
	ret				/* to it, with 0 = site + 5 again */
	.cfi_endproc
	.p2align 3
dft_reloc_light_tmpl_tls:
	.quad	0
dft_reloc_light_tmpl_seq:
	.quad	0
dft_reloc_light_tmpl_gp:
	.quad	0
dft_reloc_light_tmpl_end:
	.size	dft_reloc_light_tmpl, dft_reloc_light_tmpl_end - dft_reloc_light_tmpl

/*
 * The function-graph shortcut: a site whose only ops is the
 * graph tracer JUMPS to its own thunk (sites.c, thunk_write), 32 bytes
 * next to its region:
 *
 *	 0  mov  $ID, %r11d
 *	 6  call gentry           region + REGION_GRAPH (this file; for an
 *	                          ID above 16 bits REGION_GRAPH_WIDE, whose
 *	                          entry event names it in 32 bits)
 *	11  jnz  26               not traced
 *	13  call SITE + 5         the function runs; 0(%rsp) = 18 (the hook)
 *	18  jmp  gexit            region + REGION_GEXIT: returns to the caller
 *	23  int3 x 3
 *	26  jmp  SITE + 5
 *
 * Every call has its return, so the return stack buffer predicts every
 * return (a return-address hook mispredicts one per call: here gexit's
 * `ret` to the caller pairs with the caller's own call), the site id
 * comes with the jump (no ip hash lookup), and there is no indirect
 * branch. gentry ends with `ret $8` when it traced the call: the real
 * return address (already on the shadow stack) leaves the stack, and the
 * thunk's `call SITE + 5` puts the hook in its place, so the function
 * sees its arguments where its caller put them.
 *
 * gentry and gexit are one indirect jump each, from the region (within
 * reach of the object's thunks) to the library's dft_graph_entry and
 * dft_graph_exit below: the common case all in assembly with the general
 * registers only, anything else with the vector registers saved too and
 * the generic C code (ops.c: dft_graph_thunk_slow; trace.c:
 * dft_graph_return). Each reads the counter as late as it can, in the
 * ring write (RING_RESERVE). In C these paths cost 4-5 ns more per call
 * (the call, a second save of registers, the compiler's spills):
 * docs/PERFORMANCE.md.
 */
	.globl	dft_gentry_tmpl
	.hidden	dft_gentry_tmpl
	.globl	dft_gentry_tmpl_end
	.hidden	dft_gentry_tmpl_end
	.globl	dft_gentry_tmpl_fast
	.hidden	dft_gentry_tmpl_fast
	.type	dft_gentry_tmpl, @function
	.p2align 4
dft_gentry_tmpl:
	/* The region's copy reaches the library's code (dft_graph_entry). */
	.cfi_startproc
	jmp	*dft_gentry_tmpl_fast(%rip)
	.cfi_endproc
	.p2align 3
dft_gentry_tmpl_fast:
	.quad	0
dft_gentry_tmpl_end:
	.size	dft_gentry_tmpl, dft_gentry_tmpl_end - dft_gentry_tmpl

/*
 * Commit SIZE bytes to the page commit word at CW (RING_RESERVE's: one add,
 * bytes and events) and leave the writer's nest. Nothing waits for the
 * result: a page this commit completes (an outer event's, after a nested
 * one switched pages) is found by the consumer's next pass, and shutdown
 * polls the nest (ring.c, ring_quiesce), so no wake is due here. Clobbers
 * rsi.
 */
.macro RING_COMMIT cw, size
	movabsq	$(1 << 32) | (\size), %rsi
	addq	%rsi, (\cw)		/* commit */
	subl	$1, RB_NEST(%r11)
.endm

/*
 * Reserve a compact event of SIZE bytes (header included) with id ID in the
 * ring at r11 (graph_fast.c's fast_write): the TSC read into rdx, the
 * writer's nest, then the offset, the clock (CLOCK_NS), room in the page
 * (below the cached page's limit: ring_fast.h, ring_cache_page), the
 * page's address base and commit word (read before the claim, so that they
 * are the claimed position's page: a nested writer that switches pages
 * fails the claim), the offset claimed by cmpxchg (no lock: against our
 * own signal handlers) and the header written. Leaves OFF = the event's
 * address and CW = its page's commit word; to FULL when the nest is full
 * (nothing changed), to UNDO with the nest taken; rdx = the event's time
 * in ns. Clobbers rax, rsi. The payload is the caller's to store: stored
 * with the header as one quadword, it would wait for the counter.
 */
.macro RING_RESERVE off, size, id, cw, full, undo
	/* The counter is read here, after every check and before the nest's
	 * store: read earlier, or after a store, it costs 0.2-1 ns more per
	 * call (docs/PERFORMANCE.md, "Where the counter is read"). */
	rdtsc
	shlq	$32, %rdx
	orq	%rax, %rdx		/* rdx = tsc */
	cmpl	$RING_NEST_MAX_ASM, RB_NEST(%r11)
	jae	\full
	addl	$1, RB_NEST(%r11)
	movq	RB_OFFSET(%r11), \off
	cmpl	$0, RB_STOP(%r11)
	jne	\undo
	CLOCK_NS \undo
	leaq	\size(\off), %rsi	/* the new offset */
	cmpq	RB_WLIMIT(%r11), %rsi
	jae	\undo
	movq	RB_WCOMMIT(%r11), \cw
	movq	\off, %rax
	addq	RB_WBASE(%r11), \off	/* the address */
	cmpxchgq %rsi, RB_OFFSET(%r11)
	jne	\undo
	movq	%rdx, RB_LAST_TS(%r11)
	leal	\id(,%rdx,8), %esi	/* compact header: id | ts << 3 */
	movw	%si, (\off)
.endm

/*
 * The graph paths' timestamp: the TSC in rdx to trace-clock nanoseconds
 * with the ring's copy of the clock's latch (ring_fast.h, ring_clk_copy:
 * current while clk_seq has not moved since; the C writers refresh it),
 * 64-bit form of clk_apply (valid while the TSC is under 2^32 ticks past
 * the base, which the consumer keeps), and the ring's compact delta to the
 * buffer at r11 checked. A latch not in use (CLK_MULT_NONE, base 0:
 * clock.c) overflows the multiply; that and anything else go to UNDO.
 * Clobbers rax. Every instruction here costs: the writers run past what
 * the two counter reads hide (docs/PERFORMANCE.md).
 */
.macro CLOCK_NS undo
	movl	clk_seq(%rip), %eax
	cmpq	RB_CSEQ(%r11), %rax	/* the ring's copy of the latch is current */
	jne	\undo
	subq	RB_CBASE_TSC(%r11), %rdx	/* tsc - base_tsc */
	js	\undo
	imulq	RB_CMULT(%r11), %rdx
	jo	\undo
	shrq	$32, %rdx
	addq	RB_CBASE_NS(%r11), %rdx	/* rdx = ts */
	movq	%rdx, %rax
	subq	RB_LAST_TS(%r11), %rax
	cmpq	$RING_TS_WRAP_ASM, %rax	/* also ts < last_ts */
	jae	\undo
.endm

/* The graph entry's frame, gone (flags kept: ZF tells the thunk). */
.macro GE_LEAVE all
	.if \all
	leave
	.else
	leaq	TRAMP_FRAME + 8(%rsp), %rsp
	.endif
.endm

/* The graph entry's common ends: the registers back and ZF set without a
 * register when TRACED (the real return address, and the id, leave),
 * clear when not (the thunk jumps to the function; the id leaves). */
.macro GE_RETURN all, traced
	RESTORE_GPRS
	.if \all
	movq	REGS_R11(%rsp), %r11
	.endif
	.if \traced
	cmpq	%rsp, %rsp		/* ZF set: traced (the thunk's jnz) */
	.else
	testq	%rsp, %rsp		/* ZF clear */
	.endif
	.cfi_remember_state
	GE_LEAVE \all
	.cfi_def_cfa %rsp, 8
	.if \traced + \all
	ret	$8 * (\traced + \all)
	.else
	ret
	.endif
	.cfi_restore_state
.endm

/*
 * dft_graph_entry - the graph shortcut's entry, reached from the thunk's
 * `call gentry` (through the region's dft_gentry_tmpl): 0(%rsp) = thunk +
 * 11, 8(%rsp) = the traced function's return address, r11d = site id.
 * Ends with ZF set and `ret $8` when it traced the call (see above), ZF
 * clear and `ret` when not; every register but r11 as it came.
 *
 * The fast path, for the common case only, all in assembly with the
 * general registers saved (no C call, no second save): the thread is
 * registered and outside any callback, the API and any read side
 * (dft_self's two quadwords, as the light per-ops body reads them);
 * recursion and the RCU read side taken before the configuration is read
 * (the shortcut's ops registered; function_graph, the ring on, no time
 * filter, no graph lists); the shadow stack has room,
 * no frame to close (longjmp), no graph_notrace frame open, max_depth
 * (not reached, or the call is not traced, as trace_graph_enter decides);
 * the entry event is a compact one that fits the page (graph_fast.c's
 * fast_write: nest, offset, stop, clock, cmpxchg, commit). Anything else
 * leaves before any side effect (or after undoing the read side and nest)
 * and the generic entry (ops.c: dft_graph_thunk_slow) runs with every
 * argument register saved. Offsets: regs.h, checked in graph_fast.c.
 */
.macro GRAPH_ENTRY all, id, slot, tret, sfx, wide
	.cfi_startproc
	.if \all
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$ALL_FRAME, %rsp
	andq	$-64, %rsp		/* the zmm stores' alignment (C calls 16) */
	.else
	/* No frame pointer and no alignment: the common paths call no C
	 * function, and the generic one aligns around its call. */
	subq	$TRAMP_FRAME + 8, %rsp
	.cfi_def_cfa_offset TRAMP_FRAME + 16
	.endif
	movq	%rdi, REGS_RDI(%rsp)
	movq	%rsi, REGS_RSI(%rsp)
	movq	%rdx, REGS_RDX(%rsp)
	movq	%rcx, REGS_RCX(%rsp)
	movq	%r8, REGS_R8(%rsp)
	movq	%r9, REGS_R9(%rsp)
	movq	%rax, REGS_RAX(%rsp)
	movq	%r10, REGS_R10(%rsp)
	movq	%r11, REGS_R11(%rsp)	/* the site id, or (ALL) the caller's r11 */
	movq	dft_tls_block(%rip), %r9	/* %fs:X@dtpoff(%r9) = X */
	cmpq	$0, %fs:dft_self@dtpoff+THR_RECURSION(%r9)	/* no recursion, no read side */
	jne	.Lge_generic\sfx
	movabsq	$THR_IDLE, %rax
	cmpq	%rax, %fs:dft_self@dtpoff+THR_API_DEPTH(%r9)	/* registered, not in the API */
	jne	.Lge_generic\sfx
	movabsq	$THR_CALLBACK, %rax
	movq	%rax, %fs:dft_self@dtpoff+THR_RECURSION(%r9)	/* recursion = rcu_nest = 1 */
	movq	rcu_gp_ctr(%rip), %rax
	movq	%rax, %fs:dft_self@dtpoff+THR_RCU_CTR(%r9)	/* rcu_read_lock() */
	cmpl	$TR_GRAPH_ASM, trace_fast(%rip)	/* ops, ring, no time filter or lists */
	jne	.Lge_function\sfx
	movq	%fs:fg_self@dtpoff(%r9), %r8	/* r8 = g */
	testq	%r8, %r8
	jz	.Lge_unlock\sfx
	cmpq	$0, FG_NOTRACE_DEPTH(%r8)	/* no notrace frame, no exit owed */
	jne	.Lge_unlock\sfx
	movl	FG_DEPTH(%r8), %ecx	/* ecx = d */
	testl	%ecx, %ecx
	jz	1f
	/* A frame at or below ours was left by longjmp: the slow path. */
	imulq	$SE_SIZE, %rcx, %rax
	leaq	\slot, %rsi		/* the slot */
	cmpq	%rsi, FG_ENT-SE_SIZE+SE_SLOT(%r8,%rax)
	jbe	.Lge_unlock\sfx
1:	cmpl	trace_depth_lim(%rip), %ecx	/* max_depth and the shadow's room */
	jae	.Lge_deep\sfx
	movq	%fs:ring_tls@dtpoff(%r9), %r11	/* r11 = b */
	testq	%r11, %r11
	jz	.Lge_unlock\sfx
	.if \wide
	/* A site id above 16 bits: the 6-byte entry. */
	RING_RESERVE %rdi, RING_COMPACT_HDR_ASM + 4, RING_EV_ENTRY_ASM, %r10, .Lge_unlock\sfx, .Lge_undo\sfx
	movl	\id, %esi
	movl	%esi, RING_COMPACT_HDR_ASM(%rdi)	/* payload: the id */
	RING_COMMIT %r10, RING_COMPACT_HDR_ASM + 4
	.else
	/* entry16 (4 bytes): the thunk of a wider id calls the _wide copy. */
	RING_RESERVE %rdi, RING_COMPACT_HDR_ASM + 2, RING_EV_ENTRY16_ASM, %r10, .Lge_unlock\sfx, .Lge_undo\sfx
	movl	\id, %esi
	movw	%si, RING_COMPACT_HDR_ASM(%rdi)	/* payload: the id */
	RING_COMMIT %r10, RING_COMPACT_HDR_ASM + 2
	.endif
	/* The shadow entry, then depth (still in ecx: the recursion guard
	 * keeps handlers out): a nested handler sees the push. */
	imulq	$SE_SIZE, %rcx, %rax
	leaq	FG_ENT(%r8,%rax), %rax	/* rax = e */
	leaq	\slot, %rsi
	movq	%rsi, SE_SLOT(%rax)
	movq	(%rsi), %rdi
	movq	%rdi, SE_ORIG(%rax)
	movq	\tret, %rdi
	addq	$THUNK_HOOK_ASM, %rdi
	movq	%rdi, SE_HOOK(%rax)
	movq	%rdx, SE_TS(%rax)
	movq	$0, SE_CHILD_NS(%rax)
	movl	\id, %edi
	movl	%edi, SE_ID(%rax)
	movl	$1 | TR_GRAPH_ASM << 8 | SE_RING_ASM << 16, SE_HOOKED(%rax)	/* hooked, kind, fl, 0 */
	addl	$1, %ecx
	movl	%ecx, FG_DEPTH(%r8)
	movq	$0, %fs:dft_self@dtpoff+THR_RCU_CTR(%r9)	/* rcu_read_unlock() */
	movq	$0, %fs:dft_self@dtpoff+THR_RECURSION(%r9)	/* recursion = rcu_nest = 0 */
	GE_RETURN \all, 1
.Lge_function\sfx:
	/* The function tracer: one event, and the call is not hooked (the
	 * thunk jumps to the function). The thunk's `jmp SITE + 5` gives the
	 * site's ip (a relocated entry's: the function's, in the word of its
	 * block before SITE + 5, as LIGHT_CALL reads it): a
	 * function_near event (8 bytes) when the caller is near; else a
	 * `function` event with the whole address (14 bytes). */
	cmpl	$TR_FUNCTION_ASM, trace_fast(%rip)	/* ops and ring too */
	jne	.Lge_unlock\sfx
	movq	%fs:ring_tls@dtpoff(%r9), %r11	/* r11 = b */
	testq	%r11, %r11
	jz	.Lge_unlock\sfx
	movl	\id, %ecx
	.if \wide	/* the others' ids fit 16 bits */
	cmpl	$(1 << NEAR_FUNC_BITS_ASM), %ecx
	jae	.Lge_far\sfx
	.endif
	movq	\tret, %rax
	.if \all
	movslq	15(%rax), %rsi		/* thunk + 10; the rel32 of its jmp at thunk + 24 */
	movq	19 - BLOCK_IP_BACK_ASM(%rax,%rsi), %rsi	/* ip: SITE + 5 = thunk + 29 + rel32 */
	.else
	movslq	16(%rax), %rsi		/* thunk + 11; the rel32 of its jmp at thunk + 26 */
	leaq	15(%rax,%rsi), %rsi	/* SITE = thunk + 31 + rel32 - 5 */
	.endif
	movq	\slot, %r8	/* the parent: the function's return address */
	subq	%rsi, %r8		/* parent - SITE */
	leaq	1 << (NEAR_OFF_BITS_ASM - 1)(%r8), %rax
	shrq	$NEAR_OFF_BITS_ASM, %rax	/* not within +-2^25: too far */
	jnz	.Lge_far\sfx
	shlq	$NEAR_FUNC_BITS_ASM, %r8
	orq	%rcx, %r8		/* r8 = the payload (48 bits) */
	/* Stored in two parts after the header: cheaper than one quadword
	 * with the header, which would wait for the counter. */
	RING_RESERVE %rdi, RING_COMPACT_HDR_ASM + 6, RING_EV_NEAR_ASM, %r10, .Lge_unlock\sfx, .Lge_undo\sfx
	movl	%r8d, RING_COMPACT_HDR_ASM(%rdi)
	shrq	$32, %r8
	movw	%r8w, RING_COMPACT_HDR_ASM + 4(%rdi)
	RING_COMMIT %r10, RING_COMPACT_HDR_ASM + 6
	jmp	.Lge_untraced\sfx
.Lge_far\sfx:
	movq	\slot, %r8	/* the parent */
	RING_RESERVE %rdi, RING_COMPACT_HDR_ASM + 12, RING_EV_FUNCTION_ASM, %r10, .Lge_unlock\sfx, .Lge_undo\sfx
	movl	\id, %esi
	movl	%esi, RING_COMPACT_HDR_ASM(%rdi)	/* func */
	movq	%r8, RING_COMPACT_HDR_ASM + 4(%rdi)	/* parent_ip */
	RING_COMMIT %r10, RING_COMPACT_HDR_ASM + 12
.Lge_untraced\sfx:
	movq	$0, %fs:dft_self@dtpoff+THR_RCU_CTR(%r9)
	movq	$0, %fs:dft_self@dtpoff+THR_RECURSION(%r9)
	GE_RETURN \all, 0
.Lge_deep\sfx:
	/* Below SHADOW_MAX: max_depth (trace_int.h: trace_depth_lim). */
	cmpl	$SHADOW_MAX_ASM, %ecx
	jb	.Lge_untraced\sfx
	jmp	.Lge_unlock\sfx
.Lge_undo\sfx:
	subl	$1, RB_NEST(%r11)
.Lge_unlock\sfx:
	movq	$0, %fs:dft_self@dtpoff+THR_RCU_CTR(%r9)
	movq	$0, %fs:dft_self@dtpoff+THR_RECURSION(%r9)
.Lge_generic\sfx:
	/* Inside the runtime or a callback already (the runtime's own calls
	 * into patched libc functions, millions while it patches a big
	 * program): what cb_enter answers, without the vector registers'
	 * saves and the C call. */
	movl	%fs:dft_self@dtpoff+THR_RECURSION(%r9), %eax
	orl	%fs:dft_self@dtpoff+THR_API_DEPTH(%r9), %eax
	jz	2f
	lock incq dft_recursion_miss(%rip)
	movl	$1, %eax		/* not traced */
	jmp	.Lge_out\sfx
2:
	/* The generic entry: every argument register saved. */
	.if \all
	SAVE_VEC_REGS_ALL dft_save_all_kind(%rip)
	.else
	SAVE_VEC dft_vec_kind	/* and the ymm/zmm upper parts */
	.endif
	.if \all
	movq	0(%rbp), %rax
	movq	%rax, REGS_RBP(%rsp)
	.else
	movq	%rbp, REGS_RBP(%rsp)	/* no frame: the caller's */
	.endif
	leaq	\slot, %rsi
	movq	%rsi, REGS_SP(%rsp)
	movl	\id, %edi		/* id */
	movq	%rsp, %rdx		/* regs */
	movq	\tret, %rcx		/* thunk + 11 */
	.if \all
	call	dft_graph_thunk_slow
	.else
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp		/* for the C call: see the top */
	call	dft_graph_thunk_slow
	leave
	.cfi_def_cfa %rsp, TRAMP_FRAME + 16
	.cfi_restore %rbp
	.endif
	.if \all
	RESTORE_VEC_ALL dft_save_all_kind(%rip)
	.else
	RESTORE_VEC dft_vec_kind
	.endif
.Lge_out\sfx:
	testq	%rax, %rax		/* ZF: traced (the thunk's jnz) */
	RESTORE_GPRS
	.if \all
	movq	REGS_R11(%rsp), %r11
	.endif
	GE_LEAVE \all
	.cfi_def_cfa %rsp, 8
	jnz	3f
	ret	$8 + 8 * \all		/* traced: the real return (and the id) leave */
3:	ret	$8 * \all
	.cfi_endproc
.endm

	.text
	.globl	dft_graph_entry
	.hidden	dft_graph_entry
	.type	dft_graph_entry, @function
	.p2align 4
dft_graph_entry:
	GRAPH_ENTRY 0, REGS_R11(%rsp), TRAMP_FRAME + 16(%rsp), TRAMP_FRAME + 8(%rsp), _p, 0
	.size	dft_graph_entry, . - dft_graph_entry

/* dft_graph_entry for site ids above 16 bits (sites.c: REGION_GRAPH_WIDE). */
	.globl	dft_graph_entry_wide
	.hidden	dft_graph_entry_wide
	.type	dft_graph_entry_wide, @function
	.p2align 4
dft_graph_entry_wide:
	GRAPH_ENTRY 0, REGS_R11(%rsp), TRAMP_FRAME + 16(%rsp), TRAMP_FRAME + 8(%rsp), _pw, 1
	.size	dft_graph_entry_wide, . - dft_graph_entry_wide

/*
 * dft_graph_entry_all - dft_graph_entry for the preserving thunks of
 * relocated entries (arch.c: arch_graph_thunk_write): every register comes
 * back as it came, r11 too, and the slow path keeps every vector and mask
 * register (SAVE_VEC_ALL, as dft_caller_all_tmpl). The thunk pushed the site
 * id: 0(%rsp) = thunk + 10, 8(%rsp) = id, 16(%rsp) = the traced function's
 * return address; `ret $16` when traced, `ret $8` when not.
 */
	.globl	dft_graph_entry_all
	.hidden	dft_graph_entry_all
	.type	dft_graph_entry_all, @function
	.p2align 4
dft_graph_entry_all:
	GRAPH_ENTRY 1, 16(%rbp), 24(%rbp), 8(%rbp), _a, 0
	.size	dft_graph_entry_all, . - dft_graph_entry_all

/* dft_graph_entry_all for site ids above 16 bits (REGION_GRAPH_ALL_WIDE). */
	.globl	dft_graph_entry_all_wide
	.hidden	dft_graph_entry_all_wide
	.type	dft_graph_entry_all_wide, @function
	.p2align 4
dft_graph_entry_all_wide:
	GRAPH_ENTRY 1, 16(%rbp), 24(%rbp), 8(%rbp), _aw, 1
	.size	dft_graph_entry_all_wide, . - dft_graph_entry_all_wide

	.globl	dft_gexit_tmpl
	.hidden	dft_gexit_tmpl
	.globl	dft_gexit_tmpl_end
	.hidden	dft_gexit_tmpl_end
	.globl	dft_gexit_tmpl_fast
	.hidden	dft_gexit_tmpl_fast
	.type	dft_gexit_tmpl, @function
	.p2align 4
dft_gexit_tmpl:
	/* The region's copy reaches the library's code (dft_graph_exit). */
	.cfi_startproc
	jmp	*dft_gexit_tmpl_fast(%rip)
	.cfi_endproc
	.p2align 3
dft_gexit_tmpl_fast:
	.quad	0
dft_gexit_tmpl_end:
	.size	dft_gexit_tmpl, dft_gexit_tmpl_end - dft_gexit_tmpl

/*
 * dft_graph_exit - the graph shortcut's exit, reached from the thunk's
 * `jmp gexit` (through the region's dft_gexit_tmpl) as the traced function
 * returned: %rsp just above its return-address slot, its results in
 * rax:rdx, xmm0:xmm1. Returns to the real caller itself (`push; ret`: the
 * return stack buffer still has the caller's call on top), every register
 * as the function left it but rcx, rsi, rdi, r8-r11 (dead at a return).
 * One call and one return fewer per traced call than a `call gexit`
 * coming back to the thunk (docs/PERFORMANCE.md).
 *
 * The fast path is graph_fast.c's dft_graph_fast_return (which
 * dft_return_tramp still uses) in assembly, so that it needs no stack frame
 * and no register but the ones a return leaves dead: the top shadow entry
 * is this return's and a plain recorded function_graph frame, the thread
 * is outside any callback and read side (dft_self's first quadword), and
 * the exit event is a compact one (the time moved less than RING_TS_WRAP ns
 * and not backwards) that fits the page. Anything else answers slow before
 * any side effect, and dft_graph_return (trace.c) runs with the vector
 * results saved. The recursion guard is held from before the ring's nest
 * until after the shadow entry is read, as there: a signal handler tracing
 * meanwhile would push onto the entry being closed.
 *
 * The clock: TSC mode only, the ring's copy of the latch (CLOCK_NS); the
 * conversion is exact when the signed 64-bit product does not overflow
 * (imul's OF), a TSC before the base goes slow (clk_apply clamps it).
 */
/* Back to the caller (r11, into the return-address slot the function
 * left), or (ALL) to the thunk, which does that. */
.macro GRAPH_EXIT_RET all
	.if !\all
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	ret
	.cfi_adjust_cfa_offset -8	/* for what follows */
	.else
	ret
	.endif
.endm

/* The registers dft_graph_exit(_all) pushed, back; the CFA follows. */
.macro GRAPH_EXIT_POP all
	popq	%rax
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	.if \all
	.irp	r, rcx, rsi, rdi, r11
	popq	%\r
	.cfi_adjust_cfa_offset -8
	.endr
	.endif
.endm

/*
 * ALL (the preserving thunks' exit) keeps every register, so its fast
 * path makes do with the six it saves: the thread block in TLS, g in G,
 * the slot's address in TMP; the caller's address goes into the thunk's
 * slot and the depth is taken before the ring write (the failure path
 * gives it back), and the thread block is read again after it. Three
 * pushes and pops fewer than saving them all: 0.3 ns a call
 * (docs/PERFORMANCE.md).
 */
.macro GRAPH_EXIT all, slot, sfx, tls, g, tmp, off, cw
	.cfi_startproc
	.if \all
	.irp	r, r11, rdi, rsi, rcx
	pushq	%\r
	.cfi_adjust_cfa_offset 8
	.endr
	.else
	/* Reached by a jump: the caller's address is in the shadow entry. */
	.cfi_undefined rip
	.endif
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%rax			/* 0(%rsp): the results, rax then rdx */
	.cfi_adjust_cfa_offset 8
	movq	dft_tls_block(%rip), \tls	/* %fs:X@dtpoff(tls) = X */
	movq	%fs:fg_self@dtpoff(\tls), \g	/* g */
	testq	\g, \g
	jz	.Lgx_slow\sfx
	movl	FG_DEPTH(\g), %eax
	subl	$1, %eax		/* depth - 1 (borrow: empty) */
	jb	.Lgx_slow\sfx
	imulq	$SE_SIZE, %rax, %rdi
	leaq	FG_ENT(\g,%rdi), %rdi	/* rdi = e, the top entry */
	leaq	\slot(%rsp), \tmp		/* the slot */
	cmpq	\tmp, SE_SLOT(%rdi)
	jne	.Lgx_slow\sfx
	/* hooked, kind, fl and fl2 in one load (no exit owed: fl2's
	 * SE2_DEBT): the shortcut's entry stores them in one (the generic
	 * entry's byte stores cost a failed forward, rarely). */
	cmpl	$1 | TR_GRAPH_ASM << 8 | SE_RING_ASM << 16, SE_HOOKED(%rdi)
	jne	.Lgx_slow\sfx
	movq	%fs:ring_tls@dtpoff(\tls), %r11	/* r11 = b */
	testq	%r11, %r11
	jz	.Lgx_slow\sfx
	cmpq	$0, %fs:dft_self@dtpoff+THR_RECURSION(\tls)	/* no recursion, no read side */
	jne	.Lgx_slow\sfx
	/* Quadword stores, as the entry's: its quadword load forwards. */
	movq	$1, %fs:dft_self@dtpoff+THR_RECURSION(\tls)	/* recursion = 1 */
	.if \all
	movq	SE_ORIG(%rdi), %rax
	movq	%rax, \slot(%rsp)	/* for the thunk's ret */
	subl	$1, FG_DEPTH(\g)
	.endif
	RING_RESERVE \off, RING_COMPACT_HDR_ASM, RING_EV_EXIT_ASM, \cw, .Lgx_slow_rec\sfx, .Lgx_undo\sfx
	RING_COMMIT \cw, RING_COMPACT_HDR_ASM
	.if \all
	movq	dft_tls_block(%rip), %rax
	movq	$0, %fs:dft_self@dtpoff+THR_RECURSION(%rax)
	.else
	movq	SE_ORIG(%rdi), %r11
	subl	$1, FG_DEPTH(\g)
	movq	$0, %fs:dft_self@dtpoff+THR_RECURSION(\tls)
	.endif
	GRAPH_EXIT_POP \all
	GRAPH_EXIT_RET \all
	.cfi_adjust_cfa_offset 16 + 32 * \all	/* the pushes above, for the paths below */
.Lgx_undo\sfx:
	subl	$1, RB_NEST(%r11)
.Lgx_slow_rec\sfx:
	.if \all
	/* The ring write clobbered tls and g: the depth back. */
	movq	dft_tls_block(%rip), \tls
	movq	%fs:fg_self@dtpoff(\tls), \g
	addl	$1, FG_DEPTH(\g)
	.endif
	movq	$0, %fs:dft_self@dtpoff+THR_RECURSION(\tls)
.Lgx_slow\sfx:
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	.if \all
	subq	$ALL_FRAME, %rsp
	andq	$-64, %rsp
	SAVE_VEC_ALL dft_save_all_kind(%rip)
	.irp	n, 8, 9, 10		/* not pushed: below the vector area */
	movq	%r\n, (\n - 8) * 8(%rsp)
	.endr
	.else
	andq	$-16, %rsp		/* for the C call: see the top */
	subq	$128, %rsp
	SAVE_RETVEC 0
	.endif
	leaq	\slot+16(%rbp), %rdi	/* the traced function's %rsp after ret */
	leaq	8(%rbp), %rsi		/* its results: rax, rdx */
	call	dft_graph_return
	.if \all
	movq	%rax, \slot+8(%rbp)	/* for the thunk's ret */
	.irp	n, 8, 9, 10
	movq	(\n - 8) * 8(%rsp), %r\n
	.endr
	RESTORE_VEC_ALL dft_save_all_kind(%rip)
	.else
	movq	%rax, %r11
	RESTORE_RETVEC 0
	.endif
	leave
	.cfi_def_cfa %rsp, 24 + 32 * \all
	.cfi_restore %rbp
	GRAPH_EXIT_POP \all
	GRAPH_EXIT_RET \all
	.cfi_endproc
.endm

	.text
	.globl	dft_graph_exit
	.hidden	dft_graph_exit
	.type	dft_graph_exit, @function
	.p2align 4
dft_graph_exit:
	GRAPH_EXIT 0, 8, _p, %r10, %r9, %rsi, %r8, %rcx
	.size	dft_graph_exit, . - dft_graph_exit

/*
 * dft_graph_exit_all - dft_graph_exit for the preserving thunks: every
 * register comes back as the function left it, r11 too. The thunk pushed a
 * placeholder (push %rax) before its call: 0(%rsp) = thunk + 23, 8(%rsp) =
 * the slot that gets the real return address, for the thunk's `ret`. The
 * slow path keeps every vector and mask register.
 */
	.globl	dft_graph_exit_all
	.hidden	dft_graph_exit_all
	.type	dft_graph_exit_all, @function
	.p2align 4
dft_graph_exit_all:
	GRAPH_EXIT 1, 56, _a, %rcx, %rsi, %rdx, %rdi, %rcx
	.size	dft_graph_exit_all, . - dft_graph_exit_all

/*
 * dft_return_tramp - where a function hooked by the graph tracer returns.
 * Its return-address slot was replaced at entry (trace.c); the traced
 * function's `ret` lands here with %rsp = slot + 8 and its
 * return value in rax:rdx / xmm0:xmm1. dft_graph_return() records the exit
 * and gives back the original return address.
 */
	.text
	.globl	dft_return_tramp
	.hidden	dft_return_tramp
	.type	dft_return_tramp, @function
	.p2align 4
dft_return_tramp:
	.cfi_startproc
	.cfi_undefined rip
	/* The fast exit (graph_fast.c, general registers only): the return
	 * values in rax:rdx are all it must keep. 0: the slow path below. */
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp		/* for the C calls: see the top */
	pushq	%rax
	pushq	%rdx
	rdtsc
	shlq	$32, %rdx
	orq	%rax, %rdx
	movq	%rdx, %rsi		/* tsc */
	leaq	8(%rbp), %rdi		/* the traced function's %rsp after ret */
	call	dft_graph_fast_return
	testq	%rax, %rax
	jz	1f
	movq	%rax, %r11
	popq	%rdx
	popq	%rax
	leave
	.cfi_remember_state
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	jmp	*%r11
1:	.cfi_restore_state
	popq	%rdx
	popq	%rax
	subq	$144, %rsp
	movq	%rax, 0(%rsp)
	movq	%rdx, 8(%rsp)
	SAVE_RETVEC 16
	leaq	8(%rbp), %rdi		/* the traced function's %rsp after ret */
	movq	%rsp, %rsi		/* its return values */
	call	dft_graph_return
	movq	%rax, %r11
	movq	0(%rsp), %rax
	movq	8(%rsp), %rdx
	RESTORE_RETVEC 16
	leave
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	jmp	*%r11
	.cfi_endproc
	.size	dft_return_tramp, . - dft_return_tramp

/*
 * dft_return_tramp_all - dft_return_tramp for the functions that entered
 * through the preserving trampoline: every register comes back as the
 * function left it (see dft_caller_all_tmpl), r11 too, so the real return
 * address goes back on the stack for a `ret` instead of through a register.
 * Frame: the return's slot, the saved rbp, then (64-byte aligned) rax, rdx,
 * the other general registers and the vector area (ALL_FRAME, as the
 * preserving trampoline's; SAVE_VEC_ALL with dft_save_all_kind).
 */
	.text
	.globl	dft_return_tramp_all
	.hidden	dft_return_tramp_all
	.type	dft_return_tramp_all, @function
	.p2align 4
dft_return_tramp_all:
	.cfi_startproc
	.cfi_undefined rip
	subq	$8, %rsp		/* the real return address goes here */
	pushq	%rbp
	movq	%rsp, %rbp
	subq	$ALL_FRAME, %rsp
	andq	$-64, %rsp
	movq	%rax, 0(%rsp)		/* rax, rdx: the results dft_graph_return sees */
	movq	%rdx, 8(%rsp)
	movq	%rcx, 16(%rsp)
	movq	%rsi, 24(%rsp)
	movq	%rdi, 32(%rsp)
	movq	%r8, 40(%rsp)
	movq	%r9, 48(%rsp)
	movq	%r10, 56(%rsp)
	movq	%r11, 64(%rsp)
	SAVE_VEC_ALL dft_save_all_kind(%rip)
	leaq	16(%rbp), %rdi		/* the traced function's %rsp after ret */
	movq	%rsp, %rsi		/* its results */
	call	dft_graph_return
	movq	%rax, 8(%rbp)		/* where the final ret finds it */
	RESTORE_VEC_ALL dft_save_all_kind(%rip)
	movq	0(%rsp), %rax
	movq	8(%rsp), %rdx
	movq	16(%rsp), %rcx
	movq	24(%rsp), %rsi
	movq	32(%rsp), %rdi
	movq	40(%rsp), %r8
	movq	48(%rsp), %r9
	movq	56(%rsp), %r10
	movq	64(%rsp), %r11
	leave
	ret
	.cfi_endproc
	.size	dft_return_tramp_all, . - dft_return_tramp_all

/*
 * dft_thread_entry: the start routine the pthread_create wrapper gives a
 * new thread. dft_thread_prepare (interpose.c) sets the thread's signal
 * state up and returns the program's start routine (rax) and argument
 * (rdx); this jumps to it with the stack exactly as the C library left it,
 * so no frame of ours stays below the program's: the runtime can be
 * unloaded (detach) while such a thread runs on.
 */
	.globl	dft_thread_entry
	.hidden	dft_thread_entry
	.type	dft_thread_entry, @function
	.p2align 4
dft_thread_entry:
	.cfi_startproc
	subq	$8, %rsp		/* the call below needs rsp 16-aligned */
	.cfi_adjust_cfa_offset 8
	call	dft_thread_prepare
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	movq	%rdx, %rdi
	jmp	*%rax
	.cfi_endproc
	.size	dft_thread_entry, . - dft_thread_entry

/*
 * __fentry__ and mcount: what `call __fentry__` / `call mcount` reach before
 * the runtime has turned those calls into NOPs (constructors that run before
 * ours). They do nothing. Exported; they take precedence over glibc's
 * profiling versions for programs that load the runtime.
 */
	.globl	__fentry__
	.type	__fentry__, @function
	.globl	mcount
	.type	mcount, @function
	.globl	_mcount
	.type	_mcount, @function
	.p2align 4
__fentry__:
mcount:
_mcount:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	__fentry__, 1
	.size	mcount, 1
	.size	_mcount, 1

	.section .note.GNU-stack,"",@progbits


/*
 * dft_tls_set_block - store in dft_tls_block (arch.c) the thread pointer
 * offset of this object's static TLS block, through which the writers
 * above reach every thread-local as %fs:sym@dtpoff(block): dft_self's
 * offset less its place in the block. The same for every thread.
 */
	.text
	.globl	dft_tls_set_block
	.hidden	dft_tls_set_block
	.type	dft_tls_set_block, @function
	.p2align 4
dft_tls_set_block:
	.cfi_startproc
	movq	dft_self@gottpoff(%rip), %rax
	subq	$dft_self@dtpoff, %rax
	movq	%rax, dft_tls_block(%rip)
	ret
	.cfi_endproc
	.size	dft_tls_set_block, . - dft_tls_set_block
