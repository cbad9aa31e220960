/* SPDX-License-Identifier: MIT */
/* dlchurn-lib.c - a traced library that dlchurn.c loads and unloads in a
 * loop (tests/sh/dlchurn.sh). It carries a static key, so its constructor
 * and destructor call into the runtime while the loader's lock is held. */
#include <dynftrace/static_key.h>

static unsigned long sink;
DEFINE_STATIC_KEY_FALSE(plug_key);

__attribute__((noinline)) unsigned long plug_leaf(unsigned long x)
{
	__atomic_fetch_add(&sink, 1, __ATOMIC_RELAXED);
	return x * 3 + 1;
}

__attribute__((noinline)) unsigned long plug_entry(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += plug_leaf(i);
	if (static_branch_unlikely(&plug_key))
		s += 0; /* the branch exists; its result never changes */
	return s;
}
