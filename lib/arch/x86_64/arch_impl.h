/* SPDX-License-Identifier: MIT */
/*
 * arch_impl.h - x86-64: the constants and inline operations of the arch
 * interface (lib/core/arch.h, which includes this file last), and the
 * trampoline templates of tramp.S.
 */
#ifndef DYNFTRACE_ARCH_IMPL_H
#define DYNFTRACE_ARCH_IMPL_H
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "internal.h"
#include "regs.h"

#define ARCH_SITE_SIZE	   5  /* call/jmp rel32, nop5 */
#define ARCH_STUB_SIZE	   16 /* push imm32; jmp rel32 */
#define ARCH_FAR_JUMP_SIZE 16 /* jmp *0(%rip); .quad target */
#define ARCH_THUNK_SIZE	   32 /* see arch_graph_thunk_write */
#define ARCH_THUNK_HOOK	   7
#define ARCH_BRK_LEN	   1			   /* int3 */
#define ARCH_TRAP_CODE	   SI_KERNEL		   /* what int3's SIGTRAP carries */
#define ARCH_SITE_REACH	   ((uintptr_t)0x7fff0000) /* rel32 */

/* Does the site at IP call DEST now (a `call rel32` naming it; any other
 * bytes, a breakpoint of a batch included, say no)? A macro: the light
 * per-ops entry may neither call nor inline a function built for every
 * register. */
#define ARCH_SITE_CALLS(ip, dest)                                                                  \
	({                                                                                         \
		int32_t rel_;                                                                      \
		__builtin_memcpy(&rel_, (const void *)((ip) + 1), sizeof(rel_));                   \
		*(const volatile uint8_t *)(ip) == 0xe8 &&                                         \
		    (ip) + 5 + (uintptr_t)(intptr_t)rel_ == (dest);                                \
	})

/* Argument N (0-5) of a traced call, from the trampoline's saved registers;
 * 0 beyond. A macro, for the same reason. */
#define ARCH_REGS_ARG(regs, n)                                                                     \
	((n) == 0   ? (regs)->rdi                                                                  \
	 : (n) == 1 ? (regs)->rsi                                                                  \
	 : (n) == 2 ? (regs)->rdx                                                                  \
	 : (n) == 3 ? (regs)->rcx                                                                  \
	 : (n) == 4 ? (regs)->r8                                                                   \
	 : (n) == 5 ? (regs)->r9                                                                   \
		    : 0UL)

/* Where the traced function's return address is, at its entry. */
#define ARCH_REGS_RET_SLOT(regs) ((uintptr_t *)(regs)->sp)
/* The call pushed it there, and an unwinder reads it there: a hooked
 * frame is unhooked at its slot (graph.c). */
#define ARCH_RET_IN_REG 0

/* Integer argument N (0-7) at a function's entry: the registers, then
 * the stack above the return address (as the full bodies leave regs->sp). */
#define ARCH_REGS_INT_ARG(regs, n)                                                                 \
	((n) < 6 ? ARCH_REGS_ARG(regs, n) : ((const unsigned long *)(regs)->sp)[(n)-5])

/* Floating-point argument N (0-7): the low 16 bytes of xmmN as the full
 * trampoline bodies save them (the light bodies save none: their ops
 * never ask). */
#define ARCH_REGS_FPARG(regs, n) ((const void *)(regs)->xmm[(n)])
/* A hooked function's results as the graph tracer's return trampolines
 * saved them (dft_graph_return's RETVAL): rax first; xmm0 after rax and rdx
 * (dft_return_tramp), or in the vector area (dft_return_tramp_all: ALL). */
#define ARCH_RET_INT(retval)	 ((retval)[0])
#define ARCH_RET_FP(retval, all) ((const void *)((const char *)(retval) + ((all) ? ALL_XSAVE : 16)))

/* Length of the landing marker (endbr64) that ends right at a site IP, 0 if
 * none: the function starts that much before its site. */
static inline int arch_marker_before(uintptr_t ip)
{
	static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	return memcmp((const void *)(ip - 4), endbr64, 4) ? 0 : 4;
}

/* The thread pointer (initial-exec TLS offsets are relative to it). */
static inline uintptr_t arch_thread_pointer(void)
{
	uintptr_t tp;
	__asm__("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* The cycle counter the ring's clock scales (the TSC). */
static inline uint64_t arch_cycles(void)
{
	return __builtin_ia32_rdtsc();
}

/* The counter's nominal rate in Hz, 0 when the counter does not say: the
 * clock then measures it (the TSC's: calibrated against the vDSO). */
static inline uint64_t arch_cycles_hz(void)
{
	return 0;
}

/* The TSC ticks at one rate in every P- and C-state (the kernel's flags). */
static inline int arch_cycles_constant(void)
{
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[16384];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *flags = strstr(buf, "\nflags");
	if (!flags)
		return 0;
	char *eol = strchr(flags + 1, '\n');
	if (eol)
		*eol = 0;
	return strstr(flags, " constant_tsc") && strstr(flags, " nonstop_tsc");
}

/* A spin-wait loop's hint to the CPU. */
static inline void arch_cpu_relax(void)
{
	__builtin_ia32_pause();
}

/* One instruction each, no lock prefix: atomic against a signal handler on
 * the same thread, which is all a buffer's owner needs (its consumer only
 * reads). */
static inline int arch_local_cmpxchg(uint64_t *p, uint64_t old, uint64_t new)
{
	uint64_t prev;
	__asm__ __volatile__("cmpxchgq %2, %1"
			     : "=a"(prev), "+m"(*p)
			     : "r"(new), "0"(old)
			     : "memory", "cc");
	return prev == old;
}
static inline void arch_local_add(uint64_t *p, uint64_t v)
{
	__asm__ __volatile__("addq %1, %0" : "+m"(*p) : "r"(v) : "memory", "cc");
}

/* futex wake without libc (the graph fast path may not call out). */
static inline long arch_futex_wake_raw(uint32_t *uaddr)
{
	long ret;
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = 0;
	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "0"((long)SYS_futex), "D"(uaddr), "S"((long)FUTEX_WAKE_PRIVATE),
			       "d"(1L), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}

/* The GOT slots of a dynamic relocation type: R_X86_64_GLOB_DAT (bound at
 * load: -fno-plt calls, address taken), R_X86_64_JUMP_SLOT (PLT calls; lazy
 * unless -z now). */
static inline enum arch_got_kind arch_got_reloc(uint32_t type)
{
	if (type == R_X86_64_GLOB_DAT)
		return ARCH_GOT_DATA;
	if (type == R_X86_64_JUMP_SLOT)
		return ARCH_GOT_PLT;
	return ARCH_GOT_NONE;
}

/* The preserving trampoline's template (tramp.S; the others: arch.h). */
extern const char dft_caller_all_tmpl[] HIDDEN;
extern const char dft_caller_all_tmpl_end[] HIDDEN;
extern const char dft_caller_all_tmpl_slot[] HIDDEN;
extern const char dft_caller_all_tmpl_kind[] HIDDEN;
extern uint8_t dft_save_all_kind HIDDEN;

/* Did the preserving trampoline (arch_save_all_tramp) make REGS? */
#define ARCH_REGS_PRESERVE_ALL(regs) ((regs)->ret[0] == REGS_ALL_MAGIC)
#endif
