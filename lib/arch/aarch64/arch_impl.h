/* SPDX-License-Identifier: MIT */
/*
 * arch_impl.h - aarch64: the constants and inline operations of the arch
 * interface (lib/core/arch.h, which includes this file last), and the
 * trampoline templates of tramp.S.
 *
 * A site is the second of the two NOPs -fpatchable-function-entry=2 leaves
 * at a function's entry: the first becomes `mov x9, x30` once, when the
 * object is found (the site's marker, arch_marker_before), and the second
 * switches between NOP and `bl trampoline`. Only that one aligned 32-bit
 * word ever changes on running code (see arch.c for the rule).
 */
#ifndef DYNFTRACE_ARCH_IMPL_H
#define DYNFTRACE_ARCH_IMPL_H
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "internal.h"
#include "regs.h"

#define ARCH_SITE_SIZE	   4  /* bl / nop */
#define ARCH_STUB_SIZE	   16 /* movz x10; movk x10; b body; brk */
#define ARCH_FAR_JUMP_SIZE 16 /* ldr x16, .+8; br x16; .quad target */
#define ARCH_THUNK_SIZE	   0  /* no graph shortcut thunks: the per-ops route */
#define ARCH_THUNK_HOOK	   0
/* The breakpoint is a whole instruction; SIGTRAP from it has this code. */
#define ARCH_BRK_LEN   4
#define ARCH_TRAP_CODE TRAP_BRKPT
/* How far a trampoline region may be from the code whose sites call it:
 * B/BL reach +-128 MiB (less a margin for the region itself). */
#define ARCH_SITE_REACH ((uintptr_t)0x7ff0000)

/* Does the site at IP call DEST now (a BL naming it)? */
#define ARCH_SITE_CALLS(ip, dest)                                                                  \
	({                                                                                         \
		uint32_t v_ = *(const volatile uint32_t *)(ip);                                    \
		int32_t imm_ = (int32_t)(v_ << 6) >> 6;                                            \
		(v_ & 0xfc000000u) == 0x94000000u &&                                               \
		    (ip) + (uintptr_t)((intptr_t)imm_ * 4) == (dest);                              \
	})

/* Argument N (0-7) of a traced call, from the trampoline's saved registers. */
#define ARCH_REGS_ARG(regs, n) ((n) >= 0 && (n) < 8 ? (regs)->x[(n)] : 0UL)

/* Where the traced function's return address is while the callbacks run:
 * the trampoline's frame record, just below the function's entry sp (its
 * return into the caller is loaded from there into x30 on the way out). */
#define ARCH_REGS_RET_SLOT(regs) ((uintptr_t *)((regs)->sp - 8))
/* But the function gets it in x30 and saves x30 where its own prologue
 * chooses (gcc: the frame record at the bottom of its frame, not at entry
 * sp - 8), and an unwinder reads it there, by the CFI: graph.c unhooks
 * for unwinders within the frame, not at the slot. */
#define ARCH_RET_IN_REG 1

/* Integer argument N (0-7) at a function's entry: x0-x7. */
#define ARCH_REGS_INT_ARG(regs, n) ARCH_REGS_ARG(regs, (int)(n))
/* Floating-point argument N (0-7): the low 16 bytes of qN (d0-d7). */
#define ARCH_REGS_FPARG(regs, n) ((const void *)(regs)->v[(n)])
/* A hooked function's results as dft_return_tramp(_all) saved them: x0
 * first, q0 64 bytes on, in both. */
#define ARCH_RET_INT(retval)	 ((retval)[0])
#define ARCH_RET_FP(retval, all) ((void)(all), (const void *)((const char *)(retval) + 64))

/* Through the preserving trampoline (a relocated entry's): it marks the
 * regs' pad word, which the other trampolines clear. */
#define ARCH_REGS_PRESERVE_ALL(regs) ((regs)->pad == REGS_ALL_MAGIC)

/* A relocated entry's block runs one instruction before its site:
 * `mov x16, x30`, which keeps the function's return address from the
 * site's BL as the compiler sites' `mov x9, x30` does, in a register free
 * at any function's entry (x16, IP0: see reloc.c) rather than in x9, which
 * a caller built with -fipa-ra may expect back. The entry jumps to it. */
#define ARCH_RELOC_PRE 4
static inline void arch_reloc_pre(uint8_t *out)
{
	uint32_t v = 0xaa1e03f0u; /* mov x16, x30 (orr x16, xzr, x30) */
	memcpy(out, &v, 4);
}
/* The block's layout tramp.S reads (entries.c checks it): the arena's
 * preserving trampoline at site - 32, the function's ip at site - 16. */
#define ARCH_BLOCK_SITE 32
#define ARCH_BLOCK_IP	16

/* The marker before a site IP: `mov x9, x30`, after a `bti c` if the
 * function has one. The function starts that much before its site. */
static inline int arch_marker_before(uintptr_t ip)
{
	uint32_t a, b;
	memcpy(&a, (const void *)(ip - 4), 4);
	if (a != 0xaa1e03e9u)
		return 0;
	memcpy(&b, (const void *)(ip - 8), 4);
	return (b == 0xd503245fu || b == 0xd50324dfu) ? 8 : 4;
}

static inline uintptr_t arch_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}

/* The generic timer's virtual count. ISB first: the read is otherwise not
 * ordered with the instructions before it (ARM ARM D12.1.2). */
static inline uint64_t arch_cycles(void)
{
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
}

/* The generic timer's frequency, as the firmware programmed CNTFRQ_EL0
 * (readable at EL0; the kernel checks it is set). */
static inline uint64_t arch_cycles_hz(void)
{
	uint64_t f;
	__asm__("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
}

/* The generic timer ticks at one system-wide constant rate (CNTFRQ_EL0),
 * in every power state: the architecture requires it (ARM ARM D12.1). */
static inline int arch_cycles_constant(void)
{
	return 1;
}

/* A spin-wait loop's hint to the CPU. */
static inline void arch_cpu_relax(void)
{
	__asm__ __volatile__("yield" ::: "memory");
}

/* Atomic against a signal handler on the same thread: the compiler's
 * atomics (LSE when the CPU has them, else LL/SC; the relaxed order is
 * enough, only the owner writes). */
static inline int arch_local_cmpxchg(uint64_t *p, uint64_t old, uint64_t new)
{
	return __atomic_compare_exchange_n(p, &old, new, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
static inline void arch_local_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static inline long arch_futex_wake_raw(uint32_t *uaddr)
{
	register long x8 __asm__("x8") = SYS_futex;
	register long x0 __asm__("x0") = (long)uaddr;
	register long x1 __asm__("x1") = FUTEX_WAKE_PRIVATE;
	register long x2 __asm__("x2") = 1;
	register long x3 __asm__("x3") = 0;
	register long x4 __asm__("x4") = 0;
	register long x5 __asm__("x5") = 0;
	__asm__ __volatile__("svc #0"
			     : "+r"(x0)
			     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			     : "memory");
	return x0;
}

static inline enum arch_got_kind arch_got_reloc(uint32_t type)
{
	if (type == R_AARCH64_GLOB_DAT)
		return ARCH_GOT_DATA;
	if (type == R_AARCH64_JUMP_SLOT)
		return ARCH_GOT_PLT;
	return ARCH_GOT_NONE;
}

/* Trampoline templates (tramp.S, declared in arch.h). The light bodies
 * and the graph shortcut of x86-64 have no aarch64 version: their templates
 * exist so that every region has the same layout, and the light ones go
 * straight to the full body (the behaviour they fall back to on x86-64
 * too). The preserving trampoline's: */
extern const char dft_caller_all_tmpl[] HIDDEN;
extern const char dft_caller_all_tmpl_end[] HIDDEN;
extern const char dft_caller_all_tmpl_slot[] HIDDEN;
#endif
