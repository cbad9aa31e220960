/* SPDX-License-Identifier: MIT */
/*
 * arch.c - aarch64 backend of the arch interface (lib/core/arch.h): the
 * instructions the engine writes and recognises, cross-thread sync, the
 * emulation of a patched instruction from the SIGTRAP handler, stubs, and
 * the static key and static call forms.
 *
 * What may change under running threads. The Arm ARM (DDI 0487, B2.2.5
 * "Concurrent modification and execution of instructions") allows one
 * thread to write an instruction while others execute it, with no
 * synchronisation beyond the usual cache maintenance, only when both the
 * old and the new instruction are one of B, BL, BRK, NOP, ISB, SVC, HVC,
 * SMC, written by a single store that is single-copy atomic (an aligned
 * 32-bit word). Every other thread then executes either the old or the new
 * instruction, never a mix. So every live change here is an aligned word
 * holding NOP, B or BL on both sides (arch_insn_swappable): a site NOP <->
 * BL, a static key NOP <-> B, a static call B <-> B / BL <-> BL / NOP. The
 * engine writes each with one 32-bit store, then cleans the data cache
 * and invalidates the instruction cache over it (__builtin___clear_cache:
 * DC CVAU, DSB ISH, IC IVAU, DSB ISH, ISB), then makes every thread of the
 * process run a context synchronisation event (membarrier SYNC_CORE, else
 * a plain expedited membarrier, whose IPIs return to user mode through an
 * exception return, which is one; B2.2.5 asks for the ISB on the executing
 * thread). A change outside that set would need the breakpoint protocol
 * (BRK first, emulated by the SIGTRAP handler); nothing the runtime writes
 * today needs it, but the engine and arch_emulate support it.
 *
 * The first NOP of each site becomes `mov x9, x30` once, before any thread
 * can run the object's code (arch_site_prologue): then the BL keeps the
 * function's return address in x9, as the kernel's arm64 ftrace does.
 */
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

enum { SYNC_MB_CORE, SYNC_MB, SYNC_MPROTECT };
static int sync_mode = -1; /* set once by arch_sync_init, then read-only */
static void *sync_page;

static int membarrier(int cmd, unsigned int flags)
{
	return (int)syscall(__NR_membarrier, cmd, flags, 0);
}

unsigned arch_vec_kind(void)
{
	return 0; /* q0-q7 always (tramp.S) */
}

size_t arch_save_all_tramp(uint8_t *out, size_t cap, void *centry)
{
	size_t len = (size_t)(dft_caller_all_tmpl_end - dft_caller_all_tmpl);
	if (len > cap)
		return 0;
	memcpy(out, dft_caller_all_tmpl, len);
	memcpy(out + (dft_caller_all_tmpl_slot - dft_caller_all_tmpl), &centry, sizeof(centry));
	return len;
}

/*
 * membarrier(SYNC_CORE) exists for arm64 since Linux 4.16 (and qemu-user
 * passes it to the host kernel, whose sync covers the emulating threads;
 * qemu itself retranslates code written to a page it translated). Without
 * it, PRIVATE_EXPEDITED: its IPI returns to user mode by an exception
 * return, a context synchronisation event on arm64. Without either, an
 * mprotect downgrade of a populated page: the TLB invalidation is
 * broadcast (TLBI IS) and every thread's next exception return
 * synchronises; no sleep is ever used.
 */
int arch_sync_init(void)
{
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
		sync_mode = SYNC_MB;
		return 0;
	}
	sync_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sync_page == MAP_FAILED)
		return -errno;
	sync_mode = SYNC_MPROTECT;
	dft_debug("membarrier unavailable: syncing through mprotect");
	return 0;
}

static void sync_mprotect(void)
{
	*(volatile char *)sync_page = 1;
	mprotect(sync_page, 4096, PROT_READ);
	mprotect(sync_page, 4096, PROT_READ | PROT_WRITE);
}

void arch_sync_core(void)
{
	__asm__ __volatile__("dsb ish" ::: "memory"); /* our stores before the IPIs */
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
	__asm__ __volatile__("isb" ::: "memory"); /* ourselves */
}

void arch_sync_memory(void)
{
	if (sync_mode == SYNC_MPROTECT || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)
		sync_mprotect();
}

void arch_code_written(uintptr_t addr, size_t len)
{
	__builtin___clear_cache((char *)addr, (char *)(addr + len));
}

uintptr_t arch_trap_addr(void *ucv)
{
	ucontext_t *uc = ucv;
	return (uintptr_t)uc->uc_mcontext.pc; /* BRK leaves pc on itself */
}

void arch_set_ip(void *ucv, uintptr_t ip)
{
	ucontext_t *uc = ucv;
	uc->uc_mcontext.pc = ip;
}

/* Run INSN (being written at ADDR) for the thread that met the BRK there:
 * the forms the engine writes (B, BL, NOP) and the site's prologue. */
void arch_emulate(void *ucv, uintptr_t addr, const uint8_t *insn, int len)
{
	ucontext_t *uc = ucv;
	uint32_t v = insn_get(insn);
	(void)len;
	if ((v & INSN_B_MASK) == INSN_BL) {
		uc->uc_mcontext.regs[30] = addr + 4;
		uc->uc_mcontext.pc = insn_b_target(addr, v);
	} else if ((v & INSN_B_MASK) == INSN_B) {
		uc->uc_mcontext.pc = insn_b_target(addr, v);
	} else if (v == INSN_MOV_X9LR) {
		uc->uc_mcontext.regs[9] = uc->uc_mcontext.regs[30];
		uc->uc_mcontext.pc = addr + 4;
	} else {
		uc->uc_mcontext.pc = addr + 4; /* NOP */
	}
}

int arch_insn_emulatable(const uint8_t *insn, int len)
{
	if (len != INSN_SIZE)
		return 0;
	uint32_t v = insn_get(insn);
	return insn_is_b(v) || v == INSN_NOP || v == INSN_MOV_X9LR;
}

/* B2.2.5's set, restricted to what the engine writes: one aligned word. */
static int swappable(uint32_t v)
{
	return insn_is_b(v) || v == INSN_NOP;
}

int arch_insn_swappable(uintptr_t addr, const uint8_t *old, const uint8_t *new, int len)
{
	return len == INSN_SIZE && !(addr & 3) && swappable(insn_get(old)) &&
	       swappable(insn_get(new));
}

/* ---- site instructions -------------------------------------------------- */

const uint8_t arch_breakpoint[ARCH_BRK_LEN] = {0xe0, 0x1b, 0x20, 0xd4}; /* INSN_BRK */

void arch_fill_trap(void *p, size_t n)
{
	uint8_t *b = p;
	for (size_t i = 0; i + 4 <= n; i += 4)
		insn_put(b + i, INSN_BRK);
}

void arch_site_nop(uint8_t out[ARCH_SITE_SIZE])
{
	insn_put(out, INSN_NOP);
}

void arch_nop_fill(uint8_t *out, int len)
{
	for (int i = 0; i + 4 <= len; i += 4)
		insn_put(out + i, INSN_NOP);
}

int arch_site_reaches(uintptr_t site, uintptr_t target)
{
	return insn_b_ok(site, target);
}

void arch_site_call(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE])
{
	insn_put(out, insn_b(INSN_BL, site, target));
}

void arch_site_jump(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE])
{
	insn_put(out, insn_b(INSN_B, site, target));
}

uintptr_t arch_site_branch_target(uintptr_t site, const uint8_t *insn, int *is_call)
{
	uint32_t v = insn_get(insn);
	if (!insn_is_b(v))
		return 0;
	if (is_call)
		*is_call = (v & INSN_B_MASK) == INSN_BL;
	return insn_b_target(site, v);
}

/* The instruction before the site: `mov x9, x30`, written over the
 * compiler's first NOP when the object is found. */
int arch_site_prologue(uintptr_t site, uintptr_t anchor, uintptr_t *at, uint8_t *old, uint8_t *new)
{
	(void)anchor;
	uint32_t v = insn_get((const void *)(site - 4));
	*at = site - 4;
	insn_put(old, v);
	insn_put(new, INSN_MOV_X9LR);
	if (v == INSN_MOV_X9LR)
		return 0;
	return v == INSN_NOP ? 4 : -1;
}

/* ---- compiled forms ----------------------------------------------------- */

int arch_is_nops(const uint8_t *p, int n)
{
	if (n <= 0 || (n & 3))
		return 0;
	for (int i = 0; i < n; i += 4)
		if (insn_get(p + i) != INSN_NOP)
			return 0;
	return 1;
}

int arch_entry_marker_len(const uint8_t *p)
{
	uint32_t v = insn_get(p);
	return v == INSN_BTI_C || v == INSN_BTI_JC ? 4 : 0;
}

/* -fpatchable-function-entry: the NOP (the site is its second one). No
 * -mfentry on aarch64: `-pg` calls _mcount after the prologue, which is
 * not a site here. */
enum arch_site_form arch_site_compiled(const uint8_t *p, int len, uintptr_t at, uintptr_t *target)
{
	(void)at, (void)target;
	if (len == INSN_SIZE && insn_get(p) == INSN_NOP)
		return ARCH_SITE_CANONICAL;
	return ARCH_SITE_UNKNOWN;
}

/* A PLT stub: adrp x16, PAGE; ldr x17, [x16, #OFF]; add x16, x16, #OFF;
 * br x17 (after a bti c, when built with it). */
uintptr_t arch_plt_got_slot(uintptr_t target)
{
	const uint8_t *p = (const uint8_t *)target;
	p += arch_entry_marker_len(p);
	uint32_t adrp = insn_get(p), ldr = insn_get(p + 4);
	if ((adrp & 0x9f00001fu) != 0x90000010u || (ldr & 0xffc003ffu) != 0xf9400211u)
		return 0;
	int64_t imm = (int64_t)((((adrp >> 5) & 0x7ffff) << 2) | ((adrp >> 29) & 3));
	imm = (imm << 43) >> 43; /* sign-extend 21 bits */
	uintptr_t page = ((uintptr_t)p & ~(uintptr_t)0xfff) + (uintptr_t)(imm << 12);
	return page + (((ldr >> 10) & 0xfff) << 3);
}

/* ---- trampoline regions ------------------------------------------------- */

/* movz/movk x10 hand IDX to the per-ops body (tramp.S: dft_ops_tmpl). */
void arch_stub_write(uint8_t *at, uint32_t idx, uintptr_t body)
{
	insn_put(at, insn_movz(10, idx & 0xffff));
	insn_put(at + 4, insn_movk16(10, idx >> 16));
	insn_put(at + 8, insn_b(INSN_B, (uintptr_t)at + 8, body));
	insn_put(at + 12, INSN_BRK);
}

void arch_far_jump_write(uint8_t *at, uintptr_t target)
{
	insn_put(at, INSN_LDR_X16_8);
	insn_put(at + 4, INSN_BR_X16);
	memcpy(at + 8, &target, 8);
}

uintptr_t arch_far_jump_target(const uint8_t *at)
{
	uintptr_t t;
	memcpy(&t, at + 8, sizeof(t));
	return t;
}

void arch_graph_thunk_write(uint8_t *t, uint32_t id, uintptr_t site, uintptr_t gentry,
			    uintptr_t gexit, int preserve)
{
	/* never called: ARCH_THUNK_SIZE is 0, so no site takes the shortcut */
	(void)t, (void)id, (void)site, (void)gentry, (void)gexit, (void)preserve;
	abort();
}

uintptr_t arch_graph_thunk_site(uintptr_t ret)
{
	(void)ret; /* no graph thunks here, so no thunk's call returns anywhere */
	return 0;
}

/* ---- static keys -------------------------------------------------------- */

void arch_jump_label_insn(uintptr_t code, uintptr_t target, int jmp, uint8_t out[ARCH_SITE_SIZE])
{
	insn_put(out, jmp ? insn_b(INSN_B, code, target) : INSN_NOP);
}

int arch_jump_label_state(uintptr_t code, uintptr_t target)
{
	uint32_t v = insn_get((const void *)code);
	if (v == INSN_NOP)
		return 0;
	if ((v & INSN_B_MASK) == INSN_B && insn_b_target(code, v) == target)
		return 1;
	return -EFAULT;
}

/* ---- static calls ------------------------------------------------------- */

/* include/dynftrace/arch/aarch64/static_call.h lays the trampoline out:
 * +0 the patched B (to the function, to +8 the far path, or to +4 for no
 * target), +4 ret, +8 adrp/ldr x16 of the key's far slot, +16 br x16.
 * Every form of the patched word is a B: B2.2.5 allows it live. */
#define SC_TRAMP_RET_OFF 4
#define SC_TRAMP_FAR_OFF 8

void arch_static_call_tramp(uintptr_t tramp, uintptr_t func, uint8_t out[ARCH_SITE_SIZE])
{
	uintptr_t to = !func			? tramp + SC_TRAMP_RET_OFF
		       : insn_b_ok(tramp, func) ? func
						: tramp + SC_TRAMP_FAR_OFF;
	insn_put(out, insn_b(INSN_B, tramp, to));
}

/* A site with no target (COND): a NOP for a BL; a tail B goes through the
 * trampoline, which returns (RET is not in B2.2.5's set). */
void arch_static_call_site(uintptr_t site, int tail, int cond, uintptr_t func, uintptr_t tramp,
			   uint8_t out[ARCH_SITE_SIZE])
{
	uint32_t op = tail ? INSN_B : INSN_BL;
	if (!func && cond && !tail)
		insn_put(out, INSN_NOP);
	else if (func && insn_b_ok(site, func))
		insn_put(out, insn_b(op, site, func));
	else
		insn_put(out, insn_b(op, site, tramp));
}

int arch_static_call_tramp_valid(uintptr_t t, uintptr_t far)
{
	const uint8_t *p = (const uint8_t *)t;
	uint32_t ret = insn_get(p + SC_TRAMP_RET_OFF), adrp = insn_get(p + SC_TRAMP_FAR_OFF),
		 ldr = insn_get(p + SC_TRAMP_FAR_OFF + 4), br = insn_get(p + SC_TRAMP_FAR_OFF + 8);
	if (ret != INSN_RET || (adrp & 0x9f00001fu) != 0x90000010u ||
	    (ldr & 0xffc003ffu) != 0xf9400210u || br != INSN_BR_X16)
		return 0;
	int64_t imm = (int64_t)((((adrp >> 5) & 0x7ffff) << 2) | ((adrp >> 29) & 3));
	imm = (imm << 43) >> 43;
	uintptr_t page = ((t + SC_TRAMP_FAR_OFF) & ~(uintptr_t)0xfff) + (uintptr_t)(imm << 12);
	return page + (((ldr >> 10) & 0xfff) << 3) == far;
}

uintptr_t arch_static_call_find(uintptr_t from, uintptr_t to, uintptr_t tramp, int *tail)
{
	for (uintptr_t p = (from + 3) & ~(uintptr_t)3; p + 4 <= to; p += 4) {
		uint32_t v = insn_get((const void *)p);
		if (insn_is_b(v) && insn_b_target(p, v) == tramp) {
			*tail = (v & INSN_B_MASK) == INSN_B;
			return p;
		}
	}
	return 0;
}
