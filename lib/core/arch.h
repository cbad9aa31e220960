/* SPDX-License-Identifier: MIT */
/*
 * arch.h - the operations the generic runtime asks of an architecture
 * backend. lib/arch/<arch>/ implements them; nothing outside that folder
 * knows an instruction encoding, a register name or an instruction.
 *
 * Constants and the operations that sit on a traced call's path are inline
 * (arch_impl.h of the backend, included at the end); the rest are functions
 * of the backend's arch.c. Operations that build instructions write into
 * OUT and never touch live code: the patch engine writes them.
 *
 * | group          | operations                                              |
 * |----------------|---------------------------------------------------------|
 * | site insns     | arch_site_nop, arch_nop_fill, arch_site_reaches,        |
 * |                | arch_site_prologue,                                     |
 * |                | arch_site_call, arch_site_jump, ARCH_SITE_CALLS,        |
 * |                | arch_site_branch_target, arch_marker_before             |
 * | compiled forms | arch_site_compiled, arch_is_nops, arch_entry_marker_len |
 * |                | arch_plt_got_slot                                       |
 * | patch protocol | arch_breakpoint, arch_fill_trap, arch_trap_addr,        |
 * |                | arch_set_ip, arch_emulate, arch_insn_emulatable,        |
 * |                | arch_insn_swappable, arch_code_written,                 |
 * |                | arch_sync_init, arch_sync_core, arch_sync_memory        |
 * | regions        | arch_stub_write, arch_far_jump_write,                   |
 * |                | arch_far_jump_target, arch_graph_thunk_write,           |
 * |                | arch_graph_thunk_site                                   |
 * | static keys    | arch_jump_label_insn, arch_jump_label_state             |
 * | static calls   | arch_static_call_tramp, arch_static_call_site,          |
 * |                | arch_static_call_tramp_valid, arch_static_call_find     |
 * | registers      | ARCH_REGS_ARG, ARCH_REGS_RET_SLOT, ARCH_RET_IN_REG,     |
 * |                | arch_vec_kind, ARCH_CALLER_SP (optional)                |
 * | per thread     | arch_thread_pointer                                     |
 * | clock          | arch_cycles, arch_cycles_constant, arch_cycles_hz       |
 * | local atomics  | arch_local_cmpxchg, arch_local_add, arch_cpu_relax      |
 * | raw syscalls   | arch_futex_wake_raw                                     |
 * | GOT hooks      | arch_got_reloc                                          |
 * | relocation     | arch_reloc_entry, arch_reloc_max, arch_reloc_peek       |
 *
 * Sizes: ARCH_SITE_SIZE (every patchable instruction), ARCH_STUB_SIZE,
 * ARCH_FAR_JUMP_SIZE, ARCH_THUNK_SIZE and ARCH_THUNK_HOOK (the hook's
 * offset from the return address of the thunk's call to the graph entry;
 * a size of 0: no graph shortcut, the graph tracer takes the per-ops
 * route), ARCH_BRK_LEN (the breakpoint's bytes), ARCH_SITE_REACH (how far
 * a site's call reaches: a trampoline region lies within it).
 */
#ifndef DYNFTRACE_ARCH_OPS_H
#define DYNFTRACE_ARCH_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* What a dynamic relocation makes of its slot (arch_got_reloc, inline: got.c
 * is also built alone, for its test). */
enum arch_got_kind {
	ARCH_GOT_NONE = 0, /* not a GOT slot of a symbol */
	ARCH_GOT_DATA,	   /* the symbol's address, bound when the object loads */
	ARCH_GOT_PLT,	   /* the same, or a lazy-binding stub until the first call */
};

#include "arch_impl.h"

/* ---- trampoline templates ------------------------------------------------ */

/* Code every backend's tramp.S defines and sites.c copies into each region
 * (sites.c: the region's layout), with the labels of the slots it fills.
 * A backend without an optimisation still defines its templates, so that
 * every region has the same layout. */
extern const char dft_caller_tmpl[] HIDDEN;
extern const char dft_caller_tmpl_end[] HIDDEN;
extern const char dft_caller_tmpl_slot[] HIDDEN;
extern const char dft_caller_tmpl_vec[] HIDDEN;
extern const char dft_ops_tmpl[] HIDDEN;
extern const char dft_ops_tmpl_end[] HIDDEN;
extern const char dft_ops_tmpl_slot[] HIDDEN;
extern const char dft_ops_tmpl_vec[] HIDDEN;
extern const char dft_ops_light_tmpl[] HIDDEN;
extern const char dft_ops_light_tmpl_end[] HIDDEN;
extern const char dft_ops_light_tmpl_full[] HIDDEN;
extern const char dft_ops_light_tmpl_table[] HIDDEN;
extern const char dft_ops_light_tmpl_stub0[] HIDDEN;
extern const char dft_ops_light_tmpl_tls[] HIDDEN;
extern const char dft_ops_light_tmpl_seq[] HIDDEN;
extern const char dft_ops_light_tmpl_gp[] HIDDEN;
extern const char dft_callops_light_tmpl[] HIDDEN;
extern const char dft_callops_light_tmpl_end[] HIDDEN;
extern const char dft_callops_light_tmpl_full[] HIDDEN;
extern const char dft_callops_light_tmpl_tls[] HIDDEN;
extern const char dft_callops_light_tmpl_seq[] HIDDEN;
extern const char dft_callops_light_tmpl_gp[] HIDDEN;
extern const char dft_reloc_light_tmpl[] HIDDEN;
extern const char dft_reloc_light_tmpl_end[] HIDDEN;
extern const char dft_reloc_light_tmpl_tls[] HIDDEN;
extern const char dft_reloc_light_tmpl_seq[] HIDDEN;
extern const char dft_reloc_light_tmpl_gp[] HIDDEN;
extern const char dft_gentry_tmpl[] HIDDEN;
extern const char dft_gentry_tmpl_end[] HIDDEN;
extern const char dft_gentry_tmpl_fast[] HIDDEN;
extern const char dft_graph_entry[] HIDDEN;
extern const char dft_graph_entry_all[] HIDDEN;
/* The same for site ids above SITE_ID16_MAX (their events name them in 32 bits). */
extern const char dft_graph_entry_wide[] HIDDEN;
extern const char dft_graph_entry_all_wide[] HIDDEN;
extern const char dft_graph_exit_all[] HIDDEN;
extern const char dft_gexit_tmpl[] HIDDEN;
extern const char dft_gexit_tmpl_end[] HIDDEN;
extern const char dft_gexit_tmpl_fast[] HIDDEN;
extern const char dft_graph_exit[] HIDDEN;

/* ---- site instructions --------------------------------------------------- */

/* The canonical NOP every site becomes; arch_nop_fill: LEN >= ARCH_SITE_SIZE
 * bytes of it, padded with NOPs (a site the compiler made longer). */
void arch_site_nop(uint8_t out[ARCH_SITE_SIZE]) HIDDEN;
void arch_nop_fill(uint8_t *out, int len) HIDDEN;
/* Can the site at SITE call or jump to TARGET in one instruction? */
int arch_site_reaches(uintptr_t site, uintptr_t target) HIDDEN;
/* A call (a jump: arch_site_jump) from SITE to TARGET; the caller checked
 * arch_site_reaches. */
void arch_site_call(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE]) HIDDEN;
void arch_site_jump(uintptr_t site, uintptr_t target, uint8_t out[ARCH_SITE_SIZE]) HIDDEN;
/* The target of the call or jump INSN at SITE; *IS_CALL says which. 0 when
 * INSN is neither (a NOP, a breakpoint). IS_CALL may be NULL. */
uintptr_t arch_site_branch_target(uintptr_t site, const uint8_t *insn, int *is_call) HIDDEN;
/* An instruction the site needs right before it, written once when its
 * object is found (aarch64: `mov x9, x30`, keeping the return address
 * from the site's `bl`; riscv64: `auipc t0` aimed at ANCHOR, the common
 * trampoline the site calls when no nearer target is in reach, 0 when the
 * object has no region): its address, the bytes there and the new ones
 * (4 at most). Its length when it must be written, 0 when nothing is
 * needed or it is already there, -1 when the bytes there are neither
 * (the site is refused). */
int arch_site_prologue(uintptr_t site, uintptr_t anchor, uintptr_t *at, uint8_t *old,
		       uint8_t *new) HIDDEN;

/* ---- compiled forms ------------------------------------------------------ */

/* What a compiler put at a patchable entry of LEN bytes at AT. */
enum arch_site_form {
	ARCH_SITE_UNKNOWN = -1,
	ARCH_SITE_CANONICAL = 0, /* already the canonical NOP */
	ARCH_SITE_NOPS,		 /* other NOPs */
	ARCH_SITE_CALL,		 /* a call: *TARGET set */
	ARCH_SITE_CALL_GOT,	 /* a call through a GOT slot: *TARGET is the
				    function it holds now */
};
enum arch_site_form arch_site_compiled(const uint8_t *p, int len, uintptr_t at,
				       uintptr_t *target) HIDDEN;
/* Do the N bytes at P consist of NOPs only? */
int arch_is_nops(const uint8_t *p, int n) HIDDEN;
/* Length of the landing marker a function may start with (the indirect
 * branch target instruction of CET or BTI), 0 if P does not start with one. */
int arch_entry_marker_len(const uint8_t *p) HIDDEN;
/* TARGET is a PLT stub (an indirect jump through a GOT slot): its slot's
 * address, else 0. */
uintptr_t arch_plt_got_slot(uintptr_t target) HIDDEN;

/* ---- the patch protocol (patch.c) ---------------------------------------- */

/* The breakpoint instruction's first ARCH_BRK_LEN bytes (x86-64: int3,
 * one byte; aarch64: brk, the whole instruction), written first at every
 * site of a batch; SIGTRAP from it has si_code ARCH_TRAP_CODE. Filling
 * with arch_fill_trap makes unused code trap. */
extern const uint8_t arch_breakpoint[ARCH_BRK_LEN] HIDDEN;
void arch_fill_trap(void *p, size_t n) HIDDEN;
/* May the LEN bytes at ADDR go from OLD to NEW by one store while other
 * threads run them (the architecture's rule for concurrent modification)?
 * Then a batch of such changes needs no breakpoint: one store each and
 * one sync. x86-64: never (a 5-byte instruction spans words). */
int arch_insn_swappable(uintptr_t addr, const uint8_t *old, const uint8_t *new, int len) HIDDEN;
/* LEN bytes of code at ADDR were written: the cache maintenance the
 * architecture asks before the sync (x86-64: none, its caches are
 * coherent with stores). */
void arch_code_written(uintptr_t addr, size_t len) HIDDEN;
uintptr_t arch_trap_addr(void *uc) HIDDEN; /* the site a SIGTRAP came from */
void arch_set_ip(void *uc, uintptr_t ip) HIDDEN;
/* Run INSN (LEN bytes, being written at ADDR) for the thread that hit the
 * breakpoint at ADDR. */
void arch_emulate(void *uc, uintptr_t addr, const uint8_t *insn, int len) HIDDEN;
int arch_insn_emulatable(const uint8_t *insn, int len) HIDDEN;
int arch_sync_init(void) HIDDEN;
void arch_sync_core(void) HIDDEN;   /* all threads: full barrier + core serialise */
void arch_sync_memory(void) HIDDEN; /* all threads: full barrier */

/* ---- trampoline regions (sites.c) ---------------------------------------- */

/* A stub at AT: hands IDX to BODY (the per-ops trampoline). */
void arch_stub_write(uint8_t *at, uint32_t idx, uintptr_t body) HIDDEN;
/* A jump to any address (ARCH_FAR_JUMP_SIZE bytes at AT), and the address
 * such a jump leads to. */
void arch_far_jump_write(uint8_t *at, uintptr_t target) HIDDEN;
uintptr_t arch_far_jump_target(const uint8_t *at) HIDDEN;
/* The graph shortcut's thunk of site SITE (id ID) at T: enters GENTRY, calls
 * the function past its site, returns through GEXIT (tramp.S). PRESERVE: the
 * thunk itself changes no register (a relocated entry's: GENTRY and GEXIT
 * are then the preserving ones). */
void arch_graph_thunk_write(uint8_t *t, uint32_t id, uintptr_t site, uintptr_t gentry,
			    uintptr_t gexit, int preserve) HIDDEN;
/* The site's ip (as callbacks see it: a relocated entry's function) of
 * the graph thunk whose call to GENTRY returns to RET (the hook less
 * ARCH_THUNK_HOOK); 0 when not known. */
uintptr_t arch_graph_thunk_site(uintptr_t ret) HIDDEN;

/* ---- static keys (jump.c) ------------------------------------------------ */

/* The branch at CODE: a jump to TARGET (JMP) or the NOP. */
void arch_jump_label_insn(uintptr_t code, uintptr_t target, int jmp,
			  uint8_t out[ARCH_SITE_SIZE]) HIDDEN;
/* 1: the branch at CODE jumps to TARGET, 0: NOP, -EFAULT: neither. */
int arch_jump_label_state(uintptr_t code, uintptr_t target) HIDDEN;

/* ---- static calls (static_call.c) ---------------------------------------- */

/* The trampoline TRAMP's instruction for FUNC (0: return at once); a FUNC
 * out of reach goes through the trampoline's far path. */
void arch_static_call_tramp(uintptr_t tramp, uintptr_t func, uint8_t out[ARCH_SITE_SIZE]) HIDDEN;
/* A call site (TAIL: a tail jump) at SITE for FUNC, through TRAMP when
 * FUNC is out of reach; FUNC 0 with COND: skip the call. */
void arch_static_call_site(uintptr_t site, int tail, int cond, uintptr_t func, uintptr_t tramp,
			   uint8_t out[ARCH_SITE_SIZE]) HIDDEN;
/* Is the trampoline at T intact, its far path reading FAR? */
int arch_static_call_tramp_valid(uintptr_t t, uintptr_t far) HIDDEN;
/* The first call or jump to TRAMP in [FROM, TO); *TAIL: a jump. 0: none. */
uintptr_t arch_static_call_find(uintptr_t from, uintptr_t to, uintptr_t tramp, int *tail) HIDDEN;

/* ---- clock --------------------------------------------------------------- */

/* arch_cycles_hz() (inline): its nominal rate, 0 when unknown (measured
 * then). arch_cycles() (inline) reads the cycle counter; arch_cycles_constant()
 * (inline: the ring is also built alone, for its tests) says whether it
 * ticks at one constant rate on every CPU and in every power state, so that
 * the ring may scale it to nanoseconds. */

/* ---- relocation (entries not compiled with a site) ------------------------ */

/*
 * The instructions covering a function's first ARCH_SITE_SIZE bytes (after
 * its landing marker, which stays first) copied to a block at another
 * address, followed by a jump back to the first instruction not copied; the
 * entry may then become a jump to the block. Position-dependent operands are
 * fixed for the block's address (docs/ARCHITECTURE.md, "Relocating an
 * entry").
 */
/*
 * The preserving trampoline, for relocated entries: a copy into OUT (CAP
 * bytes) that calls CENTRY as the common trampoline does but gives every
 * register back, the extended state included (code built without sites
 * may be called by code that keeps values in call-clobbered registers).
 * Its length, or 0 when CAP is too small.
 * ARCH_REGS_PRESERVE_ALL(regs) tells a callback it came through one.
 */
size_t arch_save_all_tramp(uint8_t *out, size_t cap, void *centry) HIDDEN;

struct arch_reloc {
	uint8_t marker;	       /* landing marker length kept in place (0 or 4) */
	uint8_t covered;       /* bytes after the marker the copy replaces (>= ARCH_SITE_SIZE) */
	uint8_t unscanned;     /* FSIZE was 0: branches into those bytes not looked for */
	uint8_t ninsn;	       /* instructions copied: map[0..ninsn) */
	uint8_t calls;	       /* an indirect call was copied: its return address is the block's */
	uint8_t call_pushed;   /* a direct call's rewrite: OUT offset just past its push, else 0 */
	uintptr_t call_target; /* ... and where it jumps (a thread there is moved to it) */
	uint8_t end;	       /* the jump back's offset in OUT (past the copies) */
	uint16_t len;	       /* bytes written to OUT */
	struct {
		uint8_t src, dst; /* an instruction's offset from SRC, its copy's in OUT */
	} map[8];		  /* where to move a thread stopped inside the replaced bytes */
	char why[96];		  /* on refusal: why, naming the instruction and its offset */
};
/*
 * Relocate the entry of the function at SRC into a block that will run at
 * DST. CODE: AVAIL bytes of the code at SRC (a copy or the code itself);
 * FSIZE: the function's size (symbol, FDE), or 0 when unknown, then AVAIL
 * should be at least arch_reloc_peek() and the function's other branches are
 * not checked. OUT (OUTCAP bytes, arch_reloc_max() always enough) gets the
 * copied instructions and the jump back to SRC + marker + covered. Returns 0,
 * or with R->why set: -ENOENT no decoder installed; -EINVAL bad arguments or
 * undecodable bytes; -ENOTSUP an entry the rules refuse (too short, an early
 * return, a branch into the replaced bytes, ...); -ERANGE a RIP-relative
 * operand out of the block's reach. Thread-safe; never writes live code.
 * The first call loads the decoder (the loader's lock, after patch_lock):
 * not from a signal handler.
 */
int arch_reloc_entry(uintptr_t src, const uint8_t *code, size_t avail, size_t fsize, uintptr_t dst,
		     uint8_t *out, size_t outcap, struct arch_reloc *r) HIDDEN;
size_t arch_reloc_max(void) HIDDEN;
/* Every direct branch (jump, conditional jump, call, loop) decoded in
 * CODE[0, LEN), which runs at ADDR: FN(its target, its address, CTX). A
 * linear sweep that steps over undecodable bytes. 0, or -ENOENT: no
 * decoder. */
int arch_reloc_branches(const uint8_t *code, size_t len, uintptr_t addr,
			void (*fn)(uintptr_t target, uintptr_t from, void *ctx), void *ctx) HIDDEN;
/* The runtime leaves the process (detach): the decoder goes, with CLOSE_LIB
 * (the C library's dlclose); no relocation is possible afterwards. */
void arch_reloc_unload(int (*close_lib)(void *)) HIDDEN;
size_t arch_reloc_peek(void) HIDDEN;

/* ---- registers ----------------------------------------------------------- */

unsigned arch_vec_kind(void) HIDDEN; /* which vector state the trampolines keep */

#endif
