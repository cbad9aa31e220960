/* t-failstop: unexpected bytes at a site are refused, never overwritten, and
 * stop all tracing cleanly with a reason (the kernel's ftrace_kill). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"
#include "insn.h"

#define NOINLINE __attribute__((noinline))
static volatile int sink;
NOINLINE int good_fn(int x)
{
	sink += x;
	return x + 1;
}
NOINLINE int victim_fn(int x)
{
	sink += x;
	return x + 2;
}

static volatile unsigned long hits;
static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
	       struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)o;
	(void)r;
	hits++;
}

static int find_site(unsigned long ip, const char *fn, const char *obj, int en, int ref, void *data)
{
	(void)obj;
	(void)en;
	(void)ref;
	if (fn && !strcmp(fn, "victim_fn")) {
		*(unsigned long *)data = ip;
		return 1;
	}
	return 0;
}

int main(void)
{
	struct dynftrace_ops a = {.func = cb}, b = {.func = cb};
	struct dynftrace_stats st;
	unsigned long site = 0;
	tap_plan(10);

	ok(dynftrace_set_filter(&a, "good_fn", 1) == 0 && dynftrace_register_ops(&a) == 0,
	   "ops a traces good_fn");
	good_fn(1);
	ok(hits == 1, "good_fn traced");

	dynftrace_for_each_site(find_site, &site);
	ok(site != 0, "victim_fn has a site");
	/* Somebody else rewrites the site: a NOP of another form. */
	long pg = sysconf(_SC_PAGESIZE);
	void *page = (void *)(site & ~(unsigned long)(pg - 1));
	mprotect(page, (size_t)pg * 2, PROT_READ | PROT_WRITE | PROT_EXEC);
	memcpy((void *)site, tinsn_other_nop, sizeof(tinsn_other_nop));
	mprotect(page, (size_t)pg * 2, PROT_READ | PROT_EXEC);
	__builtin___clear_cache((char *)site, (char *)site + sizeof(tinsn_other_nop));

	dynftrace_set_filter(&b, "victim_fn", 1);
	int r = dynftrace_register_ops(&b);
	ok(r == -EFAULT, "register refused with -EFAULT (%d)", r);
	ok(memcmp((void *)site, tinsn_other_nop, sizeof(tinsn_other_nop)) == 0,
	   "the foreign bytes were not overwritten");
	dynftrace_get_stats(&st);
	ok(st.killed && strstr(st.kill_reason, "unexpected bytes"), "killed, reason: %s",
	   st.kill_reason);
	ok(st.sites_enabled == 0, "every site is a NOP again (%lu enabled)", st.sites_enabled);
	hits = 0;
	good_fn(1);
	victim_fn(1);
	ok(hits == 0 && victim_fn(1) == 3, "nothing traced, code still runs");
	ok(dynftrace_register_ops(&b) == -ENODEV, "API answers -ENODEV after the kill");
	ok(dynftrace_unregister_ops(&a) == 0 && dynftrace_free_filter(&a) == 0 &&
	       dynftrace_free_filter(&b) == 0,
	   "ops can still be unregistered and released");
	return tap_done();
}
