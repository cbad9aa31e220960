/*
 * t-seccomp: the seccomp filter interpreter of the attach check
 * (cli/seccomp.c), built with it by tests/sh/attach-seccomp.sh. TAP.
 *   - each instruction on hand-written programs, with the value it leaves
 *     (and the kernel installs each);
 *   - programs the kernel refuses (jumps or loads out of range, unknown
 *     instructions, BPF_MOD, no return at the end, memory read before it
 *     is written): -EINVAL at the right instruction, never a crash (and
 *     the kernel refuses each);
 *   - stacked filters combined as the kernel does;
 *   - the check on whole filters: which calls and actions refuse, and the
 *     sentence;
 *   - random programs: never a crash; and the same verdict as the kernel's
 *     own for random valid programs, installed in a child and asked about
 *     a real system call (getppid, whose arguments the kernel ignores).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch_inject.h"
#include "seccomp.h"

static int n_test, n_fail;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%sok %d - ", cond ? "" : "not ", ++n_test);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (!cond)
		n_fail++;
}

#define N(a)	     (sizeof(a) / sizeof((a)[0]))
#define LD(off)	     BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define LD_NR	     LD(offsetof(struct seccomp_data, nr))
#define LD_ARCH	     LD(offsetof(struct seccomp_data, arch))
#define LD_ARG(i)    LD(offsetof(struct seccomp_data, args[i]))
#define LD_HI(i)     LD(offsetof(struct seccomp_data, args[i]) + 4)
#define RET(v)	     BPF_STMT(BPF_RET | BPF_K, (v))
#define RET_A	     BPF_STMT(BPF_RET | BPF_A, 0)
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))

static const uint32_t audit_arch = ARCH_INJ_AUDIT;

/* The probe of the arch table named NAME with ARGS shown (first if NULL). */
static const struct seccomp_probe *probe(const char *name, const char *args)
{
	size_t n;
	const struct seccomp_probe *p = seccomp_runtime_calls(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].name, name) && (!args || !strcmp(p[i].args, args)))
			return &p[i];
	fprintf(stderr, "no probe %s(%s)\n", name, args ? args : "");
	exit(1);
}

/* Run PROG on D: its value, or 0xdead0000 | -error. */
static uint32_t run(const struct sock_filter *prog, size_t len, const struct seccomp_data *d,
		    size_t *at)
{
	uint32_t r = 0;
	size_t where = 0;
	int err = seccomp_bpf_run(prog, len, d, &r, &where);
	if (at)
		*at = where;
	return err ? 0xdead0000u | (uint32_t)-err : r;
}

/* Does the kernel install PROG (behind a prefix that lets every call but
 * getppid through)? 1, 0, or -1 if that cannot be told. */
static int kernel_accepts(const struct sock_filter *prog, size_t len)
{
	struct sock_filter p[64] = {LD_NR, JEQ(SYS_getppid, 1, 0), RET(SECCOMP_RET_ALLOW)};
	if (len > N(p) - 3)
		return -1;
	memcpy(p + 3, prog, len * sizeof(*prog));
	pid_t c = fork();
	if (c == 0) {
		struct sock_fprog fp = {(unsigned short)(len + 3), p};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			_exit(2);
		_exit(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) ? 3 : 0);
	}
	int st;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st) == 0 ? 1 : WEXITSTATUS(st) == 3 ? 0 : -1;
}

static void test_instructions(void)
{
	struct seccomp_data d;
	memset(&d, 0, sizeof(d));
	d.nr = 231;
	d.arch = 0xc000003e;
	d.instruction_pointer = 0x1122334455667788ull;
	d.args[0] = 0x0000000700000005ull;
	d.args[5] = 0xffffffff80000000ull;
	struct {
		const char *what;
		struct sock_filter p[8];
		size_t len;
		uint32_t want;
	} t[] = {
	    {"ld nr", {LD_NR, RET_A}, 2, 231},
	    {"ld arch", {LD_ARCH, RET_A}, 2, 0xc000003e},
	    {"ld ip low word", {LD(8), RET_A}, 2, 0x55667788},
	    {"ld ip high word", {LD(12), RET_A}, 2, 0x11223344},
	    {"ld args[0] low", {LD_ARG(0), RET_A}, 2, 5},
	    {"ld args[0] high", {LD_HI(0), RET_A}, 2, 7},
	    {"ld args[5] high (last word)", {LD_HI(5), RET_A}, 2, 0xffffffff},
	    {"ld len", {BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0), RET_A}, 2, 64},
	    {"ldx len, txa",
	     {BPF_STMT(BPF_LDX | BPF_W | BPF_LEN, 0), BPF_STMT(BPF_MISC | BPF_TXA, 0), RET_A},
	     3,
	     64},
	    {"ld imm", {BPF_STMT(BPF_LD | BPF_IMM, 77), RET_A}, 2, 77},
	    {"ldx imm, tax, txa",
	     {BPF_STMT(BPF_LDX | BPF_IMM, 9), BPF_STMT(BPF_LD | BPF_IMM, 4),
	      BPF_STMT(BPF_MISC | BPF_TXA, 0), RET_A},
	     4,
	     9},
	    {"tax",
	     {BPF_STMT(BPF_LD | BPF_IMM, 6), BPF_STMT(BPF_MISC | BPF_TAX, 0),
	      BPF_STMT(BPF_LD | BPF_IMM, 0), BPF_STMT(BPF_MISC | BPF_TXA, 0), RET_A},
	     5,
	     6},
	    {"st, ld mem",
	     {BPF_STMT(BPF_LD | BPF_IMM, 42), BPF_STMT(BPF_ST, 15), BPF_STMT(BPF_LD | BPF_IMM, 0),
	      BPF_STMT(BPF_LD | BPF_MEM, 15), RET_A},
	     5,
	     42},
	    {"stx, ldx mem",
	     {BPF_STMT(BPF_LDX | BPF_IMM, 43), BPF_STMT(BPF_STX, 3), BPF_STMT(BPF_LDX | BPF_IMM, 0),
	      BPF_STMT(BPF_LDX | BPF_MEM, 3), BPF_STMT(BPF_MISC | BPF_TXA, 0), RET_A},
	     6,
	     43},
	    {"add k", {LD_NR, BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 9), RET_A}, 3, 240},
	    {"sub k wraps",
	     {LD_NR, BPF_STMT(BPF_ALU | BPF_SUB | BPF_K, 232), RET_A},
	     3,
	     0xffffffff},
	    {"mul k", {LD_NR, BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, 3), RET_A}, 3, 693},
	    {"div k", {LD_NR, BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 10), RET_A}, 3, 23},
	    {"and k", {LD_NR, BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf), RET_A}, 3, 7},
	    {"or k", {LD_NR, BPF_STMT(BPF_ALU | BPF_OR | BPF_K, 0x100), RET_A}, 3, 0x1e7},
	    {"xor k", {LD_NR, BPF_STMT(BPF_ALU | BPF_XOR | BPF_K, 0xff), RET_A}, 3, 0x18},
	    {"lsh k", {LD_NR, BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 4), RET_A}, 3, 231 << 4},
	    {"rsh k", {LD_ARCH, BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 28), RET_A}, 3, 0xc},
	    {"neg", {LD_NR, BPF_STMT(BPF_ALU | BPF_NEG, 0), RET_A}, 3, (uint32_t)-231},
	    {"add x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 1), BPF_STMT(BPF_ALU | BPF_ADD | BPF_X, 0), RET_A},
	     4,
	     232},
	    {"sub x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 31), BPF_STMT(BPF_ALU | BPF_SUB | BPF_X, 0),
	      RET_A},
	     4,
	     200},
	    {"mul x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 2), BPF_STMT(BPF_ALU | BPF_MUL | BPF_X, 0), RET_A},
	     4,
	     462},
	    {"div x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 2), BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0), RET_A},
	     4,
	     115},
	    {"div by x = 0 returns 0",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 0), BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
	      RET(7)},
	     4,
	     0},
	    {"and x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 0xf0), BPF_STMT(BPF_ALU | BPF_AND | BPF_X, 0),
	      RET_A},
	     4,
	     0xe0},
	    {"or x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 0x10000), BPF_STMT(BPF_ALU | BPF_OR | BPF_X, 0),
	      RET_A},
	     4,
	     0x100e7},
	    {"xor x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 231), BPF_STMT(BPF_ALU | BPF_XOR | BPF_X, 0),
	      RET_A},
	     4,
	     0},
	    {"lsh x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 8), BPF_STMT(BPF_ALU | BPF_LSH | BPF_X, 0), RET_A},
	     4,
	     231 << 8},
	    {"rsh x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 3), BPF_STMT(BPF_ALU | BPF_RSH | BPF_X, 0), RET_A},
	     4,
	     28},
	    {"ja", {BPF_STMT(BPF_JMP | BPF_JA, 1), RET(1), RET(2)}, 3, 2},
	    {"jeq k true", {LD_NR, JEQ(231, 0, 1), RET(1), RET(2)}, 4, 1},
	    {"jeq k false", {LD_NR, JEQ(230, 0, 1), RET(1), RET(2)}, 4, 2},
	    {"jgt k",
	     {LD_NR, BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 231, 0, 1), RET(1), RET(2)},
	     4,
	     2},
	    {"jge k",
	     {LD_NR, BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 231, 0, 1), RET(1), RET(2)},
	     4,
	     1},
	    {"jgt is unsigned",
	     {LD_HI(5), BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 1, 0, 1), RET(1), RET(2)},
	     4,
	     1},
	    {"jset k",
	     {LD_NR, BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x20, 0, 1), RET(1), RET(2)},
	     4,
	     1},
	    {"jset k none",
	     {LD_NR, BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x18, 0, 1), RET(1), RET(2)},
	     4,
	     2},
	    {"jeq x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 231), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 1, 0),
	      RET(1), RET(2)},
	     5,
	     2},
	    {"jgt x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 230), BPF_JUMP(BPF_JMP | BPF_JGT | BPF_X, 0, 0, 1),
	      RET(1), RET(2)},
	     5,
	     1},
	    {"jge x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 232), BPF_JUMP(BPF_JMP | BPF_JGE | BPF_X, 0, 0, 1),
	      RET(1), RET(2)},
	     5,
	     2},
	    {"jset x",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 0x100),
	      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_X, 0, 0, 1), RET(1), RET(2)},
	     5,
	     2},
	    {"jump to the last instruction", {LD_NR, JEQ(231, 2, 0), RET(1), RET(2), RET(3)}, 5, 3},
	    {"ret k (full 32 bits)", {RET(0x7fff1234)}, 1, 0x7fff1234},
	};
	for (size_t i = 0; i < N(t); i++) {
		uint32_t got = run(t[i].p, t[i].len, &d, NULL);
		int k = kernel_accepts(t[i].p, t[i].len);
		ok(got == t[i].want && k == 1, "%s: %#x (want %#x; the kernel takes it: %d)",
		   t[i].what, got, t[i].want, k);
	}
}

static void test_malformed(void)
{
	struct seccomp_data d;
	memset(&d, 0, sizeof(d));
	struct {
		const char *what;
		struct sock_filter p[6];
		size_t len;
		size_t at;
	} t[] = {
	    {"empty program", {RET(0)}, 0, 0},
	    {"ja past the end", {BPF_STMT(BPF_JMP | BPF_JA, 1), RET(1)}, 2, 0},
	    {"ja k = 0xffffffff (no wrap)",
	     {BPF_STMT(BPF_JMP | BPF_JA, 0xffffffffu), RET(1)},
	     2,
	     0},
	    {"jeq true past the end", {LD_NR, JEQ(1, 1, 0), RET(1)}, 3, 1},
	    {"jeq false past the end", {LD_NR, JEQ(1, 0, 255), RET(1)}, 3, 1},
	    {"conditional jump as the last instruction", {RET(1), JEQ(1, 0, 0)}, 2, 1},
	    {"no return at the end", {LD_NR, RET(1), LD_NR}, 3, 2},
	    {"ld abs past seccomp_data", {LD(64), RET_A}, 2, 0},
	    {"ld abs far past it", {LD(0xfffffffcu), RET_A}, 2, 0},
	    {"ld abs unaligned", {LD(2), RET_A}, 2, 0},
	    {"ld half word (not for seccomp)",
	     {BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0), RET_A},
	     2,
	     0},
	    {"ld byte (not for seccomp)", {BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), RET_A}, 2, 0},
	    {"ld ind (not for seccomp)", {BPF_STMT(BPF_LD | BPF_W | BPF_IND, 0), RET_A}, 2, 0},
	    {"ldx msh (not for seccomp)", {BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0), RET_A}, 2, 0},
	    {"ld mem cell 16", {BPF_STMT(BPF_ST, 0), BPF_STMT(BPF_LD | BPF_MEM, 16), RET_A}, 3, 1},
	    {"st cell 16", {BPF_STMT(BPF_ST, 16), RET_A}, 2, 0},
	    {"ld mem never written", {BPF_STMT(BPF_LD | BPF_MEM, 2), RET_A}, 2, 0},
	    {"ld mem written on one path only",
	     {LD_NR, JEQ(0, 0, 1), BPF_STMT(BPF_ST, 2), BPF_STMT(BPF_LD | BPF_MEM, 2), RET_A},
	     5,
	     3},
	    {"div by constant 0", {LD_NR, BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0), RET_A}, 3, 1},
	    {"mod k (classic BPF, not seccomp)",
	     {LD_NR, BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 10), RET_A},
	     3,
	     1},
	    {"mod x (classic BPF, not seccomp)",
	     {LD_NR, BPF_STMT(BPF_LDX | BPF_IMM, 3), BPF_STMT(BPF_ALU | BPF_MOD | BPF_X, 0), RET_A},
	     4,
	     2},
	    {"lsh by 32", {LD_NR, BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32), RET_A}, 3, 1},
	    {"rsh by 33", {LD_NR, BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, 33), RET_A}, 3, 1},
	    {"unknown alu op", {LD_NR, BPF_STMT(BPF_ALU | 0xf0 | BPF_K, 1), RET_A}, 3, 1},
	    {"unknown jump op", {LD_NR, BPF_JUMP(BPF_JMP | 0x60 | BPF_K, 1, 0, 0), RET(1)}, 3, 1},
	    {"ja with the x bit", {BPF_STMT(BPF_JMP | BPF_JA | BPF_X, 0), RET(1)}, 2, 0},
	    {"st with a size", {BPF_STMT(BPF_ST | BPF_H, 0), RET(1)}, 2, 0},
	    {"code with stray bits", {BPF_STMT(BPF_RET | BPF_K | 0x8000, 1)}, 1, 0},
	    {"misc op other than tax/txa", {BPF_STMT(BPF_MISC | 0x40, 0), RET(1)}, 2, 0},
	};
	for (size_t i = 0; i < N(t); i++) {
		size_t at = 99;
		uint32_t got = run(t[i].p, t[i].len, &d, &at);
		int k = t[i].len ? kernel_accepts(t[i].p, t[i].len) : 0;
		ok(got == (0xdead0000u | EINVAL) && at == t[i].at && k == 0,
		   "refused: %s (%#x at %zu, want -EINVAL at %zu; the kernel takes it: %d)",
		   t[i].what, got, at, t[i].at, k);
	}
	uint32_t r;
	ok(seccomp_bpf_run(NULL, 3, &d, &r, NULL) == -EINVAL, "refused: no program");
	static struct sock_filter big[BPF_MAXINSNS + 1];
	for (size_t i = 0; i < N(big); i++)
		big[i] = (struct sock_filter)RET(0);
	ok(seccomp_bpf_run(big, N(big), &d, &r, NULL) == -EINVAL,
	   "refused: longer than BPF_MAXINSNS");
	ok(seccomp_bpf_run(big, BPF_MAXINSNS, &d, &r, NULL) == 0, "accepted: BPF_MAXINSNS long");
}

static struct seccomp_prog prog1(const struct sock_filter *p, size_t n)
{
	struct seccomp_prog s = {p, n};
	return s;
}

static void test_stacking(void)
{
	struct seccomp_data d;
	memset(&d, 0, sizeof(d));
	struct sock_filter allow[] = {RET(SECCOMP_RET_ALLOW)};
	struct sock_filter log[] = {RET(SECCOMP_RET_LOG)};
	struct sock_filter trace[] = {RET(SECCOMP_RET_TRACE | 3)};
	struct sock_filter notif[] = {RET(SECCOMP_RET_USER_NOTIF)};
	struct sock_filter err5[] = {RET(SECCOMP_RET_ERRNO | 5)};
	struct sock_filter err7[] = {RET(SECCOMP_RET_ERRNO | 7)};
	struct sock_filter trap[] = {RET(SECCOMP_RET_TRAP | 1)};
	struct sock_filter kthread[] = {RET(SECCOMP_RET_KILL_THREAD)};
	struct sock_filter kproc[] = {RET(SECCOMP_RET_KILL_PROCESS)};
	struct sock_filter unknown[] = {RET(0x00010000)}; /* between KILL_THREAD and TRAP */
	struct sock_filter bad[] = {BPF_STMT(BPF_JMP | BPF_JA, 5), RET(0)};
	struct {
		const char *what;
		struct seccomp_prog p[3];
		size_t n;
		uint32_t want;
	} t[] = {
	    {"no filter: allow", {{0}}, 0, SECCOMP_RET_ALLOW},
	    {"log over allow", {prog1(allow, 1), prog1(log, 1)}, 2, SECCOMP_RET_LOG},
	    {"trace over log", {prog1(log, 1), prog1(trace, 1)}, 2, SECCOMP_RET_TRACE | 3},
	    {"user_notif over trace",
	     {prog1(trace, 1), prog1(notif, 1)},
	     2,
	     SECCOMP_RET_USER_NOTIF},
	    {"errno over user_notif", {prog1(notif, 1), prog1(err5, 1)}, 2, SECCOMP_RET_ERRNO | 5},
	    {"the newest errno among two",
	     {prog1(err7, 1), prog1(err5, 1)},
	     2,
	     SECCOMP_RET_ERRNO | 7},
	    {"the newest errno, other order",
	     {prog1(err5, 1), prog1(err7, 1)},
	     2,
	     SECCOMP_RET_ERRNO | 5},
	    {"trap over errno",
	     {prog1(err5, 1), prog1(trap, 1), prog1(allow, 1)},
	     3,
	     SECCOMP_RET_TRAP | 1},
	    {"kill_thread over trap",
	     {prog1(trap, 1), prog1(kthread, 1)},
	     2,
	     SECCOMP_RET_KILL_THREAD},
	    {"kill_process over kill_thread",
	     {prog1(kthread, 1), prog1(kproc, 1)},
	     2,
	     SECCOMP_RET_KILL_PROCESS},
	    {"an unknown action ranks by its value",
	     {prog1(trap, 1), prog1(unknown, 1)},
	     2,
	     0x00010000},
	};
	for (size_t i = 0; i < N(t); i++) {
		uint32_t r = 0;
		int err = seccomp_filters_run(t[i].p, t[i].n, &d, &r, NULL, NULL);
		ok(!err && r == t[i].want, "stacked: %s (%#x, want %#x)", t[i].what, r, t[i].want);
	}
	struct seccomp_prog two[2] = {prog1(allow, 1), prog1(bad, 2)};
	size_t which = 9, at = 9;
	uint32_t r;
	int err = seccomp_filters_run(two, 2, &d, &r, &which, &at);
	ok(err == -EINVAL && which == 1 && at == 0,
	   "stacked: a malformed filter is named (filter %zu, instruction %zu)", which, at);
	ok(seccomp_harm(SECCOMP_RET_ALLOW) == NULL && seccomp_harm(SECCOMP_RET_LOG) == NULL &&
	       seccomp_harm(SECCOMP_RET_ERRNO | EPERM) == NULL,
	   "allow, log and errno harm nothing");
	ok(seccomp_harm(SECCOMP_RET_KILL_PROCESS) && seccomp_harm(SECCOMP_RET_KILL_THREAD) &&
	       seccomp_harm(SECCOMP_RET_TRAP) && seccomp_harm(SECCOMP_RET_TRACE) &&
	       seccomp_harm(SECCOMP_RET_USER_NOTIF) && seccomp_harm(0x00010000),
	   "kill, trap, trace, user_notif and unknown actions harm");
}

/* A filter: arch check, then RET ACTION when the call is NR (and, when
 * ARG >= 0, args[ARG] & MASK == VAL), else ALLOW. */
struct fbuf {
	struct sock_filter p[16];
	size_t n;
};

static struct fbuf filter_on(int nr, int arg, uint32_t mask, uint32_t val, uint32_t action)
{
	struct fbuf f = {{LD_ARCH, JEQ(audit_arch, 1, 0), RET(SECCOMP_RET_KILL_PROCESS), LD_NR}, 4};
	if (arg < 0) {
		f.p[f.n++] = (struct sock_filter)JEQ((uint32_t)nr, 0, 1);
	} else {
		f.p[f.n++] = (struct sock_filter)JEQ((uint32_t)nr, 0, 4);
		f.p[f.n++] = (struct sock_filter)LD_ARG(arg);
		f.p[f.n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask);
		f.p[f.n++] = (struct sock_filter)JEQ(val, 0, 1);
	}
	f.p[f.n++] = (struct sock_filter)RET(action);
	f.p[f.n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	return f;
}

static int check1(const struct fbuf *f, char *why, size_t n)
{
	struct seccomp_prog p = {f->p, f->n};
	why[0] = 0;
	return seccomp_check_filters(&p, 1, "its seccomp filter", why, n);
}

static void test_check(void)
{
	char why[512];
	const struct seccomp_probe *mb = probe("membarrier", NULL);
	const struct seccomp_probe *mp = probe("mprotect", NULL);
	const struct seccomp_probe *mm = probe("mmap", NULL);
	const struct seccomp_probe *so = probe("socket", NULL);
	const struct seccomp_probe *gp = probe("getpid", NULL);
	const struct seccomp_probe *c3 = probe("clone3", NULL);
	(void)probe("clone", "CLONE_VM|CLONE_THREAD|...");
	(void)probe("openat", "O_RDONLY|O_CLOEXEC");
	(void)probe("openat", "O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC");
	(void)probe("mprotect", "PROT_READ|PROT_WRITE|PROT_EXEC");
	(void)probe("mmap", "PROT_READ|PROT_EXEC");

	struct sock_filter allow[] = {RET(SECCOMP_RET_ALLOW)};
	struct seccomp_prog pa = {allow, 1};
	ok(seccomp_check_filters(&pa, 1, "its seccomp filter", why, sizeof(why)) == 0,
	   "check: allow-all is safe");

	struct fbuf f = filter_on(mb->nr, -1, 0, 0, SECCOMP_RET_KILL_PROCESS);
	int r = check1(&f, why, sizeof(why));
	ok(r == 1 && !strcmp(why, "its seccomp filter would kill it at "
				  "membarrier(MEMBARRIER_CMD_QUERY), which patching needs; "
				  "not attaching"),
	   "check: kill on membarrier refuses: %s", why);

	f = filter_on(so->nr, 0, 0xffffffff, AF_UNIX, SECCOMP_RET_KILL_THREAD);
	r = check1(&f, why, sizeof(why));
	ok(r == 1 && strstr(why, "would kill the thread that makes it at socket(AF_UNIX, "),
	   "check: kill_thread on socket(AF_UNIX) refuses: %s", why);
	f = filter_on(so->nr, 0, 0xffffffff, AF_INET, SECCOMP_RET_KILL_PROCESS);
	ok(check1(&f, why, sizeof(why)) == 0, "check: kill on socket(AF_INET) only is safe");

	/* MemoryDenyWriteExecute: W+X mmap and mprotect fail with EPERM */
	struct sock_filter mdwe[] = {
	    LD_ARCH,
	    JEQ(audit_arch, 1, 0),
	    RET(SECCOMP_RET_KILL_PROCESS),
	    LD_NR,
	    JEQ((uint32_t)mm->nr, 1, 0),
	    JEQ((uint32_t)mp->nr, 0, 4),
	    LD_ARG(2),
	    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
	    JEQ(PROT_WRITE | PROT_EXEC, 0, 1),
	    RET(SECCOMP_RET_ERRNO | EPERM),
	    RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_prog pm = {mdwe, N(mdwe)};
	ok(seccomp_check_filters(&pm, 1, "its seccomp filter", why, sizeof(why)) == 0,
	   "check: W+X refused with EPERM is safe");
	mdwe[9] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS);
	r = seccomp_check_filters(&pm, 1, "its seccomp filter", why, sizeof(why));
	ok(r == 1 && strstr(why, "kill it at mprotect(PROT_READ|PROT_WRITE|PROT_EXEC), which "
				 "patching needs"),
	   "check: W+X killed refuses at mprotect: %s", why);

	f = filter_on(gp->nr, -1, 0, 0, SECCOMP_RET_TRAP);
	ok(check1(&f, why, sizeof(why)) == 1 && strstr(why, "send it SIGSYS at getpid()"),
	   "check: trap refuses: %s", why);
	f = filter_on(c3->nr, -1, 0, 0, SECCOMP_RET_USER_NOTIF);
	ok(check1(&f, why, sizeof(why)) == 1 && strstr(why, "supervisor") &&
	       strstr(why, "clone3()"),
	   "check: user_notif refuses: %s", why);
	f = filter_on(gp->nr, -1, 0, 0, SECCOMP_RET_TRACE);
	ok(check1(&f, why, sizeof(why)) == 1 && strstr(why, "tracer"), "check: trace refuses: %s",
	   why);
	f = filter_on(c3->nr, -1, 0, 0, SECCOMP_RET_ERRNO | ENOSYS);
	ok(check1(&f, why, sizeof(why)) == 0, "check: clone3 refused with ENOSYS is safe");
	f = filter_on(gp->nr, -1, 0, 0, SECCOMP_RET_LOG);
	ok(check1(&f, why, sizeof(why)) == 0, "check: log is safe");
	struct sock_filter errall[] = {RET(SECCOMP_RET_ERRNO | EPERM)};
	struct seccomp_prog pe = {errall, 1};
	ok(seccomp_check_filters(&pe, 1, "its seccomp filter", why, sizeof(why)) == 0,
	   "check: every call failing with EPERM is safe");

	/* another architecture's calls killed: not ours */
	struct sock_filter other[] = {LD_ARCH, JEQ(audit_arch, 0, 1), RET(SECCOMP_RET_ALLOW),
				      RET(SECCOMP_RET_KILL_PROCESS)};
	struct seccomp_prog po = {other, N(other)};
	ok(seccomp_check_filters(&po, 1, "its seccomp filter", why, sizeof(why)) == 0,
	   "check: killing other architectures' calls is safe");

	/* stacked: allow-all newest, kill on membarrier older */
	f = filter_on(mb->nr, -1, 0, 0, SECCOMP_RET_KILL_PROCESS);
	struct seccomp_prog st[2] = {{allow, 1}, {f.p, f.n}};
	ok(seccomp_check_filters(st, 2, "the seccomp filter of its thread 7", why, sizeof(why)) ==
		   1 &&
	       !strncmp(why, "the seccomp filter of its thread 7 would kill it at membarrier", 62),
	   "check: an older filter's kill counts: %s", why);

	struct sock_filter bad[] = {LD_NR, JEQ(1, 0, 9), RET(SECCOMP_RET_ALLOW)};
	struct seccomp_prog pb[2] = {{allow, 1}, {bad, N(bad)}};
	r = seccomp_check_filters(pb, 2, "its seccomp filter", why, sizeof(why));
	ok(r == -EINVAL &&
	       strstr(why, "cannot evaluate its seccomp filter (filter 1 of 2 in the order they "
			   "were installed: instruction 1, code 0x15,"),
	   "check: a malformed filter refuses: %s", why);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* Random bytes for programs: no crash, and a verdict or -EINVAL. */
static void test_fuzz(void)
{
	struct seccomp_data d;
	int bad = 0;
	size_t valid = 0;
	for (int i = 0; i < 20000; i++) {
		struct sock_filter p[24];
		size_t n = 1 + rnd() % 24;
		for (size_t k = 0; k < n; k++) {
			p[k].code = (uint16_t)(rnd() % 4 ? rnd() & 0xff : rnd());
			p[k].jt = (uint8_t)(rnd() % 4 ? rnd() % 4 : rnd());
			p[k].jf = (uint8_t)(rnd() % 4 ? rnd() % 4 : rnd());
			p[k].k = rnd() % 3 ? rnd() % 72 : rnd();
		}
		if (rnd() % 2)
			p[n - 1] = (struct sock_filter)RET(rnd());
		uint32_t words[sizeof(d) / 4];
		for (size_t k = 0; k < N(words); k++)
			words[k] = rnd();
		memcpy(&d, words, sizeof(d));
		uint32_t r;
		size_t at = 0;
		int err = seccomp_bpf_run(p, n, &d, &r, &at);
		if (err && (err != -EINVAL || at >= n))
			bad++;
		valid += !err;
	}
	ok(!bad, "20000 random programs: %zu run, the rest refused, %d wrong answers", valid, bad);
}

/*
 * Random valid programs: ours and the kernel's verdicts. The kernel's:
 * a child installs the program(s), behind a prefix that lets every call
 * but getppid through, then calls getppid with each set of arguments;
 * ERRNO|v comes back as errno v, TRACE with no tracer as ENOSYS, ALLOW and
 * LOG as getppid's value.
 */
#define DIFF_DATA 8

static int gen_body(struct sock_filter *p, size_t max)
{
	size_t n = 2 + rnd() % (max - 2), k = 0;
	int cell = rnd() % 2; /* memory cell 0 is written first, then may be read */
	if (cell)
		p[k++] = (struct sock_filter)BPF_STMT(BPF_ST, 0);
	for (; k + 1 < n; k++) {
		size_t left = n - k - 1;
		uint32_t c = rnd() % 20;
		struct sock_filter f;
		if (c < 5) {
			/* nr, arch, args (not the instruction pointer) */
			uint32_t w = rnd() % 14;
			f = (struct sock_filter)LD(w < 2 ? w * 4 : 16 + (w - 2) * 4);
		} else if (c < 7) {
			static const uint16_t ops[] = {BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_AND,
						       BPF_OR,	BPF_XOR, BPF_LSH, BPF_RSH};
			uint16_t op = ops[rnd() % N(ops)];
			int x = rnd() % 2;
			uint32_t kv = rnd() % 3 ? rnd() % 40 : rnd();
			if (!x && op == BPF_DIV && !kv)
				kv = 3;
			if (!x && (op == BPF_LSH || op == BPF_RSH))
				kv %= 32;
			f = (struct sock_filter)BPF_STMT(BPF_ALU | op | (x ? BPF_X : BPF_K), kv);
		} else if (c < 8) {
			f = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_NEG, 0);
		} else if (c < 9) {
			f = (struct sock_filter)BPF_STMT(BPF_MISC | (rnd() % 2 ? BPF_TAX : BPF_TXA),
							 0);
		} else if (c < 10) {
			f = (struct sock_filter)BPF_STMT(rnd() % 2 ? BPF_LD | BPF_IMM
								   : BPF_LDX | BPF_IMM,
							 rnd() % 3 ? rnd() % 8 : rnd());
		} else if (c < 11) {
			f = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_W | BPF_LEN, 0);
		} else if (c < 12) {
			f = (struct sock_filter)BPF_STMT(rnd() % 2 ? BPF_ST : BPF_STX, 0);
		} else if (c < 13 && cell) {
			f = (struct sock_filter)BPF_STMT(
			    rnd() % 2 ? BPF_LD | BPF_MEM : BPF_LDX | BPF_MEM, 0);
		} else if (c < 18 && left > 1) {
			static const uint16_t jops[] = {BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET};
			uint8_t jt = (uint8_t)(rnd() % (left < 6 ? left : 6));
			uint8_t jf = (uint8_t)(rnd() % (left < 6 ? left : 6));
			uint16_t src = rnd() % 4 ? BPF_K : BPF_X;
			f = (struct sock_filter)BPF_JUMP(BPF_JMP | jops[rnd() % 4] | src,
							 rnd() % 2 ? rnd() % 8 : rnd(), jt, jf);
		} else if (c < 19 && left > 1) {
			f = (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, rnd() % (left - 1));
		} else if (rnd() % 3 == 0) {
			f = (struct sock_filter)RET_A; /* made an errno by fix_ret_a */
		} else {
			/* a return in the middle */
			static const uint32_t acts[] = {SECCOMP_RET_ALLOW, SECCOMP_RET_LOG,
							SECCOMP_RET_TRACE, SECCOMP_RET_ERRNO};
			uint32_t a = acts[rnd() % N(acts)];
			uint32_t v = 1 + rnd() % 200;
			f = (struct sock_filter)RET(
			    a == SECCOMP_RET_ERRNO ? a | (v == ENOSYS ? v + 1 : v) : a);
		}
		p[k] = f;
	}
	uint32_t v = 1 + rnd() % 200;
	p[n - 1] = (struct sock_filter)RET(SECCOMP_RET_ERRNO | (v == ENOSYS ? v + 1 : v));
	return (int)n;
}

/* A RET A is only safe to give the kernel if A holds an action we can
 * see come back: replace it, before the body runs, by "A &= 0xff; A |=
 * ERRNO" (so ERRNO|0..255; 0 is a success and ENOSYS is TRACE's). */
static size_t fix_ret_a(struct sock_filter *in, size_t n, struct sock_filter *out, size_t max)
{
	/* Each RET A becomes a jump to a tail: AND 0xff, OR ERRNO, JEQ ENOSYS, RET A, RET 1. */
	size_t m = 0, tail = 0;
	for (size_t k = 0; k < n; k++)
		tail += in[k].code == (BPF_RET | BPF_A);
	if (!tail) {
		memcpy(out, in, n * sizeof(*in));
		return n;
	}
	if (n + 6 > max)
		return 0;
	for (size_t k = 0; k < n; k++) {
		out[m] = in[k];
		if (in[k].code == (BPF_RET | BPF_A))
			out[m] =
			    (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, (uint32_t)(n - k - 1));
		m++;
	}
	out[m++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xff);
	out[m++] = (struct sock_filter)JEQ(ENOSYS, 0, 1);
	out[m++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_IMM, 1);
	out[m++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO);
	out[m++] = (struct sock_filter)RET_A;
	return m;
}

/* What the child sees for verdict RET: errno, 0 for a success, -1 for
 * death by SIGSYS (KILL_*, TRAP, an action the kernel does not know, and
 * KILL_THREAD from a division by zero). */
static int expect_errno(uint32_t ret)
{
	switch (ret & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ALLOW:
	case SECCOMP_RET_LOG:
		return 0;
	case SECCOMP_RET_ERRNO: /* at most MAX_ERRNO */
		return (ret & SECCOMP_RET_DATA) > 4095 ? 4095 : (int)(ret & SECCOMP_RET_DATA);
	case SECCOMP_RET_TRACE:	     /* no tracer */
	case SECCOMP_RET_USER_NOTIF: /* no listener */
		return ENOSYS;
	default:
		return -1;
	}
}

static void test_kernel(void)
{
	int tried = 0, differ = 0, failed = 0, kills = 0, refused = 0;
	for (int i = 0; i < 300 && differ < 5 && failed < 3; i++) {
		struct sock_filter body[3][40], prog[3][64];
		struct seccomp_prog progs[3];
		size_t nf = 1 + rnd() % 3;
		for (size_t f = 0; f < nf; f++) {
			int n = gen_body(body[f], 32);
			/* prefix: everything but getppid is allowed */
			struct sock_filter pre[3] = {LD_NR, JEQ(SYS_getppid, 1, 0),
						     RET(SECCOMP_RET_ALLOW)};
			memcpy(prog[f], pre, sizeof(pre));
			size_t m = fix_ret_a(body[f], (size_t)n, prog[f] + 3, 61);
			progs[f].insn = prog[f];
			progs[f].len = m + 3;
		}
		/* One in four: an instruction of the body mutated, which the
		 * kernel must refuse exactly when we do. */
		if (rnd() % 4 == 0) {
			struct seccomp_prog *m = &progs[rnd() % nf];
			struct sock_filter *f =
			    (struct sock_filter *)&m->insn[3 + rnd() % (m->len - 3)];
			switch (rnd() % 4) {
			case 0:
				f->code = (uint16_t)(rnd() & 0xff);
				break;
			case 1:
				f->k = rnd() % 4 ? rnd() % 80 : rnd();
				break;
			case 2:
				f->jt = (uint8_t)rnd();
				break;
			default:
				f->jf = (uint8_t)(rnd() % 70);
			}
		}
		/* newest first for us; the child installs the oldest first */
		struct seccomp_data d[DIFF_DATA];
		int want[DIFF_DATA];
		int valid = 1;
		for (int k = 0; k < DIFF_DATA; k++) {
			memset(&d[k], 0, sizeof(d[k]));
			d[k].nr = SYS_getppid;
			d[k].arch = audit_arch;
			for (int a = 0; a < 6; a++)
				d[k].args[a] =
				    rnd() % 2 ? rnd() % 8 : (uint64_t)rnd() << 32 | rnd();
			uint32_t r;
			if (valid && seccomp_filters_run(progs, nf, &d[k], &r, NULL, NULL))
				valid = 0;
			want[k] = valid ? expect_errno(r) : 0;
		}
		int pfd[2];
		if (pipe(pfd))
			break;
		pid_t c = fork();
		if (c == 0) {
			close(pfd[0]);
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
				_exit(2);
			for (size_t f = nf; f-- > 0;) {
				struct sock_fprog fp = {(unsigned short)progs[f].len,
							(struct sock_filter *)progs[f].insn};
				if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp))
					_exit(3);
			}
			for (int k = 0; k < DIFF_DATA; k++) {
				errno = 0;
				long r =
				    syscall(SYS_getppid, d[k].args[0], d[k].args[1], d[k].args[2],
					    d[k].args[3], d[k].args[4], d[k].args[5]);
				int got = r < 0 ? errno : 0;
				if (write(pfd[1], &got, sizeof(got)) != sizeof(got))
					_exit(4);
			}
			_exit(0);
		}
		close(pfd[1]);
		int got[DIFF_DATA + 1], ngot = 0;
		ssize_t rd;
		while (c > 0 && ngot <= DIFF_DATA &&
		       (rd = read(pfd[0], &got[ngot], sizeof(got[0]))) == sizeof(got[0]))
			ngot++;
		close(pfd[0]);
		int st = 0;
		if (c > 0)
			waitpid(c, &st, 0);
		/* the answers up to the first kill, then death by SIGSYS */
		int nwant = 0;
		while (nwant < DIFF_DATA && want[nwant] >= 0)
			nwant++;
		int died = WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS;
		int kernel_refused = WIFEXITED(st) && WEXITSTATUS(st) == 3;
		if (c < 0 || (!died && !kernel_refused && (!WIFEXITED(st) || WEXITSTATUS(st)))) {
			printf("# child: status %#x\n", st);
			failed++;
			continue;
		}
		tried++;
		refused += !valid;
		if (kernel_refused != !valid) {
			differ++;
			printf("# program %d: the kernel %s it, we %s it\n", i,
			       kernel_refused ? "refused" : "accepted",
			       valid ? "accept" : "refuse");
			continue;
		}
		if (!valid)
			continue;
		kills += nwant < DIFF_DATA;
		int same = ngot == nwant && died == (nwant < DIFF_DATA);
		for (int k = 0; same && k < ngot; k++)
			same = got[k] == want[k];
		if (!same) {
			differ++;
			printf("# program %d: the kernel answered %d calls%s, we expected %d%s\n",
			       i, ngot, died ? " then killed it" : "", nwant,
			       nwant < DIFF_DATA ? " then a kill" : "");
			for (int k = 0; k < ngot && k < nwant; k++)
				if (got[k] != want[k])
					printf("# data %d: kernel errno %d, ours %d\n", k, got[k],
					       want[k]);
		}
	}
	ok(!differ && !failed && tried > 100,
	   "%d random stacks of programs (%d killing, %d refused): the kernel's verdicts are ours "
	   "(%d differ, %d failed)",
	   tried, kills, refused, differ, failed);
}

int main(void)
{
	test_instructions();
	test_malformed();
	test_stacking();
	test_check();
	test_fuzz();
	test_kernel();
	printf("1..%d\n", n_test);
	return n_fail != 0;
}
