// SPDX-License-Identifier: MIT
/*
 * trig-routes.c - run under `dynftrace record -T ...` by tests/sh/triggers.sh:
 * calls tr_a -> tr_b -> tr_c, then prints "NAME ROUTE" for each tr_*
 * site (dynftrace_for_each_site_info): a site with a trigger that acts at
 * run time leaves the graph shortcut, every other keeps it.
 */
#include <stdio.h>
#include <string.h>

#include <dynftrace/dynftrace.h>

volatile int sink;

__attribute__((noinline)) void tr_c(void)
{
	sink++;
}
__attribute__((noinline)) void tr_b(void)
{
	tr_c();
	sink++;
}
__attribute__((noinline)) void tr_a(void)
{
	tr_b();
	sink++;
}

static int show(const struct dynftrace_site_info *si, void *data)
{
	(void)data;
	if (si->func && !strncmp(si->func, "tr_", 3))
		printf("%s %s\n", si->func, si->route);
	return 0;
}

int main(void)
{
	tr_a();
	dynftrace_for_each_site_info(show, NULL);
	return 0;
}
