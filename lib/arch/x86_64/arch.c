/* SPDX-License-Identifier: MIT */
/*
 * arch.c - x86-64 backend of the arch interface (lib/core/arch.h): the
 * instructions the engine writes and recognises, cross-thread sync, the
 * emulation of a patched instruction from the SIGTRAP handler, stubs,
 * thunks, and the static key and static call transforms.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
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

/* What the preserving trampolines save of the vector state (tramp.S,
 * SAVE_VEC_ALL): 0 xmm0-15, 1 ymm0-15, 2 zmm0-31 and k0-7, as the OS
 * enables them in XCR0. Written before the first copy (patch_lock). */
HIDDEN uint8_t dft_save_all_kind;

size_t arch_save_all_tramp(uint8_t *out, size_t cap, void *centry)
{
	unsigned a, b, c, d, lo = 0x3, hi;
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE))
		__asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	uint8_t kind = (lo & 0xe6) == 0xe6 ? 2 : (lo & 0x6) == 0x6 ? 1 : 0;
	__atomic_store_n(&dft_save_all_kind, kind, __ATOMIC_RELEASE);
	size_t len = (size_t)(dft_caller_all_tmpl_end - dft_caller_all_tmpl);
	if (len > cap)
		return 0;
	uint64_t k = kind;
	memcpy(out, dft_caller_all_tmpl, len);
	memcpy(out + (dft_caller_all_tmpl_slot - dft_caller_all_tmpl), &centry, sizeof(centry));
	memcpy(out + (dft_caller_all_tmpl_kind - dft_caller_all_tmpl), &k, sizeof(k));
	return len;
}

unsigned arch_vec_kind(void)
{
	static int done;
	if (!done) {
		int has512;
		unsigned k = vec_detect(&has512);
		const char *v = dft_getenv("DYNFTRACE_VEC");
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

/* tramp.S reaches the runtime's thread-locals as %fs:sym@dtpoff(block),
 * block being the thread pointer offset of this object's TLS block: one
 * load of it instead of a GOT load per variable. Static TLS (the
 * initial-exec model), so the same for every thread; tramp.S's
 * dft_tls_set_block computes it. */
HIDDEN intptr_t dft_tls_block;
void dft_tls_set_block(void) HIDDEN;

int arch_sync_init(void)
{
	arch_vec_kind();
	dft_tls_set_block();
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

/* ---- site instructions -------------------------------------------------- */

const uint8_t arch_breakpoint[ARCH_BRK_LEN] = {INSN_INT3};

/* No instruction the engine writes fits one word: the breakpoint protocol
 * always (Intel SDM 3A 8.1.3, cross-modifying code). */
int arch_insn_swappable(uintptr_t addr, const uint8_t *old, const uint8_t *new, int len)
{
	(void)addr, (void)old, (void)new, (void)len;
	return 0;
}

void arch_code_written(uintptr_t addr, size_t len)
{
	(void)addr, (void)len; /* coherent instruction fetch */
}

/* Nothing goes before an x86-64 site. */
int arch_site_prologue(uintptr_t site, uintptr_t anchor, uintptr_t *at, uint8_t *old, uint8_t *new)
{
	(void)site, (void)anchor, (void)at, (void)old, (void)new;
	return 0;
}

void arch_fill_trap(void *p, size_t n)
{
	memset(p, INSN_INT3, n);
}

void arch_site_nop(uint8_t out[ARCH_SITE_SIZE])
{
	memcpy(out, insn_nop5, INSN_SIZE);
}

void arch_nop_fill(uint8_t *out, int len)
{
	memcpy(out, insn_nop5, INSN_SIZE);
	memset(out + INSN_SIZE, 0x90, (size_t)(len - INSN_SIZE));
}

int arch_site_reaches(uintptr_t site, uintptr_t target)
{
	return insn_rel32_ok(site, target);
}

void arch_site_call(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE])
{
	insn_make_rel32(INSN_CALL, site, target, out);
}

void arch_site_jump(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE])
{
	insn_make_rel32(INSN_JMP, site, target, out);
}

uintptr_t arch_site_branch_target(uintptr_t site, const uint8_t *insn, int *is_call)
{
	if (insn[0] != INSN_CALL && insn[0] != INSN_JMP)
		return 0;
	if (is_call)
		*is_call = insn[0] == INSN_CALL;
	return insn_rel32_target(site, insn);
}

/* ---- compiled forms ----------------------------------------------------- */

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

int arch_is_nops(const uint8_t *p, int n)
{
	return insn_is_nops(p, n);
}

int arch_entry_marker_len(const uint8_t *p)
{
	return memcmp(p, endbr64, sizeof(endbr64)) ? 0 : (int)sizeof(endbr64);
}

/*
 * gcc -fpatchable-function-entry: NOPs (five 90s, or clang's nopl);
 * -pg -mfentry: `call __fentry__` (e8), `call *__fentry__@GOTPCREL(%rip)`
 * (ff 15, 6 bytes) or its relaxed form `addr32 call` (67 e8).
 */
enum arch_site_form arch_site_compiled(const uint8_t *p, int len, uintptr_t at, uintptr_t *target)
{
	if (len == INSN_SIZE && !memcmp(p, insn_nop5, INSN_SIZE))
		return ARCH_SITE_CANONICAL;
	if (insn_is_nops(p, len))
		return ARCH_SITE_NOPS;
	if (len == 5 && p[0] == INSN_CALL) {
		*target = insn_rel32_target(at, p);
		return ARCH_SITE_CALL;
	}
	if (len == 6 && p[0] == 0x67 && p[1] == INSN_CALL) {
		*target = insn_rel32_target(at + 1, p + 1);
		return ARCH_SITE_CALL;
	}
	if (len == 6 && p[0] == 0xff && p[1] == 0x15) {
		int32_t d;
		memcpy(&d, p + 2, 4);
		*target = *(const uintptr_t *)(at + 6 + (intptr_t)d); /* the GOT slot */
		return ARCH_SITE_CALL_GOT;
	}
	return ARCH_SITE_UNKNOWN;
}

/* A PLT stub: `jmp *slot(%rip)`, optionally after endbr64 and a bnd
 * prefix. The caller made sure 16 bytes at TARGET are readable. */
uintptr_t arch_plt_got_slot(uintptr_t target)
{
	const uint8_t *p = (const uint8_t *)target;
	p += arch_entry_marker_len(p);
	if (p[0] == 0xf2)
		p++; /* bnd */
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	int32_t d;
	memcpy(&d, p + 2, 4);
	return (uintptr_t)(p + 6) + (intptr_t)d;
}

/* ---- trampoline regions ------------------------------------------------- */

void arch_stub_write(uint8_t *at, uint32_t idx, uintptr_t body)
{
	at[0] = 0x68; /* push imm32: the trampoline's C entry gets it */
	memcpy(at + 1, &idx, 4);
	insn_make_rel32(INSN_JMP, (uintptr_t)at + 5, body, at + 5);
	memset(at + 10, INSN_INT3, ARCH_STUB_SIZE - 10);
}

void arch_far_jump_write(uint8_t *at, uintptr_t target)
{
	static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
	memcpy(at, jmp_rip, sizeof(jmp_rip));
	memcpy(at + 6, &target, 8);
	at[14] = at[15] = INSN_INT3;
}

uintptr_t arch_far_jump_target(const uint8_t *at)
{
	uintptr_t t;
	memcpy(&t, at + 6, sizeof(t));
	return t;
}

/*
 * The preserving thunk, for relocated entries (tramp.S: dft_graph_entry_all,
 * dft_graph_exit_all): no register changes, so the id goes on the stack and
 * the exit's result into a slot the thunk pushed for its own `ret`:
 *   0  push $id
 *   5  call gentry          ; ZF clear: not traced (it pops the id either way)
 *  10  jnz 24
 *  12  call site+5          ; the hook: +17 = 10 + 7, as below
 *  17  push %rax            ; a slot for the real return address
 *  18  call gexit           ; returns to +23 with the slot filled
 *  23  ret
 *  24  jmp site+5
 *  29  int3 x3
 */
static void thunk_write_preserving(uint8_t *t, uint32_t id, uintptr_t site, uintptr_t gentry,
				   uintptr_t gexit)
{
	uintptr_t a = (uintptr_t)t;
	t[0] = 0x68; /* push $imm32 */
	memcpy(t + 1, &id, 4);
	insn_make_rel32(INSN_CALL, a + 5, gentry, t + 5);
	t[10] = 0x75; /* jnz 24 */
	t[11] = 24 - 12;
	insn_make_rel32(INSN_CALL, a + 12, site + INSN_SIZE, t + 12);
	t[17] = 0x50; /* push %rax */
	insn_make_rel32(INSN_CALL, a + 18, gexit, t + 18);
	t[23] = INSN_RET;
	insn_make_rel32(INSN_JMP, a + 24, site + INSN_SIZE, t + 24);
	memset(t + 29, INSN_INT3, 3);
	_Static_assert(ARCH_THUNK_HOOK == 17 - 10, "preserving thunk layout");
}

/*
 * The graph shortcut's thunk (tramp.S, dft_gentry_tmpl shows its use):
 *   0  mov $id, %r11d
 *   6  call gentry          ; ZF clear: not traced
 *  11  jnz 26
 *  13  call site+5          ; the function, past its site
 *  18  jmp gexit            ; the hook (+18 = 11 + 7): gexit returns to the caller
 *  23  int3 x 3
 *  26  jmp site+5           ; untraced: run the function as if never entered
 *  31  int3
 */
void arch_graph_thunk_write(uint8_t *t, uint32_t id, uintptr_t site, uintptr_t gentry,
			    uintptr_t gexit, int preserve)
{
	uintptr_t a = (uintptr_t)t;
	if (preserve) {
		thunk_write_preserving(t, id, site, gentry, gexit);
		return;
	}
	t[0] = 0x41; /* mov $id, %r11d */
	t[1] = 0xbb;
	memcpy(t + 2, &id, 4);
	insn_make_rel32(INSN_CALL, a + 6, gentry, t + 6);
	t[11] = 0x75; /* jnz 26 */
	t[12] = 26 - 13;
	insn_make_rel32(INSN_CALL, a + 13, site + INSN_SIZE, t + 13);
	insn_make_rel32(INSN_JMP, a + 18, gexit, t + 18);
	memset(t + 23, INSN_INT3, 3);
	insn_make_rel32(INSN_JMP, a + 26, site + INSN_SIZE, t + 26);
	t[31] = INSN_INT3;
	_Static_assert(ARCH_THUNK_SIZE == 32 && ARCH_THUNK_HOOK == 18 - 11, "thunk layout");
}

uintptr_t arch_graph_thunk_site(uintptr_t ret)
{
	const uint8_t *t = (const uint8_t *)ret - 11;
	if (t[11] == 0x75 && t[12] == 26 - 13 && t[26] == INSN_JMP)
		return insn_rel32_target((uintptr_t)t + 26, t + 26) - INSN_SIZE;
	/* The preserving thunk's `jmp site+5` is into a relocated entry's
	 * block, which holds the function's address before its site. */
	t = (const uint8_t *)ret - 10;
	if (t[0] != 0x68 || t[10] != 0x75 || t[11] != 24 - 12 || t[24] != INSN_JMP)
		return 0;
	uintptr_t ip, site = insn_rel32_target((uintptr_t)t + 24, t + 24) - INSN_SIZE;
	memcpy(&ip, (const void *)(site - (ARCH_BLOCK_SITE - ARCH_BLOCK_IP)), sizeof(ip));
	return ip;
}

/* ---- static keys -------------------------------------------------------- */

void arch_jump_label_insn(uintptr_t code, uintptr_t target, int jmp, uint8_t out[ARCH_SITE_SIZE])
{
	if (jmp)
		insn_make_rel32(INSN_JMP, code, target, out);
	else
		memcpy(out, insn_nop5, INSN_SIZE);
}

int arch_jump_label_state(uintptr_t code, uintptr_t target)
{
	const uint8_t *p = (const uint8_t *)code;
	if (!memcmp(p, insn_nop5, INSN_SIZE))
		return 0;
	if (p[0] == INSN_JMP && insn_rel32_target(code, p) == target)
		return 1;
	return -EFAULT;
}

/* ---- static calls ------------------------------------------------------- */

/* include/dynftrace/arch/x86_64/static_call.h lays the trampoline out:
 * 5 bytes patched (jmp func, or ret + int3s), int3s, then at +8 the far
 * path `jmp *far(%rip)` reading the key's far slot. */
#define SC_TRAMP_FAR_OFF 8
static const uint8_t insn_ret5[INSN_SIZE] = {INSN_RET, INSN_INT3, INSN_INT3, INSN_INT3, INSN_INT3};

void arch_static_call_tramp(uintptr_t tramp, uintptr_t func, uint8_t out[ARCH_SITE_SIZE])
{
	if (!func)
		memcpy(out, insn_ret5, INSN_SIZE);
	else if (insn_rel32_ok(tramp, func))
		insn_make_rel32(INSN_JMP, tramp, func, out);
	else
		insn_make_rel32(INSN_JMP, tramp, tramp + SC_TRAMP_FAR_OFF, out);
}

void arch_static_call_site(uintptr_t site, int tail, int cond, uintptr_t func, uintptr_t tramp,
			   uint8_t out[ARCH_SITE_SIZE])
{
	uint8_t op = tail ? INSN_JMP : INSN_CALL;
	if (!func && cond)
		memcpy(out, tail ? insn_ret5 : insn_nop5, INSN_SIZE);
	else if (func && insn_rel32_ok(site, func))
		insn_make_rel32(op, site, func, out);
	else
		insn_make_rel32(op, site, tramp, out);
}

int arch_static_call_tramp_valid(uintptr_t t, uintptr_t far)
{
	const uint8_t *p = (const uint8_t *)t;
	int32_t d;
	if (p[SC_TRAMP_FAR_OFF] != 0xff || p[SC_TRAMP_FAR_OFF + 1] != 0x25)
		return 0;
	memcpy(&d, p + SC_TRAMP_FAR_OFF + 2, 4);
	return t + SC_TRAMP_FAR_OFF + 6 + (intptr_t)d == far;
}

/* Byte by byte: the compiler's code between the marker and the call may
 * hold anything, and a false match must also land exactly on TRAMP. */
uintptr_t arch_static_call_find(uintptr_t from, uintptr_t to, uintptr_t tramp, int *tail)
{
	for (uintptr_t p = from; p + INSN_SIZE <= to; p++) {
		const uint8_t *b = (const uint8_t *)p;
		if ((b[0] == INSN_CALL || b[0] == INSN_JMP) && insn_rel32_target(p, b) == tramp) {
			*tail = b[0] == INSN_JMP;
			return p;
		}
	}
	return 0;
}
