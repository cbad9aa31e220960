/* SPDX-License-Identifier: MIT */
/*
 * shadow.c - each thread's graph state (struct fg_thread, trace_int.h): the
 * shadow stack of hooked returns and the profile table's link. The function
 * graph and profile tracers (trace.c, profile.c) and the fast paths
 * (graph_fast.c, tramp.S) share it; only its thread writes it, but for the
 * profile fields (prof_lock) and detach (every other thread stopped).
 */
#include <string.h>
#include <sys/mman.h>

#include "ring.h"
#include "trace_int.h"

HIDDEN __thread struct fg_thread *fg_self __attribute__((tls_model("initial-exec")));

/*
 * Where in its first page the state starts. A thread's ring buffer
 * (ring.c) begins a page too, and the two are written on every traced
 * call: with both at page offset 0, the depth and the ring's offset (and
 * the shadow entries and the ring's writer line) share their address bits
 * 0-11, and a load of one waits for the other's store to resolve (4 KiB
 * aliasing). The graph shortcut costs 2 ns more per call on an AMD Zen 4
 * then: docs/PERFORMANCE.md. Half a page away is clear of the ring's
 * writer line and its commit words.
 */
#define FG_PAGE_OFFSET 2048

/* mmap, not malloc: the first traced call of a thread may run in a signal
 * handler, or inside malloc. */
struct fg_thread *fg_alloc(void)
{
	char *m = mmap(NULL, sizeof(struct fg_thread) + FG_PAGE_OFFSET, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	struct fg_thread *g = (struct fg_thread *)(m + FG_PAGE_OFFSET);
	fg_self = g;
	return g;
}

void fg_free(struct fg_thread *g)
{
	munmap((char *)g - FG_PAGE_OFFSET, sizeof(*g) + FG_PAGE_OFFSET);
}

/*
 * Exits that could not be written (the buffer full) leave their frames
 * open for the reader, which pairs an exit with the innermost open entry:
 * every later exit would close the wrong call. So the thread owes them
 * (g->exit_debt) and pays with one exit_lost event before its next entry,
 * exit or stack event. Until then the assembly paths stay off (the entry
 * tests exit_debt with notrace_depth; the exit finds SE2_DEBT on the top
 * frame). False: still owed (nothing else may be written).
 */
bool fg_debt_pay(struct fg_thread *g)
{
	uint64_t ts;
	/* the exits it stands for were counted lost when they were dropped */
	uint8_t *p = ring_event_try(RING_EV_EXIT_LOST, 4, &ts);
	if (!p)
		return false;
	memcpy(p, &g->exit_debt, 4);
	ring_event_end(p);
	g->exit_debt = 0;
	return true;
}
