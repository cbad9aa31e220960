/* SPDX-License-Identifier: MIT */
/*
 * seccomp.h - may the runtime be loaded into a process that runs under
 * seccomp filters? Its filters are read (ptrace), run on every system call
 * the loader and the runtime make (seccomp_calls.c lists them),
 * and the attach is refused if one of those calls would be killed, trapped
 * or handed to a tracer or supervisor. See seccomp.c.
 */
#ifndef DYNFTRACE_CLI_SECCOMP_H
#define DYNFTRACE_CLI_SECCOMP_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * A system call that loading the runtime (the loader, in dlopen) or the
 * runtime itself makes in a process, as a seccomp filter sees it (struct
 * seccomp_data). Arguments that are addresses or descriptors hold
 * representative values; the flags hold what the runtime passes.
 */
struct seccomp_probe {
	const char *name; /* the system call: "mprotect" */
	const char *args; /* the arguments that matter, as shown: "PROT_READ|PROT_EXEC" */
	const char *need; /* what needs it: "patching" */
	int nr;
	uint64_t arg[6];
};
/* The table (*N entries), this architecture's numbers (seccomp_calls.c);
 * the filters see them with ARCH_INJ_AUDIT (inject_arch.h). */
const struct seccomp_probe *seccomp_runtime_calls(size_t *n);

/* One filter: a classic BPF program as the kernel keeps it. */
struct seccomp_prog {
	const struct sock_filter *insn;
	size_t len;
};

/*
 * Run one filter on D as the kernel does: 0 with *RET the value it returns,
 * or -EINVAL for a program the kernel would not have accepted (a jump or a
 * load out of range, an instruction seccomp does not allow (BPF_MOD is one),
 * no return at its end), with *AT the instruction (AT may be NULL).
 */
int seccomp_bpf_run(const struct sock_filter *insn, size_t len, const struct seccomp_data *d,
		    uint32_t *ret, size_t *at);

/*
 * Stacked filters, PROGS[0] the newest (index 0 of PTRACE_SECCOMP_GET_FILTER),
 * on D: the kernel's verdict, the value whose action comes first
 * (KILL_PROCESS, KILL_THREAD, TRAP, ERRNO, USER_NOTIF, TRACE, LOG, ALLOW;
 * the newest filter's among equal actions). 0 with *RET, or -EINVAL with
 * *BAD the filter and *AT the instruction that cannot be run.
 */
int seccomp_filters_run(const struct seccomp_prog *progs, size_t n, const struct seccomp_data *d,
			uint32_t *ret, size_t *bad, size_t *at);

/* What verdict RET does to a process making the call, when that is not
 * acceptable ("kill it"), or NULL (ALLOW, LOG, ERRNO). */
const char *seccomp_harm(uint32_t ret);

/*
 * Ask the filters PROGS (newest first) about every system call the loader
 * and the runtime make. WHOSE names them in WHY ("its seccomp filter").
 * 0: none is killed, trapped or handed over; 1: WHY names the call, its
 * arguments and the action; -EINVAL: a filter cannot be run (WHY).
 */
int seccomp_check_filters(const struct seccomp_prog *progs, size_t n, const char *whose, char *why,
			  size_t wn);

/*
 * The check before attaching to PID, whose threads may run under seccomp
 * filters: each such thread is stopped (ptrace, no signal) just long enough
 * to read its filters and let go. 0: loading the runtime is safe; 1: it is
 * not (WHY: which call, arguments and action); -EPERM: the filters cannot be
 * read (CAP_SYS_ADMIN is needed); other -errno. WHY is one clause that
 * follows "process PID (COMM): ".
 */
int seccomp_check_process(pid_t pid, char *why, size_t n);

#endif
