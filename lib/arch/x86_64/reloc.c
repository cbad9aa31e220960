/* SPDX-License-Identifier: MIT */
/*
 * reloc.c - x86-64 entry relocation (lib/core/arch.h, "relocation"): the
 * instructions covering a function's first ARCH_SITE_SIZE bytes after its
 * endbr64 are copied to a block that runs at another address, followed by a
 * jump back to the first instruction not copied.
 *
 * Lengths and the place of RIP-relative displacements come from x86dec.c;
 * capstone, loaded with dlmopen the first time a relocation is asked for
 * (the runtime links against libc alone), must agree on each copied
 * instruction's length and names it in the reasons of a refusal. The
 * sweeps over whole functions (arch_reloc_branches, the self-scan below)
 * use x86dec alone: a disassembler's text costs 20 times its decoding.
 * Branches are recognised here, by their opcodes. What a copy changes:
 *   - a RIP-relative operand: its displacement, recomputed for the block
 *     (refused out of ±2 GiB: the operand's address cannot change);
 *   - jmp/jcc rel8/rel32: rel32 forms; out of reach `jmp *0(%rip); .quad T`,
 *     behind an inverted short jcc for a jcc;
 *   - call rel32 (always the last instruction copied: it is 5 bytes long
 *     and ends past the replaced bytes): `pushq 5(%rip); jmp T; .quad RET`,
 *     else `pushq 6(%rip); jmp *8(%rip); .quad RET; .quad T`, RET being the
 *     original call's end. The callee returns into the function itself,
 *     whose unwind information describes that point, rather than into the
 *     block, which has none (a thread between the push and the jump is
 *     moved back to T: the state a call would have left);
 *   - an indirect call is copied as is: its return address would be the
 *     block's, so the caller (entries.c) refuses it (calls);
 *   - loop, loope, loopne, jrcxz, jecxz (rel8 only): the instruction itself
 *     hopping over a short jmp onto a jump to its target;
 *   - a branch to another copied instruction goes to that one's copy; one to
 *     the function's entry stays (it will hold the jump to the block).
 * Refused: bytes either decoder cannot decode, or whose length they
 * disagree on; a function shorter than the jump;
 * an instruction without fall-through (ret, jmp *, ud2, hlt; a direct jmp
 * when the function's size is unknown) ending before ARCH_SITE_SIZE bytes,
 * as what follows may not be the function's; int3 and int1 (someone's
 * breakpoint); xbegin; branches with an operand-size prefix (AMD truncates
 * RIP to 16 bits); EIP-relative operands; and any direct branch of the
 * function (FSIZE known) to a byte strictly inside the replaced range,
 * which the entry's jump overwrites. Indirect branches (jump tables) into
 * that range cannot be seen: the first instructions of a function are
 * rarely a jump table's target.
 */
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "arch.h"
#include "insn.h"
#include "x86dec.h"

#define ENDBR64_LEN  4
#define INSN_MAX     15 /* longest x86 instruction */
#define FAR_JMP_SIZE 14 /* jmp *0(%rip); .quad */
/* Copied instructions: each starts before ARCH_SITE_SIZE bytes are covered. */
#define RELOC_INSNS ARCH_SITE_SIZE
/* The longest rewrite: [67] loop +2; jmp +14; jmp *0(%rip); .quad. */
#define RELOC_INSN_OUT (1 + 2 + 2 + FAR_JMP_SIZE)
#define RELOC_MAX      (RELOC_INSNS * RELOC_INSN_OUT + FAR_JMP_SIZE)
/* A call's rewrite (see the top): pushq; jmp rel32; .quad, or pushq;
 * jmp *; .quad; .quad. It is the last copy and follows instructions of
 * fewer than ARCH_SITE_SIZE bytes, at least 2 each when rewritten longer
 * than themselves, so the block stays within RELOC_MAX (checked below). */
#define CALL_PUSH_LEN 6
#define CALL_NEAR_OUT (CALL_PUSH_LEN + INSN_SIZE + 8)
#define CALL_FAR_OUT  (CALL_PUSH_LEN + 6 + 8 + 8)
_Static_assert((ARCH_SITE_SIZE - 1) / 2 * RELOC_INSN_OUT + 1 + CALL_FAR_OUT + FAR_JMP_SIZE <=
		   RELOC_MAX,
	       "a call's rewrite fits the block");

_Static_assert(RELOC_INSNS <= ARRAY_SIZE(((struct arch_reloc *)0)->map) && RELOC_MAX < 256,
	       "struct arch_reloc's map holds every copy's offset");

static const uint8_t endbr64[ENDBR64_LEN] = {0xf3, 0x0f, 0x1e, 0xfa};

/* ---- capstone, loaded on first use ---------------------------------------- */

static struct {
	pthread_once_t once;
	pthread_mutex_t lock; /* a capstone handle is not thread-safe */
	int err;	      /* 0, or -ENOENT: no decoder */
	csh h;
	cs_insn *insn;
	__typeof__(cs_disasm_iter) *disasm_iter;
	void *lib;
	__typeof__(cs_close) *close;
	__typeof__(cs_free) *free;
} cs = {PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, -ENOENT, 0, NULL, NULL, NULL, NULL, NULL};

/*
 * dlmopen in the base namespace is dlopen, without the runtime's own dlopen
 * wrapper (interpose.c): that one takes the unload lock and rescans, and a
 * relocation may be asked for with patch_lock held. The loader's lock comes
 * after patch_lock in the lock order. Closed only for a detach
 * (arch_reloc_unload: the runtime leaves the process).
 */
static void cs_load(void)
{
	void *lib = dlmopen(LM_ID_BASE, "libcapstone.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlmopen(LM_ID_BASE, "libcapstone.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return;
	__typeof__(cs_open) *open_ = (__typeof__(cs_open) *)dlsym(lib, "cs_open");
	__typeof__(cs_malloc) *alloc = (__typeof__(cs_malloc) *)dlsym(lib, "cs_malloc");
	__typeof__(cs_close) *close_ = (__typeof__(cs_close) *)dlsym(lib, "cs_close");
	cs.disasm_iter = (__typeof__(cs_disasm_iter) *)dlsym(lib, "cs_disasm_iter");
	cs.free = (__typeof__(cs_free) *)dlsym(lib, "cs_free");
	cs.lib = lib;
	cs.close = close_;
	if (!open_ || !alloc || !close_ || !cs.disasm_iter || !cs.free ||
	    open_(CS_ARCH_X86, CS_MODE_64, &cs.h) != CS_ERR_OK)
		return;
	/* No operand details: x86dec finds the displacements. */
	if (!(cs.insn = alloc(cs.h))) {
		close_(&cs.h);
		return;
	}
	cs.err = 0;
}

/* ---- instructions -------------------------------------------------------- */

enum kind {
	K_PLAIN, /* copied as is (a RIP-relative displacement aside) */
	K_STOP,	 /* copied as is, does not fall through (ret, jmp *, ud2, hlt) */
	K_JMP,	 /* jmp rel8/rel32 */
	K_JCC,	 /* jcc rel8/rel32 */
	K_CALL,	 /* call rel32 */
	K_LOOP,	 /* loop, loope, loopne, jrcxz, jecxz: rel8 */
	K_BAD,	 /* never relocated (why says what) */
};

struct insn {
	uint8_t off, len; /* from SRC */
	uint8_t kind;
	uint8_t op;	  /* jcc: condition; loop: opcode; K_BAD: what */
	uint8_t addr32;	  /* loop: 67 prefix (ecx) */
	uint8_t disp_off; /* RIP-relative: the disp32's offset in the insn, else 0 */
	uintptr_t target; /* branch target, or the RIP-relative operand's address */
	uintptr_t next;	  /* the original's next instruction (a call's return) */
	uint8_t icall;	  /* an indirect call */
	char mnem[CS_MNEMONIC_SIZE];
};

enum { BAD_BREAKPOINT = 1, BAD_XBEGIN, BAD_OPSIZE };

/* The relative operand of D (at P): its target from END, the address of
 * the next instruction. */
static uintptr_t rel_target(const struct x86_dec *d, const uint8_t *p, uintptr_t end)
{
	const uint8_t *q = p + d->imm_off;
	if (d->imm_len == 1)
		return end + (uintptr_t)(intptr_t)(int8_t)q[0];
	if (d->imm_len == 2) {
		int16_t r;
		memcpy(&r, q, 2);
		return end + (uintptr_t)(intptr_t)r;
	}
	int32_t r;
	memcpy(&r, q, 4);
	return end + (uintptr_t)(intptr_t)r;
}

/* Sort the instruction D (its bytes at P, at address AT) by the way it
 * moves. Only legacy-encoded instructions branch. */
static void classify(const struct x86_dec *d, const uint8_t *p, uintptr_t at, struct insn *in)
{
	uint8_t op = d->op, reg = (d->modrm >> 3) & 7;
	uintptr_t end = at + d->len;

	in->kind = K_PLAIN;
	in->addr32 = d->addr32;
	if (d->enc != X86_LEGACY)
		return;
	if (d->map == 0) {
		if (op >= 0x70 && op <= 0x7f)
			in->kind = K_JCC, in->op = op & 15, in->target = rel_target(d, p, end);
		else if (op >= 0xe0 && op <= 0xe3)
			in->kind = K_LOOP, in->op = op, in->target = rel_target(d, p, end);
		else if (op == 0xeb || op == INSN_JMP)
			in->kind = K_JMP, in->target = rel_target(d, p, end);
		else if (op == INSN_CALL)
			in->kind = K_CALL, in->target = rel_target(d, p, end);
		else if (op == 0xc7 && d->modrm == 0xf8)
			in->kind = K_BAD, in->op = BAD_XBEGIN, in->target = rel_target(d, p, end);
		else if (op == INSN_INT3 || op == 0xf1)
			in->kind = K_BAD, in->op = BAD_BREAKPOINT;
		else if (op == 0xff && (reg == 2 || reg == 3))
			in->icall = 1; /* call *, lcall *: copied as is */
		else if (op == INSN_RET || op == 0xc2 || op == 0xca || op == 0xcb || op == 0xcf ||
			 op == 0xf4 || (op == 0xff && (reg == 4 || reg == 5)))
			in->kind = K_STOP; /* ret, lret, iret, hlt, jmp *, ljmp * */
	} else if (d->map == 1) {
		if (op >= 0x80 && op <= 0x8f)
			in->kind = K_JCC, in->op = op & 15, in->target = rel_target(d, p, end);
		else if (op == 0x0b || op == 0xb9 || op == 0xff)
			in->kind = K_STOP; /* ud2, ud1, ud0 */
	}
	if (d->opsize && in->kind >= K_JMP && in->kind <= K_LOOP)
		in->kind = K_BAD, in->op = BAD_OPSIZE;
}

/* Can classify() sort D as anything but K_PLAIN without an indirect call?
 * The sweeps skip the rest (most instructions) at the cost of a lookup. */
static inline int may_move(const struct x86_dec *d)
{
	if (d->enc != X86_LEGACY)
		return 0;
	if (d->map == 1)
		return (d->op >= 0x80 && d->op <= 0x8f) || d->op == 0x0b || d->op == 0xb9 ||
		       d->op == 0xff;
	return d->map == 0 && ((d->op >= 0x70 && d->op <= 0x7f) || d->op >= 0xe0 || d->op == 0xc7 ||
			       (d->op >= 0xc2 && d->op <= 0xc3) ||
			       (d->op >= 0xca && d->op <= 0xcc) || d->op == 0xcf);
}

/* A direct branch's target, else 0 (the function scan). */
static int is_branch(const struct insn *in)
{
	return (in->kind >= K_JMP && in->kind <= K_LOOP) ||
	       (in->kind == K_BAD && in->op != BAD_BREAKPOINT);
}

/* "+3", "+0x1f": an offset in a reason. */
static const char *offs(char b[24], size_t v)
{
	snprintf(b, 24, v < 10 ? "+%zu" : "+%#zx", v);
	return b;
}

static int refuse(struct arch_reloc *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct arch_reloc *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return err;
}

/*
 * Decode the instruction at CODE[OFF] (LIMIT bytes readable) at SRC + OFF
 * into IN: its length, 0 when undecodable, -1 for an operand the copy
 * cannot keep (why set). x86dec gives the length and the displacement;
 * capstone must agree on the length, and names the instruction. The caller
 * holds cs.lock.
 */
static int decode(const uint8_t *code, size_t off, size_t limit, uintptr_t src, struct insn *in,
		  struct arch_reloc *r)
{
	const uint8_t *p = code + off;
	size_t n = limit - off < INSN_MAX ? limit - off : INSN_MAX;
	uint64_t addr = src + off;
	struct x86_dec d;
	char b[24];

	int len = x86_decode(code + off, limit - off, &d);
	if (!len || !cs.disasm_iter(cs.h, &p, &n, &addr, cs.insn))
		return 0;
	memset(in, 0, sizeof(*in));
	snprintf(in->mnem, sizeof(in->mnem), "%s", cs.insn->mnemonic);
	if ((int)cs.insn->size != len) {
		refuse(r, -ENOTSUP, "%s at %s: the decoders disagree on its length (%d, %d)",
		       in->mnem, offs(b, off), len, (int)cs.insn->size);
		return -1;
	}
	in->off = (uint8_t)off;
	in->len = (uint8_t)len;
	in->next = src + off + (uintptr_t)len;
	classify(&d, code + off, src + off, in);
	if (d.disp_off && d.addr32) {
		refuse(r, -ENOTSUP, "%s at %s has an EIP-relative operand", in->mnem, offs(b, off));
		return -1;
	}
	if (d.disp_off) {
		int32_t disp;
		memcpy(&disp, code + off + d.disp_off, 4);
		in->disp_off = d.disp_off;
		in->target = in->next + (uintptr_t)(intptr_t)disp;
	}
	return len;
}

/*
 * Reading its own return address. The graph tracer's return hook replaces
 * it, so a function that reads it (__builtin_return_address(0): libgcc's
 * uw_init_context_1 starts an exception's unwinding from it) would get an
 * address without unwind information. Not visible by name in a stripped
 * object, it is looked for in the code: the stack depth is followed
 * through the prologue (pushes, then sub $N or add $-N to rsp; mov %rsp,
 * %rbp) until the first branch, call or other write of rsp (a push after
 * the frame's allocation is a call's argument); a 64-bit load from the return
 * address's slot (N(%rsp) at that depth, or D(%rbp) after `mov %rsp, %rbp`
 * at depth D) anywhere in the function then refuses it. A load of the same
 * slot at another depth is not seen; one of another slot that happens to
 * lie there refuses a function that could have been traced.
 */
struct ra_scan {
	long depth; /* bytes pushed since the entry; -1: no longer followed */
	int framed; /* the frame is allocated (sub or add to rsp) */
	long ra;    /* the return address at ra(%rsp), at the prologue's end */
	long fp;    /* at fp(%rbp), or -1 */
};

/* A load (mov r64, r/m64) of BASE + DISP, no index: BASE 4 rsp, 5 rbp. */
static int load_of(const struct x86_dec *d, const uint8_t *p, int base, long disp)
{
	unsigned mod = d->modrm >> 6;
	if (d->enc != X86_LEGACY || d->map || d->op != 0x8b || !(d->rex & 8) || (d->rex & 3) ||
	    mod == 3 || (mod == 0 && base != 4))
		return 0; /* mod 0 with rbp's encoding is RIP-relative */
	const uint8_t *q = p + d->op_off + 2;
	if (base == 4) {
		if ((d->modrm & 7) != 4 || (q[0] & 7) != 4 || ((q[0] >> 3) & 7) != 4)
			return 0;
		q++;
	} else if ((d->modrm & 7) != (unsigned)base) {
		return 0;
	}
	long v;
	if (mod == 0) {
		v = 0; /* (%rsp): at the entry, libffi's ffi_call_unix64 */
	} else if (mod == 1) {
		v = (int8_t)q[0];
	} else {
		int32_t w;
		memcpy(&w, q, 4);
		v = w;
	}
	return v == disp;
}

/* One instruction D (at P) of the linear scan: 1 when it reads the return
 * address. */
static int ra_step(struct ra_scan *a, const struct x86_dec *d, const uint8_t *p,
		   const struct insn *in)
{
	if (a->depth >= 0) {
		uint8_t op = d->op, modrm = d->modrm;
		int legacy0 = d->enc == X86_LEGACY && d->map == 0;
		int w = (d->rex & 8) != 0;
		if (load_of(d, p, 4, a->depth) || (a->fp > 0 && load_of(d, p, 5, a->fp)))
			return 1;
		if (legacy0 && op >= 0x50 && op <= 0x57 && !d->opsize && !a->framed) {
			a->depth += 8; /* push r64, before the frame's allocation */
		} else if (legacy0 && (op == 0x83 || op == 0x81) &&
			   (modrm == 0xec || modrm == 0xc4) && w && !(d->rex & 1)) {
			int32_t v = 0; /* sub $imm, %rsp; add $-imm, %rsp */
			if (d->imm_len == 1)
				v = (int8_t)p[d->imm_off];
			else
				memcpy(&v, p + d->imm_off, 4);
			a->depth += modrm == 0xec ? v : -(long)v;
			a->framed = 1; /* pushes from now on are a call's arguments */
			if (a->depth < 0)
				a->depth = -1, a->ra = -1; /* not a prologue: nothing known */
		} else if (legacy0 && op == 0x89 && modrm == 0xe5 && w && !(d->rex & 5)) {
			a->fp = a->depth; /* mov %rsp, %rbp */
		} else if (in->kind != K_PLAIN || in->icall || (legacy0 && op == INSN_CALL) ||
			   (legacy0 && ((op >= 0x50 && op <= 0x57) || op == 0x68 || op == 0x6a ||
					(op == 0xff && ((modrm >> 3) & 7) == 6)))) {
			/* a branch, a call, a push after the frame's allocation
			 * (a call's argument): the depth is the body's */
			a->ra = a->depth;
			a->depth = -1;
		} else if ((legacy0 && ((op >= 0x58 && op <= 0x5f) || op == 0xc9 || op == 0xc8)) ||
			   (legacy0 && d->has_modrm && (modrm >> 6) == 3 && (modrm & 7) == 4 &&
			    !(d->rex & 1) && op != 0x39 && op != 0x3b && op != 0x85 &&
			    op != 0x8b) ||
			   (legacy0 && op == 0x8d && ((modrm >> 3) & 7) == 4 && !(d->rex & 4))) {
			/* pop, leave, enter, another write of rsp (and, mov; not
			 * cmp, test, a read into a register), lea into rsp: the
			 * depth is not known */
			a->ra = -1;
			a->depth = -1;
		}
		return 0;
	}
	return (a->ra > 0 && load_of(d, p, 4, a->ra)) || (a->fp > 0 && load_of(d, p, 5, a->fp));
}

static int reach32(uintptr_t end, uintptr_t target)
{
	intptr_t d = (intptr_t)(target - end);
	return d == (intptr_t)(int32_t)d;
}

static void put32(uint8_t *p, uintptr_t end, uintptr_t target)
{
	int32_t d = (int32_t)(intptr_t)(target - end);
	memcpy(p, &d, 4);
}

/* A jump at AT (block address) to TARGET: 5 bytes in reach, else 14. With
 * P NULL only its size. */
static int emit_jmp(uint8_t *p, uintptr_t at, uintptr_t target)
{
	if (reach32(at + INSN_SIZE, target)) {
		if (p) {
			p[0] = INSN_JMP;
			put32(p + 1, at + INSN_SIZE, target);
		}
		return INSN_SIZE;
	}
	if (p) {
		static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0};
		memcpy(p, jmp_rip, 6);
		memcpy(p + 6, &target, 8);
	}
	return FAR_JMP_SIZE;
}

/* The copy of IN at block address AT into P (NULL: only its size); TARGET:
 * where its branch now goes. */
static int emit(uint8_t *p, uintptr_t at, const uint8_t *code, const struct insn *in,
		uintptr_t target)
{
	int n;

	switch (in->kind) {
	case K_JMP:
		return emit_jmp(p, at, target);
	case K_JCC:
		if (reach32(at + 6, target)) {
			if (p) {
				p[0] = 0x0f, p[1] = (uint8_t)(0x80 | in->op);
				put32(p + 2, at + 6, target);
			}
			return 6;
		}
		/* j!cc over the far jump */
		if (p)
			p[0] = (uint8_t)(0x70 | (in->op ^ 1)), p[1] = FAR_JMP_SIZE;
		return 2 + emit_jmp(p ? p + 2 : NULL, at + 2, target);
	case K_CALL:
		/* pushq RET; jmp T (CALL_PUSH_LEN: where a thread between the
		 * two has the call's effect but the jump) */
		if (reach32(at + CALL_PUSH_LEN + INSN_SIZE, target)) {
			if (p) {
				static const uint8_t push_rip[CALL_PUSH_LEN] = {0xff, 0x35, 5,
										0,    0,    0};
				memcpy(p, push_rip, CALL_PUSH_LEN);
				p[6] = INSN_JMP;
				put32(p + 7, at + CALL_PUSH_LEN + INSN_SIZE, target);
				memcpy(p + 11, &in->next, 8);
			}
			return CALL_NEAR_OUT;
		}
		if (p) {
			static const uint8_t push_jmp[12] = {0xff, 0x35, 6, 0, 0, 0,
							     0xff, 0x25, 8, 0, 0, 0};
			memcpy(p, push_jmp, 12);
			memcpy(p + 12, &in->next, 8);
			memcpy(p + 20, &target, 8);
		}
		return CALL_FAR_OUT;
	case K_LOOP:
		/* loop +2 (to the jump to TARGET); jmp +N (over it) */
		n = in->addr32;
		if (p) {
			if (n)
				p[0] = 0x67;
			p[n] = in->op, p[n + 1] = 2;
			p[n + 2] = 0xeb;
		}
		{
			int j = emit_jmp(p ? p + n + 4 : NULL, at + n + 4, target);
			if (p)
				p[n + 3] = (uint8_t)j;
			return n + 4 + j;
		}
	default:
		if (p) {
			memcpy(p, code + in->off, in->len);
			if (in->disp_off)
				put32(p + in->disp_off, at + in->len, in->target);
		}
		return in->len;
	}
}

/* ---- the operation ------------------------------------------------------- */

int arch_reloc_branches(const uint8_t *code, size_t len, uintptr_t addr,
			void (*fn)(uintptr_t target, uintptr_t from, void *ctx), void *ctx)
{
	/* x86dec alone; without capstone nothing is relocated, nor swept for. */
	pthread_once(&cs.once, cs_load);
	if (cs.err)
		return cs.err;
	for (size_t o = 0; o < len;) {
		struct x86_dec d;
		int l = x86_decode(code + o, len - o, &d);
		if (!l) {
			o++; /* data, padding, or an unknown extension: go on */
			continue;
		}
		if (may_move(&d)) {
			struct insn in;
			memset(&in, 0, sizeof(in));
			classify(&d, code + o, addr + o, &in);
			if (in.kind >= K_JMP && in.kind <= K_LOOP)
				fn(in.target, addr + o, ctx);
		}
		o += (size_t)l;
	}
	return 0;
}

void arch_reloc_unload(int (*close_lib)(void *))
{
	pthread_mutex_lock(&cs.lock);
	if (!cs.err) {
		cs.free(cs.insn, 1);
		cs.close(&cs.h);
		cs.insn = NULL;
		cs.err = -ENOENT; /* no decoder from now on */
	}
	if (cs.lib)
		close_lib(cs.lib);
	cs.lib = NULL;
	pthread_mutex_unlock(&cs.lock);
}

size_t arch_reloc_max(void)
{
	return RELOC_MAX;
}

size_t arch_reloc_peek(void)
{
	return ENDBR64_LEN + ARCH_SITE_SIZE - 1 + INSN_MAX;
}

static int reloc_locked(uintptr_t src, const uint8_t *code, size_t avail, size_t fsize,
			uintptr_t dst, uint8_t *out, size_t outcap, struct arch_reloc *r)
{
	struct insn ins[RELOC_INSNS];
	int blk[RELOC_INSNS];  /* each copy's offset in the block */
	int into[RELOC_INSNS]; /* the copied instruction a branch goes to, or -1 */
	uint8_t buf[RELOC_MAX];
	size_t m = r->marker, off = m;
	int n = 0;
	char b1[24], b2[24];

	/* The instructions covering ARCH_SITE_SIZE bytes past the marker. */
	while (off < m + ARCH_SITE_SIZE) {
		struct insn *in = &ins[n];
		int len = decode(code, off, avail, src, in, r);
		if (len < 0)
			return -ENOTSUP;
		if (!len && avail - off < INSN_MAX)
			return refuse(r, -EINVAL, "undecodable bytes at %s (%zu bytes given)",
				      offs(b1, off), avail);
		if (!len)
			return refuse(r, -EINVAL, "undecodable bytes at %s", offs(b1, off));
		if (fsize && off + (size_t)len > fsize)
			return refuse(r, -ENOTSUP, "%s at %s runs past the function's %zu bytes",
				      in->mnem, offs(b1, off), fsize);
		if (in->kind == K_BAD)
			return refuse(r, -ENOTSUP, "%s at %s %s", in->mnem, offs(b1, off),
				      in->op == BAD_BREAKPOINT ? "is a breakpoint: someone else's"
				      : in->op == BAD_OPSIZE   ? "has an operand-size prefix"
							       : "cannot be relocated");
		off += (size_t)len;
		n++;
		if (off < m + ARCH_SITE_SIZE &&
		    (in->kind == K_STOP || (in->kind == K_JMP && !fsize)))
			return refuse(r, -ENOTSUP, "%s at %s before %d bytes", in->mnem,
				      offs(b1, in->off), ARCH_SITE_SIZE);
	}
	r->covered = (uint8_t)(off - m);

	/* A copied branch into the copied instructions goes to a copy, except
	 * one to the entry, which will jump to the block anyway. */
	uintptr_t lo = src + m, hi = src + off;
	for (int i = 0; i < n; i++) {
		uintptr_t t = ins[i].target;
		into[i] = -1;
		if (ins[i].kind < K_JMP || ins[i].kind > K_LOOP || t <= lo || t >= hi)
			continue;
		for (int j = 0; j < n; j++)
			if (src + ins[j].off == t)
				into[i] = j;
		if (into[i] < 0)
			return refuse(r, -ENOTSUP, "%s at %s targets %s, inside an instruction",
				      ins[i].mnem, offs(b1, ins[i].off), offs(b2, t - src));
	}

	/* Layout: a copy's size depends on its own address only, internal
	 * targets being always in rel32 reach. */
	int pos = 0;
	for (int i = 0; i < n; i++) {
		blk[i] = pos;
		pos += emit(NULL, dst + (uintptr_t)pos, code, &ins[i],
			    into[i] < 0 ? ins[i].target : dst);
	}
	if (pos + FAR_JMP_SIZE > RELOC_MAX)
		return refuse(r, -EINVAL, "the block would take %d bytes", pos + FAR_JMP_SIZE);
	for (int i = 0; i < n; i++) {
		uintptr_t at = dst + (uintptr_t)blk[i];
		if (ins[i].disp_off && !reach32(at + ins[i].len, ins[i].target))
			return refuse(r, -ERANGE,
				      "%s at %s: its RIP-relative operand is out of reach",
				      ins[i].mnem, offs(b1, ins[i].off));
		emit(buf + blk[i], at, code, &ins[i],
		     into[i] < 0 ? ins[i].target : dst + (uintptr_t)blk[into[i]]);
		r->map[i].src = ins[i].off;
		r->map[i].dst = (uint8_t)blk[i];
		r->calls |= ins[i].icall;
		if (ins[i].kind == K_CALL) {
			r->call_pushed = (uint8_t)(blk[i] + CALL_PUSH_LEN);
			r->call_target =
			    into[i] < 0 ? ins[i].target : dst + (uintptr_t)blk[into[i]];
		}
	}
	r->ninsn = (uint8_t)n;
	r->end = (uint8_t)pos;
	pos += emit_jmp(buf + pos, dst + (uintptr_t)pos, hi);

	/* Any direct branch of the function into the replaced bytes? */
	if (!fsize) {
		r->unscanned = 1;
	} else {
		struct ra_scan ra = {0, 0, 0, -1};
		for (size_t o = 0; o < fsize;) {
			struct insn in;
			struct x86_dec d;
			int len = x86_decode(code + o, fsize - o, &d);
			if (!len) {
				o++; /* data, or an unknown extension: go on */
				ra.ra = ra.depth >= 0 ? ra.depth : ra.ra;
				ra.depth = -1;
				continue;
			}
			in.kind = K_PLAIN, in.icall = 0;
			if (may_move(&d)) {
				memset(&in, 0, sizeof(in));
				classify(&d, code + o, src + o, &in);
			}
			if ((o < m || o >= off) && is_branch(&in) && in.target > lo &&
			    in.target < hi)
				return refuse(
				    r, -ENOTSUP,
				    "a branch at %s targets %s, inside the relocated bytes",
				    offs(b1, o), offs(b2, in.target - src));
			if (ra_step(&ra, &d, code + o, &in))
				return refuse(r, -ENOTSUP, "reads its own return address at %s",
					      offs(b1, o));
			o += (size_t)len;
		}
	}

	if ((size_t)pos > outcap)
		return refuse(r, -EINVAL, "the block takes %d bytes, OUT holds %zu", pos, outcap);
	memcpy(out, buf, (size_t)pos);
	r->len = (uint16_t)pos;
	return 0;
}

int arch_reloc_entry(uintptr_t src, const uint8_t *code, size_t avail, size_t fsize, uintptr_t dst,
		     uint8_t *out, size_t outcap, struct arch_reloc *r)
{
	memset(r, 0, sizeof(*r));
	if (!code || !out)
		return refuse(r, -EINVAL, "no code or no output buffer");
	if (fsize && avail < fsize)
		return refuse(r, -EINVAL, "%zu bytes given of a %zu-byte function", avail, fsize);
	if (avail >= ENDBR64_LEN && !memcmp(code, endbr64, ENDBR64_LEN))
		r->marker = ENDBR64_LEN; /* stays first: indirect calls land on it */
	if (fsize && fsize < r->marker + (size_t)ARCH_SITE_SIZE)
		return refuse(r, -ENOTSUP, "a %zu-byte function: the jump takes %d bytes after %u",
			      fsize, ARCH_SITE_SIZE, r->marker);

	/* glibc's __restore_rt (mov $15 = rt_sigreturn, %rax; syscall): a
	 * handler returns into it on a signal frame, nobody calls it. */
	static const uint8_t sigret[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
	if (avail >= sizeof(sigret) && !memcmp(code, sigret, sizeof(sigret)))
		return refuse(r, -ENOTSUP, "the signal return trampoline: never called");
	pthread_once(&cs.once, cs_load);
	if (cs.err)
		return refuse(r, cs.err, "the x86 decoder (libcapstone.so.4) is not installed");
	pthread_mutex_lock(&cs.lock);
	int err = reloc_locked(src, code, avail, fsize, dst, out, outcap, r);
	pthread_mutex_unlock(&cs.lock);
	return err;
}
