/* SPDX-License-Identifier: MIT */
/* hooks.c - the core's event slots and its start-up (hooks.h). */
#include <pthread.h>

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
	if (h->fatal_flush)
		__atomic_store_n(&core_hooks.fatal_flush, h->fatal_flush, __ATOMIC_RELEASE);
	if (h->fatal_unhook)
		__atomic_store_n(&core_hooks.fatal_unhook, h->fatal_unhook, __ATOMIC_RELEASE);
	if (h->exec_readers)
		__atomic_store_n(&core_hooks.exec_readers, h->exec_readers, __ATOMIC_RELEASE);
	if (h->before_exec)
		__atomic_store_n(&core_hooks.before_exec, h->before_exec, __ATOMIC_RELEASE);
	if (h->exec_failed)
		__atomic_store_n(&core_hooks.exec_failed, h->exec_failed, __ATOMIC_RELEASE);
}

/*
 * Start-up. The layer that wires everything (init.c, the top) places its
 * entry in the section dft_start, as the kernel's initcalls do: the core
 * runs it once, from the constructor or from whichever API call or
 * wrapped dlopen comes first, without naming the layers above it. The
 * linker defines the section's bounds.
 */
extern dft_start_fn __start_dft_start[] HIDDEN;
extern dft_start_fn __stop_dft_start[] HIDDEN;
HIDDEN __thread int dft_init_running __attribute__((tls_model("initial-exec")));
static pthread_once_t start_once = PTHREAD_ONCE_INIT;

static void run_start(void)
{
	dft_init_running = 1;
	for (dft_start_fn *f = __start_dft_start; f < __stop_dft_start; f++)
		(*f)();
	dft_init_running = 0;
}

void dft_ensure_init(void)
{
	if (dft_init_running)
		return; /* our own calls during start-up */
	pthread_once(&start_once, run_start);
}
