/* SPDX-License-Identifier: MIT */
/* hooks.c - the core's event slots (hooks.h). */
#include "hooks.h"

HIDDEN struct core_hooks core_hooks;

void core_hooks_set(const struct core_hooks *h)
{
	if (h->object_added)
		__atomic_store_n(&core_hooks.object_added, h->object_added, __ATOMIC_RELEASE);
	if (h->thread_exit)
		__atomic_store_n(&core_hooks.thread_exit, h->thread_exit, __ATOMIC_RELEASE);
	if (h->graph_enter)
		__atomic_store_n(&core_hooks.graph_enter, h->graph_enter, __ATOMIC_RELEASE);
}
