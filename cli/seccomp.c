/* SPDX-License-Identifier: MIT */
/*
 * seccomp.c - the seccomp check before an attach.
 *
 * A process under a seccomp filter (systemd's SystemCallFilter= and
 * MemoryDenyWriteExecute=, a container's profile) may forbid a system call
 * that loading the runtime or the runtime itself makes; a filter that
 * answers it with SECCOMP_RET_KILL_* would kill the process. So before an
 * attach every thread's filters are read (PTRACE_SECCOMP_GET_FILTER, which
 * takes CAP_SYS_ADMIN) and run here, on every such call
 * (seccomp_calls.c), with the kernel's
 * rules:
 *  - a filter is a classic BPF program over struct seccomp_data, of the
 *    instructions seccomp accepts (seccomp_check_filter in the kernel); a
 *    program the kernel would have refused is not guessed at: the attach
 *    is refused;
 *  - stacked filters all run; the action that comes first wins:
 *    KILL_PROCESS, KILL_THREAD, TRAP, ERRNO, USER_NOTIF, TRACE, LOG, ALLOW
 *    (SECCOMP_RET_ACTION_FULL read as a signed number, smaller first; the
 *    newest filter among equal actions).
 * A call answered with KILL_*, TRAP (SIGSYS), TRACE or USER_NOTIF (handed to
 * a tracer or a supervisor, which may do anything) refuses the attach.
 * ERRNO is fine: the runtime lives with failed calls (a refused W+X
 * mprotect makes it write code through /proc/self/mem, a refused
 * membarrier makes it sync through mprotect, a refused socket leaves the
 * control endpoint off).
 *
 * Not covered: a filter deciding on the instruction pointer (asked with
 * 0) or on an address, length or descriptor argument (asked with the
 * table's representative values), or one that a thread installs after the
 * check.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "arch_inject.h"
#include "inject.h"
#include "seccomp.h"

#define MEMWORDS BPF_MEMWORDS

/* What seccomp accepts, and the rules of classic BPF for it: jumps within
 * the program, loads within seccomp_data, memory cells that exist, no
 * division by a zero constant, shifts below 32. */
static int insn_valid(const struct sock_filter *f, size_t len, size_t pc)
{
	uint32_t k = f->k;
	size_t left = len - pc - 1; /* instructions after this one */
	switch (f->code) {
	case BPF_LD | BPF_W | BPF_ABS:
		return k < sizeof(struct seccomp_data) && !(k & 3);
	case BPF_LD | BPF_W | BPF_LEN:
	case BPF_LDX | BPF_W | BPF_LEN:
	case BPF_LD | BPF_IMM:
	case BPF_LDX | BPF_IMM:
	case BPF_MISC | BPF_TAX:
	case BPF_MISC | BPF_TXA:
	case BPF_RET | BPF_K:
	case BPF_RET | BPF_A:
	case BPF_ALU | BPF_NEG:
		return 1;
	case BPF_LD | BPF_MEM:
	case BPF_LDX | BPF_MEM:
	case BPF_ST:
	case BPF_STX:
		return k < MEMWORDS;
	case BPF_ALU | BPF_DIV | BPF_K:
		return k != 0;
	case BPF_ALU | BPF_LSH | BPF_K:
	case BPF_ALU | BPF_RSH | BPF_K:
		return k < 32;
	case BPF_ALU | BPF_ADD | BPF_K:
	case BPF_ALU | BPF_SUB | BPF_K:
	case BPF_ALU | BPF_MUL | BPF_K:
	case BPF_ALU | BPF_AND | BPF_K:
	case BPF_ALU | BPF_OR | BPF_K:
	case BPF_ALU | BPF_XOR | BPF_K:
	case BPF_ALU | BPF_ADD | BPF_X:
	case BPF_ALU | BPF_SUB | BPF_X:
	case BPF_ALU | BPF_MUL | BPF_X:
	case BPF_ALU | BPF_DIV | BPF_X:
	case BPF_ALU | BPF_AND | BPF_X:
	case BPF_ALU | BPF_OR | BPF_X:
	case BPF_ALU | BPF_XOR | BPF_X:
	case BPF_ALU | BPF_LSH | BPF_X:
	case BPF_ALU | BPF_RSH | BPF_X:
		return 1;
	case BPF_JMP | BPF_JA:
		return k < left;
	case BPF_JMP | BPF_JEQ | BPF_K:
	case BPF_JMP | BPF_JEQ | BPF_X:
	case BPF_JMP | BPF_JGT | BPF_K:
	case BPF_JMP | BPF_JGT | BPF_X:
	case BPF_JMP | BPF_JGE | BPF_K:
	case BPF_JMP | BPF_JGE | BPF_X:
	case BPF_JMP | BPF_JSET | BPF_K:
	case BPF_JMP | BPF_JSET | BPF_X:
		return f->jt < left && f->jf < left;
	default:
		/* BPF_MOD too: classic BPF has it, seccomp does not take it
		 * (the kernel refuses such a filter). */
		return 0;
	}
}

static int is_cond_jump(uint16_t code)
{
	return BPF_CLASS(code) == BPF_JMP && BPF_OP(code) != BPF_JA;
}

/* The kernel's check that no memory cell is read before every path to
 * the read has written it (check_load_and_stores). */
static int mem_valid(const struct sock_filter *insn, size_t len, size_t *at)
{
	uint16_t *masks = malloc(len * sizeof(*masks));
	if (!masks)
		return -ENOMEM;
	memset(masks, 0xff, len * sizeof(*masks));
	uint16_t valid = 0;
	int err = 0;
	for (size_t pc = 0; pc < len && !err; pc++) {
		const struct sock_filter *f = &insn[pc];
		valid &= masks[pc];
		if (f->code == BPF_ST || f->code == BPF_STX) {
			valid |= (uint16_t)(1u << f->k);
		} else if (f->code == (BPF_LD | BPF_MEM) || f->code == (BPF_LDX | BPF_MEM)) {
			if (!(valid & (1u << f->k))) {
				*at = pc;
				err = -EINVAL;
			}
		} else if (f->code == (BPF_JMP | BPF_JA)) {
			masks[pc + 1 + f->k] &= valid;
			valid = 0xffff;
		} else if (is_cond_jump(f->code)) {
			masks[pc + 1 + f->jt] &= valid;
			masks[pc + 1 + f->jf] &= valid;
			valid = 0xffff;
		}
	}
	free(masks);
	return err;
}

static int prog_valid(const struct sock_filter *insn, size_t len, size_t *at)
{
	*at = 0;
	if (!insn || !len || len > BPF_MAXINSNS)
		return -EINVAL;
	for (size_t pc = 0; pc < len; pc++)
		if (!insn_valid(&insn[pc], len, pc)) {
			*at = pc;
			return -EINVAL;
		}
	uint16_t last = insn[len - 1].code;
	if (last != (BPF_RET | BPF_K) && last != (BPF_RET | BPF_A)) {
		*at = len - 1;
		return -EINVAL;
	}
	return mem_valid(insn, len, at);
}

static uint32_t alu(uint16_t op, uint32_t a, uint32_t v)
{
	switch (op) {
	case BPF_ADD:
		return a + v;
	case BPF_SUB:
		return a - v;
	case BPF_MUL:
		return a * v;
	case BPF_DIV:
		return a / v; /* v != 0: checked by the caller */
	case BPF_AND:
		return a & v;
	case BPF_OR:
		return a | v;
	case BPF_XOR:
		return a ^ v;
	case BPF_LSH:
		return a << (v & 31); /* a register count: as x86 shifts */
	case BPF_RSH:
		return a >> (v & 31);
	case BPF_NEG:
		return -a;
	}
	return a;
}

static int cond(uint16_t op, uint32_t a, uint32_t v)
{
	switch (op) {
	case BPF_JEQ:
		return a == v;
	case BPF_JGT:
		return a > v;
	case BPF_JGE:
		return a >= v;
	case BPF_JSET:
		return (a & v) != 0;
	}
	return 0;
}

int seccomp_bpf_run(const struct sock_filter *insn, size_t len, const struct seccomp_data *d,
		    uint32_t *ret, size_t *at)
{
	size_t where = 0;
	int err = prog_valid(insn, len, &where);
	if (at)
		*at = where;
	if (err)
		return err;
	unsigned char data[sizeof(struct seccomp_data)];
	memcpy(data, d, sizeof(data)); /* loads read it in the host's byte order */
	uint32_t a = 0, x = 0, mem[MEMWORDS] = {0};
	/* Every jump goes forward: at most LEN steps. */
	for (size_t pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &insn[pc];
		uint32_t k = f->k;
		uint16_t code = f->code;
		switch (BPF_CLASS(code)) {
		case BPF_LD:
			if (code == (BPF_LD | BPF_W | BPF_ABS))
				memcpy(&a, data + k, sizeof(a));
			else if (code == (BPF_LD | BPF_W | BPF_LEN))
				a = sizeof(struct seccomp_data);
			else if (code == (BPF_LD | BPF_IMM))
				a = k;
			else
				a = mem[k];
			break;
		case BPF_LDX:
			if (code == (BPF_LDX | BPF_W | BPF_LEN))
				x = sizeof(struct seccomp_data);
			else if (code == (BPF_LDX | BPF_IMM))
				x = k;
			else
				x = mem[k];
			break;
		case BPF_ST:
			mem[k] = a;
			break;
		case BPF_STX:
			mem[k] = x;
			break;
		case BPF_MISC:
			if (BPF_MISCOP(code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		case BPF_RET:
			*ret = BPF_RVAL(code) == BPF_K ? k : a;
			return 0;
		case BPF_ALU: {
			uint32_t v = BPF_SRC(code) == BPF_X ? x : k;
			uint16_t op = BPF_OP(code);
			if (op == BPF_DIV && !v) {
				*ret = 0; /* as the kernel: the program returns 0 */
				return 0;
			}
			a = alu(op, a, v);
			break;
		}
		case BPF_JMP:
			if (BPF_OP(code) == BPF_JA)
				pc += k;
			else
				pc += cond(BPF_OP(code), a, BPF_SRC(code) == BPF_X ? x : k) ? f->jt
											    : f->jf;
			break;
		}
	}
	/* Not reached: the last instruction is a return. */
	if (at)
		*at = len - 1;
	return -EINVAL;
}

/* SECCOMP_RET_ACTION_FULL as a signed number: smaller comes first. */
static int32_t action_rank(uint32_t ret)
{
	return (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
}

int seccomp_filters_run(const struct seccomp_prog *progs, size_t n, const struct seccomp_data *d,
			uint32_t *ret, size_t *bad, size_t *at)
{
	uint32_t verdict = SECCOMP_RET_ALLOW;
	for (size_t i = 0; i < n; i++) {
		uint32_t r;
		int err = seccomp_bpf_run(progs[i].insn, progs[i].len, d, &r, at);
		if (err) {
			if (bad)
				*bad = i;
			return err;
		}
		if (action_rank(r) < action_rank(verdict))
			verdict = r;
	}
	*ret = verdict;
	return 0;
}

const char *seccomp_harm(uint32_t ret)
{
	switch (ret & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ALLOW:
	case SECCOMP_RET_LOG:
	case SECCOMP_RET_ERRNO:
		return NULL;
	case SECCOMP_RET_KILL_PROCESS:
		return "kill it";
	case SECCOMP_RET_KILL_THREAD:
		return "kill the thread that makes it";
	case SECCOMP_RET_TRAP:
		return "send it SIGSYS";
	case SECCOMP_RET_TRACE:
		return "hand it to a tracer (SECCOMP_RET_TRACE)";
	case SECCOMP_RET_USER_NOTIF:
		return "hand it to a supervisor (SECCOMP_RET_USER_NOTIF)";
	default:
		return "kill it (an action the kernel does not know kills)";
	}
}

int seccomp_check_filters(const struct seccomp_prog *progs, size_t n, const char *whose, char *why,
			  size_t wn)
{
	size_t np;
	const struct seccomp_probe *pr = seccomp_runtime_calls(&np);
	for (size_t i = 0; i < np; i++) {
		struct seccomp_data d;
		memset(&d, 0, sizeof(d));
		d.nr = pr[i].nr;
		d.arch = ARCH_INJ_AUDIT;
		memcpy(d.args, pr[i].arg, sizeof(d.args));
		uint32_t ret;
		size_t bad = 0, at = 0;
		int err = seccomp_filters_run(progs, n, &d, &ret, &bad, &at);
		if (err) {
			unsigned code =
			    bad < n && at < progs[bad].len ? progs[bad].insn[at].code : 0;
			snprintf(
			    why, wn,
			    "dynftrace cannot evaluate %s (filter %zu of %zu in the order they "
			    "were installed: instruction %zu, code %#x, is not one the kernel "
			    "accepts), so it cannot tell whether loading the runtime is safe; not "
			    "attaching",
			    whose, n - bad, n, at, code);
			return err;
		}
		const char *harm = seccomp_harm(ret);
		if (harm) {
			snprintf(why, wn, "%s would %s at %s(%s), which %s needs; not attaching",
				 whose, harm, pr[i].name, pr[i].args, pr[i].need);
			return 1;
		}
	}
	return 0;
}

/* ---- reading a process's filters */

/* The number after "KEY:" in FILE, or -1. */
static long status_num(const char *file, const char *key, int hex)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return -1;
	char line[256];
	size_t kl = strlen(key);
	long long v = -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = (long long)strtoull(line + kl + 1, NULL, hex ? 16 : 10);
			break;
		}
	fclose(f);
	return (long)v;
}

static long thread_status(pid_t pid, pid_t tid, const char *key)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	return status_num(path, key, 0);
}

struct chain {
	struct seccomp_prog *v;
	size_t n;
};

static void chain_free(struct chain *c)
{
	for (size_t i = 0; i < c->n; i++)
		free((void *)c->v[i].insn);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

static int chain_equal(const struct chain *a, const struct chain *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].len != b->v[i].len ||
		    memcmp(a->v[i].insn, b->v[i].insn, a->v[i].len * sizeof(struct sock_filter)))
			return 0;
	return 1;
}

/* The kernel's limit on a thread's filters, counted in instructions
 * (MAX_INSNS_PER_PATH), bounds their number too. */
#define MAX_FILTERS 32768

/* Every filter of TID, which we hold stopped, newest first: 0, -EAGAIN
 * (they changed while read), or the -errno of PTRACE_SECCOMP_GET_FILTER. */
static int read_chain(pid_t tid, struct chain *c)
{
	for (unsigned long i = 0; i < MAX_FILTERS; i++) {
		long len = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, NULL);
		if (len < 0)
			return errno == ENOENT && i > 0 ? 0 : -errno;
		if (len == 0 || len > BPF_MAXINSNS)
			return -EPROTO; /* no filter the kernel makes */
		struct seccomp_prog *nv = realloc(c->v, (c->n + 1) * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		c->v = nv;
		struct sock_filter *insn = calloc((size_t)len, sizeof(*insn));
		if (!insn)
			return -ENOMEM;
		long got = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, insn);
		if (got != len) {
			free(insn);
			return got < 0 ? -errno : -EAGAIN;
		}
		c->v[c->n].insn = insn;
		c->v[c->n].len = (size_t)len;
		c->n++;
	}
	return -E2BIG;
}

/* CAP_SYS_ADMIN in our effective set? */
static int have_sys_admin(void)
{
	long caps = status_num("/proc/self/status", "CapEff", 1);
	return caps > 0 && (caps >> CAP_SYS_ADMIN) & 1;
}

static int no_permission(char *why, size_t n)
{
	if (status_num("/proc/self/status", "Seccomp", 0) > 0)
		snprintf(why, n,
			 "it runs under a seccomp filter, and dynftrace runs under one itself, "
			 "which keeps the kernel from showing it any filter, so dynftrace cannot "
			 "tell whether loading the runtime is safe; not attaching");
	else if (geteuid() != 0)
		snprintf(why, n,
			 "it runs under a seccomp filter that only root (CAP_SYS_ADMIN) can read, "
			 "so dynftrace cannot tell whether loading the runtime is safe; attach as "
			 "root");
	else
		snprintf(why, n,
			 "it runs under a seccomp filter that only CAP_SYS_ADMIN lets dynftrace "
			 "read, which it lacks here, so it cannot tell whether loading the runtime "
			 "is safe; not attaching");
	return -EPERM;
}

/* Will the kernel show us filters (PTRACE_SECCOMP_GET_FILTER: CAP_SYS_ADMIN,
 * and no filter of our own)? */
static int may_read_filters(void)
{
	return have_sys_admin() && status_num("/proc/self/status", "Seccomp", 0) == 0;
}

/* Stop TID, read its filters into C, let it go. 0, 1 (gone or not under
 * a filter: nothing to check), -errno with WHY. */
static int thread_chain(struct inj *p, pid_t tid, struct chain *c, char *why, size_t n)
{
	for (int tries = 0;; tries++) {
		long before = thread_status(p->pid, tid, "Seccomp_filters");
		int err = inj_stop_thread(p, tid);
		if (err == -ESRCH)
			return 1;
		if (err) {
			snprintf(why, n, "%s", p->why);
			return err;
		}
		err = read_chain(tid, c);
		inj_resume_all(p);
		long after = thread_status(p->pid, tid, "Seccomp_filters");
		if (!err && after != before)
			err = -EAGAIN; /* a filter came meanwhile (TSYNC from another thread) */
		if (!err)
			return 0;
		chain_free(c);
		switch (err) {
		case -EAGAIN:
			if (tries < 100)
				continue;
			snprintf(why, n, "its thread %d keeps installing seccomp filters",
				 (int)tid);
			return -EAGAIN;
		case -ESRCH:
			return 1; /* it ended */
		case -EACCES:
		case -EPERM:
			return no_permission(why, n);
		case -EINVAL:
			return thread_status(p->pid, tid, "Seccomp") == 2 ? no_permission(why, n)
									  : 1;
		case -EIO:
			snprintf(why, n,
				 "it runs under a seccomp filter and this kernel cannot show one "
				 "(PTRACE_SECCOMP_GET_FILTER needs CONFIG_CHECKPOINT_RESTORE), so "
				 "dynftrace cannot tell whether loading the runtime is safe; not "
				 "attaching");
			return -EOPNOTSUPP;
		case -EMEDIUMTYPE:
			snprintf(
			    why, n,
			    "it runs under a seccomp filter that is not a classic BPF program, "
			    "which dynftrace cannot evaluate; not attaching");
			return err;
		default:
			snprintf(why, n, "cannot read the seccomp filters of its thread %d: %s",
				 (int)tid, strerror(-err));
			return err;
		}
	}
}

int seccomp_check_process(pid_t pid, char *why, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d) {
		int e = errno;
		snprintf(why, n, "cannot list its threads: %s", strerror(e));
		return -e;
	}
	struct inj p;
	inj_open(&p, pid);
	struct chain last = {0}, cur = {0};
	int rc = 0, asked = 0;
	struct dirent *de;
	while (!rc && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || thread_status(pid, tid, "Seccomp") != 2)
			continue;
		/* When the kernel would show us no filter, say so before
		 * touching the process. */
		if (!asked++ && !may_read_filters()) {
			rc = no_permission(why, n);
			break;
		}
		rc = thread_chain(&p, tid, &cur, why, n);
		if (rc == 1) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		/* Threads made by one another share their filters. */
		if (!last.v || !chain_equal(&cur, &last)) {
			char whose[64];
			if (tid == pid)
				snprintf(whose, sizeof(whose), "its seccomp filter");
			else
				snprintf(whose, sizeof(whose),
					 "the seccomp filter of its thread %d", (int)tid);
			rc = seccomp_check_filters(cur.v, cur.n, whose, why, n);
		}
		chain_free(&last);
		last = cur;
		memset(&cur, 0, sizeof(cur));
	}
	closedir(d);
	chain_free(&cur);
	chain_free(&last);
	inj_close(&p);
	return rc;
}
