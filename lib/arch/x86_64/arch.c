/* SPDX-License-Identifier: MIT */
/*
 * arch.c - x86-64 hooks of the patch engine: cross-thread sync and the
 * emulation of a patched instruction from the SIGTRAP handler.
 */
#include <cpuid.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "insn.h"
#include "regs.h"

/*
 * How a batch makes every thread of the process see the new code before it
 * fetches it again. SYNC_CORE is the user-space text_poke_sync(): an IPI to
 * every CPU running one of our threads, each of which serialises its core on
 * the way back to user mode. Threads not running will context switch, which
 * serialises too.
 */
enum { SYNC_MB_CORE, SYNC_MB, SYNC_MPROTECT };
static int sync_mode = -1; /* set once by arch_sync_init, then read-only */
static void *sync_page;	   /* for the mprotect fallback */

static int membarrier(int cmd, unsigned int flags)
{
	return (int)syscall(__NR_membarrier, cmd, flags, 0);
}

/*
 * Which vector registers' upper parts the full trampolines keep (tramp.S,
 * SAVE_VEC): ymm when the CPU has AVX and the kernel saves its state (XCR0
 * bits 1-2), so that C code ending in vzeroupper (glibc's AVX2 string
 * functions) leaves __m256 arguments and results alone. On AVX-512 CPUs
 * the default stays xmm only, with legacy-SSE moves that leave every upper
 * bit alone: glibc picks its EVEX variants there, which use ymm16-31 and no
 * vzeroupper, and restoring ymm with VEX would zero the zmm uppers
 * (__m512 arguments), while keeping those takes 512-bit moves on every
 * call, measured to make some processes' full routes 2x slower here
 * (docs/ARCHITECTURE.md). DYNFTRACE_VEC=avx512 asks for them (callbacks
 * built for AVX on a program passing vectors by value); =avx and =sse
 * force less. Written once before any trampoline exists (region_new copies
 * it into each region's templates; the graph paths read it).
 */
HIDDEN unsigned char dft_vec_kind;

static unsigned vec_detect(int *has512)
{
	unsigned a, b, c, d, lo, hi;
	*has512 = 0;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
		return VEC_SSE;
	__asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & 0x6) != 0x6)
		return VEC_SSE;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX512F)) {
		*has512 = (lo & 0xe6) == 0xe6;
		return VEC_SSE; /* see above */
	}
	return VEC_AVX;
}

unsigned arch_vec_kind(void)
{
	static int done;
	if (!done) {
		int has512;
		unsigned k = vec_detect(&has512);
		const char *v = getenv("DYNFTRACE_VEC");
		if (v && !strcmp(v, "sse"))
			k = VEC_SSE;
		else if (v && !strcmp(v, "avx") && (k == VEC_AVX || has512))
			k = VEC_AVX;
		else if (v && !strcmp(v, "avx512") && has512)
			k = VEC_AVX512;
		dft_vec_kind = (unsigned char)k;
		done = 1;
	}
	return dft_vec_kind;
}

int arch_sync_init(void)
{
	arch_vec_kind();
	if (sync_mode >= 0)
		return 0;
	int cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0) == 0 &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0) {
		sync_mode = SYNC_MB_CORE;
		return 0;
	}
	if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0) {
		/* On x86 the IPI's return to user mode (iret) serialises too. */
		sync_mode = SYNC_MB;
		return 0;
	}
	/* Old kernel: a TLB shootdown IPIs every CPU running this mm. */
	sync_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sync_page == MAP_FAILED)
		return -errno;
	sync_mode = SYNC_MPROTECT;
	dft_debug("membarrier unavailable: syncing through mprotect IPIs");
	return 0;
}

static void sync_mprotect(void)
{
	*(volatile char *)sync_page = 1; /* populate so the downgrade must flush */
	mprotect(sync_page, 4096, PROT_READ);
	mprotect(sync_page, 4096, PROT_READ | PROT_WRITE);
}

void arch_sync_core(void)
{
	__asm__ __volatile__("mfence" ::: "memory"); /* our stores before the IPIs */
	switch (sync_mode) {
	case SYNC_MB_CORE:
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0) == 0)
			break;
		/* fall through */
	case SYNC_MB:
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
			break;
		/* fall through */
	default:
		sync_mprotect();
	}
	__asm__ __volatile__("cpuid" ::"a"(0) : "rbx", "rcx", "rdx", "memory"); /* ourselves */
}

void arch_sync_memory(void)
{
	if (sync_mode == SYNC_MPROTECT || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)
		sync_mprotect();
}

uintptr_t arch_trap_addr(void *ucv)
{
	ucontext_t *uc = ucv;
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1; /* int3 is one byte */
}

void arch_set_ip(void *ucv, uintptr_t ip)
{
	ucontext_t *uc = ucv;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
}

/*
 * Run the instruction INSN (LEN bytes, being written at ADDR) on behalf of
 * the thread that hit the breakpoint at ADDR. Only the forms the engine
 * writes exist here: call/jmp rel32, ret, NOPs.
 */
void arch_emulate(void *ucv, uintptr_t addr, const uint8_t *insn, int len)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;

	switch (insn[0]) {
	case INSN_CALL: {
		/* The kernel put our signal frame below the red zone; the slot
		 * under the interrupted %rsp is free (a call was about to use it). */
		unsigned long *sp = (unsigned long *)g[REG_RSP] - 1;
		*sp = addr + INSN_SIZE;
		g[REG_RSP] = (greg_t)sp;
		g[REG_RIP] = (greg_t)insn_rel32_target(addr, insn);
		break;
	}
	case INSN_JMP:
		g[REG_RIP] = (greg_t)insn_rel32_target(addr, insn);
		break;
	case INSN_RET: {
		unsigned long *sp = (unsigned long *)g[REG_RSP];
		g[REG_RIP] = (greg_t)*sp;
		g[REG_RSP] = (greg_t)(sp + 1);
		break;
	}
	default: /* NOPs */
		g[REG_RIP] = (greg_t)(addr + (uintptr_t)len);
		break;
	}
}

/* Is INSN something the engine may write (checked before a batch runs)? */
int arch_insn_emulatable(const uint8_t *insn, int len)
{
	if (len < 1 || len > 8)
		return 0;
	switch (insn[0]) {
	case INSN_CALL:
	case INSN_JMP:
		return len == INSN_SIZE;
	case INSN_RET:
		return 1;
	default:
		return insn_is_nops(insn, len);
	}
}
