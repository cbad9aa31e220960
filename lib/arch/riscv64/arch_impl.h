/* SPDX-License-Identifier: MIT */
/*
 * arch_impl.h - riscv64: the constants and inline operations of the arch
 * interface (lib/core/arch.h, which includes this file last), and the
 * trampoline templates of tramp.S.
 *
 * A function built with -fpatchable-function-entry=4 (RVC: four c.nop) or
 * =2 (two 4-byte NOPs) has 8 bytes of NOPs at its entry, the room for the
 * kernel's riscv ftrace sequence `auipc t0, hi; jalr t0, lo(t0)`. The
 * first word becomes `auipc t0, hi` once, when the object is found, aimed
 * at the object's trampoline region (arch_site_prologue: the site's
 * marker, arch_marker_before); the second word is the site: NOP, `jalr t0,
 * lo(t0)` (a target within +-2 KiB of what the auipc computes) or `jal t0,
 * off` (any target within +-1 MiB of the site). Only that aligned 32-bit
 * word ever changes on running code (see arch.c for the rule). The call
 * leaves the return into the function in t0 and ra untouched.
 */
#ifndef DYNFTRACE_ARCH_IMPL_H
#define DYNFTRACE_ARCH_IMPL_H
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "internal.h"
#include "regs.h"

#define ARCH_SITE_SIZE	   4  /* jal t0 / jalr t0 / nop */
#define ARCH_STUB_SIZE	   16 /* lui t1; addiw t1; j body; ebreak */
#define ARCH_FAR_JUMP_SIZE 24 /* auipc t1, 0; ld t1, 16(t1); jr t1; ebreak; .quad */
#define ARCH_THUNK_SIZE	   0  /* no graph shortcut thunks: the per-ops route */
#define ARCH_THUNK_HOOK	   0
/* The breakpoint is a whole 4-byte ebreak; SIGTRAP from it has this code. */
#define ARCH_BRK_LEN   4
#define ARCH_TRAP_CODE TRAP_BRKPT
/* How far a trampoline region may be from the code whose sites call it:
 * the site's auipc reaches +-2 GiB (less a margin for the region). Targets
 * other than the one the auipc names need the jal's +-1 MiB
 * (arch_site_reaches); generic code falls back to the common trampoline. */
#define ARCH_SITE_REACH ((uintptr_t)0x7fe00000)

/* The call target of the site word at IP (jal t0, or jalr t0 through the
 * auipc before it), 0 when it holds no call. */
static inline uintptr_t riscv_site_call_target(uintptr_t ip)
{
	uint32_t v = *(const volatile uint32_t *)ip;
	if ((v & 0xfffu) == 0x2efu) /* jal t0, off */
	{
		uint32_t d = ((v >> 31) & 1) << 20 | ((v >> 21) & 0x3ff) << 1 |
			     ((v >> 20) & 1) << 11 | ((v >> 12) & 0xff) << 12;
		return ip + (uintptr_t)(intptr_t)((int32_t)(d << 11) >> 11);
	}
	if ((v & 0xfffffu) == 0x282e7u) { /* jalr t0, lo(t0) */
		uint32_t a = *(const volatile uint32_t *)(ip - 4);
		if ((a & 0xfffu) != 0x297u) /* auipc t0 */
			return 0;
		return ip - 4 + (uintptr_t)(intptr_t)(int32_t)(a & 0xfffff000u) +
		       (uintptr_t)(intptr_t)((int32_t)v >> 20);
	}
	return 0;
}

/* Regions are tried 64 KiB from their object first (then 1 MiB out at a
 * time, as everywhere): a site's jal reaches +-1 MiB, so the per-ops stubs
 * and direct-call jumps of a region that close are in reach of every site
 * of an object up to ~800 KiB of code. */
#define ARCH_REGION_GAP ((uintptr_t)65536)
/* ... and an object takes a region of its own rather than share one out of
 * its sites' jal reach. */
#define ARCH_SITE_NEAR ((uintptr_t)0xf0000)

/* Does the site at IP call DEST now? */
#define ARCH_SITE_CALLS(ip, dest) (riscv_site_call_target(ip) == (dest))

/* gcc has no general-registers-only target attribute for riscv; nothing
 * needs one here: the light bodies go straight to the full ones, which
 * save the FP argument registers (tramp.S). */
#define ARCH_GPR_ONLY_ATTR

/* Argument N (0-7) of a traced call, from the trampoline's saved registers. */
#define ARCH_REGS_ARG(regs, n) ((n) >= 0 && (n) < 8 ? (regs)->x[(n)] : 0UL)

/* Integer argument N (0-7) for -A (args.c): a0-a7. */
#define ARCH_REGS_INT_ARG(regs, n) ARCH_REGS_ARG(regs, (int)(n))
/* Floating-point argument N (0-7): fa0-fa7 as fsd stored them (a float is
 * NaN-boxed: its bits are the low 4 bytes). */
#define ARCH_REGS_FPARG(regs, n) ((const void *)&(regs)->f[(n)])
/* A hooked function's results as dft_return_tramp(_all) saved them: a0
 * first, fa0 64 bytes on, in both. */
#define ARCH_RET_INT(retval)	 ((retval)[0])
#define ARCH_RET_FP(retval, all) ((void)(all), (const void *)((const char *)(retval) + 64))

/* Where the traced function's return address is while the callbacks run:
 * the trampoline's frame record, just below the function's entry sp (ra
 * is loaded from there on the way out). */
#define ARCH_REGS_RET_SLOT(regs) ((uintptr_t *)((regs)->sp - 8))
/* But the function gets it in ra and saves ra where its own prologue
 * chooses (often entry sp - 8 too, not always), and an unwinder reads it
 * there, by the CFI: graph.c unhooks for unwinders within the frame. */
#define ARCH_RET_IN_REG 1
#ifdef __clang__
/* The caller's sp in the function this expands in (graph.c): clang 14
 * cannot lower __builtin_dwarf_cfa for riscv (it crashes); s0 holds the
 * entry sp by the RISC-V frame pointer convention. */
#define ARCH_CALLER_SP() ((uintptr_t)__builtin_frame_address(0))
#endif

/* Through the preserving trampoline (a relocated entry's): it marks
 * regs->ret[0], which the other trampolines clear (ret is only written
 * at a return). */
#define ARCH_REGS_PRESERVE_ALL(regs) ((regs)->ret[0] == REGS_ALL_MAGIC)

/*
 * A relocated entry's block runs two instructions before its site and two
 * after it. The site's call (`jal t0`, the only form that reaches the
 * arena's trampoline from a block without an auipc before it) overwrites
 * t0, and no register is free at the entry of code built without sites
 * (gcc's -fipa-ra callers may keep a value in any register the function
 * does not write; riscv has no linker veneers to reserve one, as aarch64's
 * IP0 is), so the block keeps t0 on the stack, below the entry sp (the
 * psABI has no red zone: sp moves first, a signal frame lands below):
 *	addi sp, sp, -ENTRY_AREA; sd t0, ENTRY_T0(sp)	(arch_reloc_pre)
 *	site: NOP or jal t0, the preserving trampoline
 *	ld t0, ENTRY_T0(sp); addi sp, sp, ENTRY_AREA	(arch_reloc_post)
 *	the relocated instructions, the jump back (reloc.c)
 * The trampolines lay the frame record in the same area (its top 16
 * bytes: the entry sp - 16, ARCH_REGS_RET_SLOT as everywhere). A thread
 * between the pre's first instruction and the post's last has sp moved:
 * it cannot be put back at the entry (ARCH_RELOC_PRE_PURE 0).
 */
#define ARCH_RELOC_PRE	    8
#define ARCH_RELOC_POST	    8
#define ARCH_RELOC_PRE_PURE 0
static inline void arch_reloc_pre(uint8_t *out)
{
	uint32_t v[2] = {0xfe010113u, 0x00513023u}; /* addi sp, sp, -32; sd t0, 0(sp) */
	_Static_assert(ENTRY_AREA == 32 && ENTRY_T0 == 0, "the block's stack area");
	memcpy(out, v, sizeof(v));
}
static inline void arch_reloc_post(uint8_t *out)
{
	uint32_t v[2] = {0x00013283u, 0x02010113u}; /* ld t0, 0(sp); addi sp, sp, 32 */
	memcpy(out, v, sizeof(v));
}
/* The block's layout tramp.S reads (entries.c checks it): the arena's
 * preserving trampoline at site - 32, the function's ip at site - 16. */
#define ARCH_BLOCK_SITE 32
#define ARCH_BLOCK_IP	16

/* The marker before a site IP: the `auipc t0` written at the function's
 * entry. The function starts that much before its site. */
static inline int arch_marker_before(uintptr_t ip)
{
	uint32_t a;
	memcpy(&a, (const void *)(ip - 4), 4);
	return (a & 0xfffu) == 0x297u ? 4 : 0;
}

static inline uintptr_t arch_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("mv %0, tp" : "=r"(tp));
	return tp;
}

/* The time CSR (rdtime): the platform's real-time counter, readable in
 * user mode when the kernel enables it (Linux does; RISC-V privileged
 * spec, scounteren.TM). Not a cycle count: it ticks at the timebase
 * frequency. */
static inline uint64_t arch_cycles(void)
{
	uint64_t v;
	__asm__ __volatile__("rdtime %0" : "=r"(v)::"memory");
	return v;
}

/* The timebase frequency: no user-readable register holds it on RISC-V.
 * The device tree says it (/cpus/timebase-frequency, one big-endian
 * 32-bit cell; Linux reads the same); 0 when absent (ACPI systems, qemu
 * user mode), and the ring measures the rate against CLOCK_MONOTONIC as it
 * does the TSC's. Called once, when the clock is calibrated. */
static inline uint64_t arch_cycles_hz(void)
{
	unsigned char b[8];
	int fd = open("/proc/device-tree/cpus/timebase-frequency", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	if (n == 4)
		return (uint64_t)b[0] << 24 | (uint64_t)b[1] << 16 | (uint64_t)b[2] << 8 | b[3];
	if (n == 8)
		return (uint64_t)b[0] << 56 | (uint64_t)b[1] << 48 | (uint64_t)b[2] << 40 |
		       (uint64_t)b[3] << 32 | (uint64_t)b[4] << 24 | (uint64_t)b[5] << 16 |
		       (uint64_t)b[6] << 8 | b[7];
	return 0;
}

/* The time counter runs at one constant rate on every hart (the privileged
 * spec's mtime: "a constant frequency"), in every power state. */
static inline int arch_cycles_constant(void)
{
	return 1;
}

/* A spin-wait loop's hint: `pause` (Zihintpause), a FENCE hint that
 * older cores execute as a plain fence. */
static inline void arch_cpu_relax(void)
{
	__asm__ __volatile__(".4byte 0x0100000f" ::: "memory");
}

/* Atomic against a signal handler on the same thread: the compiler's
 * atomics (AMOs and LR/SC; relaxed, only the owner writes). */
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
	register long a7 __asm__("a7") = SYS_futex;
	register long a0 __asm__("a0") = (long)uaddr;
	register long a1 __asm__("a1") = FUTEX_WAKE_PRIVATE;
	register long a2 __asm__("a2") = 1;
	register long a3 __asm__("a3") = 0;
	register long a4 __asm__("a4") = 0;
	register long a5 __asm__("a5") = 0;
	__asm__ __volatile__("ecall"
			     : "+r"(a0)
			     : "r"(a7), "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5)
			     : "memory");
	return a0;
}

/* riscv64 fills a GOT slot with R_RISCV_64 (no GLOB_DAT) or, lazily,
 * R_RISCV_JUMP_SLOT. */
static inline enum arch_got_kind arch_got_reloc(uint32_t type)
{
	if (type == R_RISCV_64)
		return ARCH_GOT_DATA;
	if (type == R_RISCV_JUMP_SLOT)
		return ARCH_GOT_PLT;
	return ARCH_GOT_NONE;
}

/* Trampoline templates (tramp.S, declared in arch.h). The light bodies
 * and the graph shortcut of x86-64 have no riscv64 version: their templates
 * exist so that every region has the same layout, and the light ones go
 * straight to the full body (the behaviour they fall back to on x86-64
 * too). The preserving trampoline's: */
extern const char dft_caller_all_tmpl[] HIDDEN;
extern const char dft_caller_all_tmpl_end[] HIDDEN;
extern const char dft_caller_all_tmpl_slot[] HIDDEN;
#endif
