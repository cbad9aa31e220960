/* SPDX-License-Identifier: MIT */
/*
 * shadow.c - each thread's graph state (struct fg_thread, trace_int.h): the
 * shadow stack of hooked returns and the profile table's link. The function
 * graph and profile tracers (trace.c, profile.c) and the fast paths
 * (graph_fast.c, tramp.S) share it; only its thread writes it, but for the
 * profile fields (prof_lock) and detach (every other thread stopped).
 */
#include <sys/mman.h>

#include "trace_int.h"

HIDDEN __thread struct fg_thread *fg_self __attribute__((tls_model("initial-exec")));

/* mmap, not malloc: the first traced call of a thread may run in a signal
 * handler, or inside malloc. */
struct fg_thread *fg_alloc(void)
{
	struct fg_thread *g =
	    mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED)
		return NULL;
	fg_self = g;
	return g;
}

void fg_free(struct fg_thread *g)
{
	munmap(g, sizeof(*g));
}
