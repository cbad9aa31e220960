/* SPDX-License-Identifier: MIT */
/*
 * arch.c - riscv64 backend of the arch interface (lib/core/arch.h): the
 * instructions the engine writes and recognises, cross-thread sync, the
 * emulation of a patched instruction from the SIGTRAP handler, stubs, and
 * the static key and static call forms.
 *
 * The site. Linux's riscv ftrace calls its trampoline with `auipc t0, hi;
 * jalr t0, lo(t0)` at the function's entry: the return address goes to
 * t0, so ra (the function's own return address) is kept, and the pair
 * reaches +-2 GiB. CALL_OPS on riscv (the patch the design follows: an
 * 8-byte ops literal before the entry, functions aligned to 8, loaded by
 * the common trampoline from t0 - 16) keeps that pair. Here too: the
 * compiler leaves 8 bytes of NOPs at the entry (four c.nop, or two NOPs
 * without RVC); the first word becomes `auipc t0, hi` and the second is
 * the site.
 *
 * What may change under running harts. Two rules of the ISA:
 * - Instruction fetch is not coherent with stores: "RISC-V does not
 *   guarantee that stores to instruction memory will be made visible to
 *   instruction fetches on a RISC-V hart until that hart executes a
 *   FENCE.I instruction" (unprivileged spec, "Zifencei"), and FENCE.I acts
 *   on its own hart only. Linux does it on every hart of the process for
 *   riscv_flush_icache(start, end, 0) (what arch_code_written calls);
 *   membarrier SYNC_CORE (riscv since Linux 6.9) is then the barrier every
 *   thread passes, as on the other architectures.
 * - Which stores a concurrently executing hart sees whole: a naturally
 *   aligned instruction fetch of up to 32 bits is atomic (the Ziccif
 *   extension of the RVA22/RVA23 profiles, what Linux's riscv ftrace has
 *   relied on since it stopped patching under stop_machine). A hart runs
 *   either the old or the new aligned word, never a mix.
 * An 8-byte auipc+jalr pair is two fetches. Rewriting the auipc is never
 * safe: a thread may have run the old auipc and be preempted (or in a
 * signal handler) before the jalr for any length of time, then run the new
 * jalr with the old high part; no sync drains that window. So, as recent
 * kernels do, the auipc is written once, before the object's code can run
 * (arch_site_prologue), aimed at the object's trampoline region (the
 * common trampoline, or its CALL_OPS copy for a site with a literal), and
 * only the second word changes afterwards, one aligned 32-bit store each:
 * NOP, `jalr t0, lo(t0)` (within +-2 KiB of the auipc's value) or `jal t0,
 * off` (a target within +-1 MiB of the site: per-ops stubs and direct
 * calls, when the region is that close). Static keys (NOP <-> j) and
 * static call trampolines (j <-> j) change one aligned word too. So a
 * batch is one store per site, riscv_flush_icache over it, and one
 * membarrier (arch_insn_swappable). Functions must be 4-byte aligned
 * (-falign-functions=4 with RVC; gcc does not promise it for every
 * function, hence the check): a site on a 2-byte boundary is refused.
 * The breakpoint protocol (ebreak, emulated by the SIGTRAP handler) stays
 * for any other change; nothing the runtime writes needs it today.
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

#ifndef __NR_riscv_flush_icache
#define __NR_riscv_flush_icache (244 + 15)
#endif

enum { SYNC_MB_CORE, SYNC_MB, SYNC_MPROTECT };
static int sync_mode = -1; /* set once by arch_sync_init, then read-only */
static void *sync_page;

static int membarrier(int cmd, unsigned int flags)
{
	return (int)syscall(__NR_membarrier, cmd, flags, 0);
}

unsigned arch_vec_kind(void)
{
	return 0; /* fa0-fa7 always (tramp.S); the V registers are not kept */
}

/* tramp.S: dft_caller_all_tmpl, entered from a relocated entry's block
 * (arch_impl.h: arch_reloc_pre says what the block keeps where). */
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
 * membarrier SYNC_CORE exists for riscv since Linux 6.9; before it,
 * PRIVATE_EXPEDITED (Linux 4.14) is the barrier every running thread
 * passes, and instruction fetch is made coherent by riscv_flush_icache,
 * which every write is followed by (arch_code_written). Without either
 * membarrier, an mprotect downgrade of a populated page (its TLB shootdown
 * interrupts every hart running the process). qemu-user passes membarrier
 * to the host kernel and retranslates code written to a page it translated.
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
	__asm__ __volatile__("fence rw, rw" ::: "memory"); /* our stores before the IPIs */
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
	__asm__ __volatile__("fence.i" ::: "memory"); /* ourselves */
}

void arch_sync_memory(void)
{
	if (sync_mode == SYNC_MPROTECT || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)
		sync_mprotect();
}

/* FENCE.I on every hart that runs the process (flags 0: not only this
 * thread), now or at its next switch in: Linux's riscv_flush_icache. */
void arch_code_written(uintptr_t addr, size_t len)
{
	__asm__ __volatile__("fence w, w" ::: "memory");
	syscall(__NR_riscv_flush_icache, addr, addr + len, 0UL);
	__asm__ __volatile__("fence.i" ::: "memory");
}

uintptr_t arch_trap_addr(void *ucv)
{
	ucontext_t *uc = ucv;
	return (uintptr_t)uc->uc_mcontext.__gregs[REG_PC]; /* sepc: the ebreak itself */
}

void arch_set_ip(void *ucv, uintptr_t ip)
{
	ucontext_t *uc = ucv;
	uc->uc_mcontext.__gregs[REG_PC] = ip;
}

/* Run INSN (being written at ADDR) for the thread that met the ebreak
 * there: the forms the engine writes (jal, jalr through t0, NOP) and the
 * site's auipc. */
void arch_emulate(void *ucv, uintptr_t addr, const uint8_t *insn, int len)
{
	ucontext_t *uc = ucv;
	unsigned long *g = uc->uc_mcontext.__gregs;
	uint32_t v = insn_get(insn);
	(void)len;
	if (insn_is_jal(v)) {
		if (insn_rd(v))
			g[insn_rd(v)] = addr + 4;
		g[REG_PC] = insn_jal_target(addr, v);
	} else if (insn_is_jalr(v, RV_T0)) {
		uintptr_t to = (g[RV_T0] + (uintptr_t)(intptr_t)insn_i_imm(v)) & ~(uintptr_t)1;
		if (insn_rd(v))
			g[insn_rd(v)] = addr + 4;
		g[REG_PC] = to;
	} else if (insn_is_auipc(v, RV_T0)) {
		g[RV_T0] = insn_auipc_value(addr, v);
		g[REG_PC] = addr + 4;
	} else {
		g[REG_PC] = addr + 4; /* NOP */
	}
}

static int is_jump(uint32_t v)
{
	return insn_is_jal(v) || insn_is_jalr(v, RV_T0);
}

int arch_insn_emulatable(const uint8_t *insn, int len)
{
	if (len != INSN_SIZE)
		return 0;
	uint32_t v = insn_get(insn);
	return is_jump(v) || v == INSN_NOP || insn_is_auipc(v, RV_T0);
}

/* Ziccif: an aligned word is fetched whole. Restricted to the forms the
 * engine writes after the auipc: NOP, jal, jalr through t0. */
int arch_insn_swappable(uintptr_t addr, const uint8_t *old, const uint8_t *new, int len)
{
	uint32_t o = insn_get(old), n = insn_get(new);
	return len == INSN_SIZE && !(addr & 3) && (is_jump(o) || o == INSN_NOP) &&
	       (is_jump(n) || n == INSN_NOP);
}

/* ---- site instructions -------------------------------------------------- */

const uint8_t arch_breakpoint[ARCH_BRK_LEN] = {0x73, 0x00, 0x10, 0x00}; /* INSN_EBREAK */

void arch_fill_trap(void *p, size_t n)
{
	uint8_t *b = p;
	for (size_t i = 0; i + 4 <= n; i += 4)
		insn_put(b + i, INSN_EBREAK);
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

/* The value the site's auipc leaves in t0, 0 without one. */
static uintptr_t site_base(uintptr_t site)
{
	uint32_t a = insn_get((const void *)(site - 4));
	return insn_is_auipc(a, RV_T0) ? insn_auipc_value(site - 4, a) : 0;
}

static int site_window(uintptr_t site, uintptr_t target)
{
	uintptr_t base = site_base(site);
	return base && insn_lo12_ok(base, target);
}

int arch_site_reaches(uintptr_t site, uintptr_t target)
{
	return site_window(site, target) || insn_jal_ok(site, target);
}

static void site_branch(uintptr_t site, uintptr_t target, int rd, uint8_t out[ARCH_SITE_SIZE])
{
	if (site_window(site, target))
		insn_put(out, insn_jalr(rd, RV_T0, (int32_t)(target - site_base(site))));
	else
		insn_put(out, insn_jal(rd, site, target));
}

void arch_site_call(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE])
{
	site_branch(site, target, RV_T0, out);
}

void arch_site_jump(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE])
{
	site_branch(site, target, RV_ZERO, out);
}

uintptr_t arch_site_branch_target(uintptr_t site, const uint8_t *insn, int *is_call)
{
	uint32_t v = insn_get(insn);
	uintptr_t to;
	if (insn_is_jal(v)) {
		to = insn_jal_target(site, v);
	} else if (insn_is_jalr(v, RV_T0)) {
		uintptr_t base = site_base(site);
		if (!base)
			return 0;
		to = (base + (uintptr_t)(intptr_t)insn_i_imm(v)) & ~(uintptr_t)1;
	} else {
		return 0;
	}
	if (is_call)
		*is_call = insn_rd(v) != RV_ZERO;
	return to;
}

/* The word before the site: `auipc t0, hi` aimed at ANCHOR, written over
 * the compiler's NOPs when the object is found and never again (see the
 * top of this file). A site off a 4-byte boundary cannot be patched with
 * one atomic store: refused. */
int arch_site_prologue(uintptr_t site, uintptr_t anchor, uintptr_t *at, uint8_t *old, uint8_t *new)
{
	if (site & 3)
		return -1;
	uint32_t v = insn_get((const void *)(site - 4));
	intptr_t d = (intptr_t)(anchor - (site - 4));
	uint32_t hi = (uint32_t)((d + 0x800) >> 12);
	*at = site - 4;
	insn_put(old, v);
	insn_put(new, insn_auipc(RV_T0, hi));
	if (!anchor)
		return 0; /* no region: the site stays disabled */
	if (insn_is_auipc(v, RV_T0))
		return 0; /* already there (a scan of the same mapping again) */
	return v == INSN_NOP || v == INSN_C_NOP2 ? 4 : -1;
}

/* ---- compiled forms ----------------------------------------------------- */

/* NOPs: 4-byte NOPs and c.nop pairs, in whole words. */
int arch_is_nops(const uint8_t *p, int n)
{
	if (n <= 0 || (n & 3))
		return 0;
	for (int i = 0; i < n; i += 4) {
		uint32_t v = insn_get(p + i);
		if (v != INSN_NOP && v != INSN_C_NOP2)
			return 0;
	}
	return 1;
}

int arch_entry_marker_len(const uint8_t *p)
{
	(void)p;
	return 0; /* no landing-pad instruction (Zicfilp's lpad is not used) */
}

/* -fpatchable-function-entry: the site's word is a NOP or two c.nop. No
 * -mfentry on riscv: `-pg` calls _mcount after the prologue. */
enum arch_site_form arch_site_compiled(const uint8_t *p, int len, uintptr_t at, uintptr_t *target)
{
	(void)at, (void)target;
	if (len != INSN_SIZE)
		return ARCH_SITE_UNKNOWN;
	uint32_t v = insn_get(p);
	if (v == INSN_NOP)
		return ARCH_SITE_CANONICAL;
	return v == INSN_C_NOP2 ? ARCH_SITE_NOPS : ARCH_SITE_UNKNOWN;
}

/* A PLT stub: auipc t3, hi; ld t3, lo(t3); jalr t1, t3; nop. */
uintptr_t arch_plt_got_slot(uintptr_t target)
{
	const uint8_t *p = (const uint8_t *)target;
	uint32_t a = insn_get(p), l = insn_get(p + 4), j = insn_get(p + 8);
	if (!insn_is_auipc(a, 28) || (l & 0x000fffffu) != 0x000e3e03u || j != 0x000e0367u)
		return 0;
	return insn_auipc_value(target, a) + (uintptr_t)(intptr_t)insn_i_imm(l);
}

/* ---- trampoline regions ------------------------------------------------- */

/* t1 hands IDX to the per-ops body (tramp.S: dft_ops_tmpl). */
void arch_stub_write(uint8_t *at, uint32_t idx, uintptr_t body)
{
	uint32_t li[2];
	insn_li32(RV_T1, idx, li);
	insn_put(at, li[0]);
	insn_put(at + 4, li[1]);
	insn_put(at + 8, insn_jal(RV_ZERO, (uintptr_t)at + 8, body));
	insn_put(at + 12, INSN_EBREAK);
}

/* Through t1: t0 holds the return into the traced function. */
void arch_far_jump_write(uint8_t *at, uintptr_t target)
{
	insn_put(at, INSN_AUIPC_T1);
	insn_put(at + 4, 0x01033303u); /* ld t1, 16(t1) */
	insn_put(at + 8, INSN_JR_T1);
	insn_put(at + 12, INSN_EBREAK);
	memcpy(at + 16, &target, 8);
}

uintptr_t arch_far_jump_target(const uint8_t *at)
{
	uintptr_t t;
	memcpy(&t, at + 16, sizeof(t));
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
	insn_put(out, jmp ? insn_jal(RV_ZERO, code, target) : INSN_NOP);
}

int arch_jump_label_state(uintptr_t code, uintptr_t target)
{
	uint32_t v = insn_get((const void *)code);
	if (v == INSN_NOP)
		return 0;
	if (insn_is_jal(v) && insn_rd(v) == RV_ZERO && insn_jal_target(code, v) == target)
		return 1;
	return -EFAULT;
}

/* ---- static calls ------------------------------------------------------- */

/* include/dynftrace/arch/riscv64/static_call.h lays the trampoline out:
 * +0 the patched `j` (to the function, to +8 the far path, or to +4 for
 * no target), +4 ret, +8 auipc/ld t1 of the key's far slot, +16 jr t1.
 * Every form of the patched word is a jal x0: one aligned word. */
#define SC_TRAMP_RET_OFF 4
#define SC_TRAMP_FAR_OFF 8

void arch_static_call_tramp(uintptr_t tramp, uintptr_t func, uint8_t out[ARCH_SITE_SIZE])
{
	uintptr_t to = !func			  ? tramp + SC_TRAMP_RET_OFF
		       : insn_jal_ok(tramp, func) ? func
						  : tramp + SC_TRAMP_FAR_OFF;
	insn_put(out, insn_jal(RV_ZERO, tramp, to));
}

/* An inline site is a `jal ra` (a call the linker relaxed) or `jal x0` (a
 * tail call): with no target (COND) a NOP for a call; a tail jump goes
 * through the trampoline, which returns. */
void arch_static_call_site(uintptr_t site, int tail, int cond, uintptr_t func, uintptr_t tramp,
			   uint8_t out[ARCH_SITE_SIZE])
{
	int rd = tail ? RV_ZERO : RV_RA;
	if (!func && cond && !tail)
		insn_put(out, INSN_NOP);
	else if (func && insn_jal_ok(site, func))
		insn_put(out, insn_jal(rd, site, func));
	else
		insn_put(out, insn_jal(rd, site, tramp));
}

int arch_static_call_tramp_valid(uintptr_t t, uintptr_t far)
{
	const uint8_t *p = (const uint8_t *)t;
	uint32_t ret = insn_get(p + SC_TRAMP_RET_OFF), a = insn_get(p + SC_TRAMP_FAR_OFF),
		 ld = insn_get(p + SC_TRAMP_FAR_OFF + 4), jr = insn_get(p + SC_TRAMP_FAR_OFF + 8);
	if (ret != INSN_RET || !insn_is_auipc(a, RV_T1) || (ld & 0x000fffffu) != 0x00033303u ||
	    jr != INSN_JR_T1)
		return 0;
	return insn_auipc_value(t + SC_TRAMP_FAR_OFF, a) + (uintptr_t)(intptr_t)insn_i_imm(ld) ==
	       far;
}

/* Calls through `auipc ra; jalr ra` (not relaxed) are not inline sites:
 * they keep calling the trampoline. Only aligned words can be patched. */
uintptr_t arch_static_call_find(uintptr_t from, uintptr_t to, uintptr_t tramp, int *tail)
{
	for (uintptr_t p = (from + 3) & ~(uintptr_t)3; p + 4 <= to; p += 4) {
		uint32_t v = insn_get((const void *)p);
		if (insn_is_jal(v) && (insn_rd(v) == RV_RA || insn_rd(v) == RV_ZERO) &&
		    insn_jal_target(p, v) == tramp) {
			*tail = insn_rd(v) == RV_ZERO;
			return p;
		}
	}
	return 0;
}
