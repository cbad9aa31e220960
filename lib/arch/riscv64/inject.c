/* SPDX-License-Identifier: MIT */
/*
 * inject.c - riscv64 side of the attaching agent (lib/core/arch_inject.h):
 * not implemented. `dynftrace attach` refuses on this architecture before
 * it touches the process (ARCH_INJ_SUPPORTED is 0, cmd_attach.c); these
 * answer -ENOTSUP should anything call them anyway.
 */
#include <errno.h>
#include <string.h>

#include "arch_inject.h"

int arch_inj_save(pid_t tid, struct arch_inj_regs *r)
{
	(void)tid, (void)r;
	return -ENOTSUP;
}
int arch_inj_restore(pid_t tid, const struct arch_inj_regs *r)
{
	(void)tid, (void)r;
	return -ENOTSUP;
}
int arch_inj_set_gp(pid_t tid, const struct arch_inj_regs *r)
{
	(void)tid, (void)r;
	return -ENOTSUP;
}
int arch_inj_get_gp(pid_t tid, struct arch_inj_regs *r)
{
	(void)tid, (void)r;
	return -ENOTSUP;
}
uint64_t arch_inj_ip(const struct arch_inj_regs *r)
{
	return r->gp.pc;
}
void arch_inj_set_ip(struct arch_inj_regs *r, uint64_t ip)
{
	r->gp.pc = ip;
}
uint64_t arch_inj_sp(const struct arch_inj_regs *r)
{
	return r->gp.sp;
}
uint64_t arch_inj_tp(const struct arch_inj_regs *r)
{
	(void)r;
	return 0;
}

uint64_t arch_inj_link(const struct arch_inj_regs *r)
{
	(void)r;
	return 0;
}

void arch_inj_set_link(struct arch_inj_regs *r, uint64_t v)
{
	(void)r, (void)v;
}
long arch_inj_syscall(const struct arch_inj_regs *r)
{
	(void)r;
	return -1;
}
uint64_t arch_inj_retval(const struct arch_inj_regs *r)
{
	return r->gp.a0;
}
void arch_inj_setup_call(struct arch_inj_regs *r, uint64_t fn, const uint64_t *args, int nargs,
			 uint64_t sp)
{
	(void)r, (void)fn, (void)args, (void)nargs, (void)sp;
}
int arch_inj_undo_eintr(struct arch_inj_regs *r)
{
	(void)r;
	return 0;
}
void arch_inj_blocked_call(struct arch_inj_regs *r, long nr, const uint64_t *args, uint64_t sp,
			   uint64_t pc)
{
	(void)r, (void)nr, (void)args, (void)sp, (void)pc;
}
size_t arch_nop_run(const uint8_t *code, size_t n)
{
	size_t k = 0;
	while (k + 4 <= n) {
		uint32_t v;
		memcpy(&v, code + k, 4);
		if (v != 0x00000013u)
			break;
		k += 4;
	}
	return k;
}
int arch_is_sigreturn(const uint8_t *code, size_t n)
{
	(void)code, (void)n;
	return 0;
}
