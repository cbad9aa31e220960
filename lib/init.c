/* SPDX-License-Identifier: MIT */
/*
 * init.c - start-up (no daemon). The constructor runs when the
 * runtime is loaded, linked or preloaded, before the program's main():
 * it sets up the trap handler and sync, then finds every object's sites and
 * turns them into NOPs. Nothing is traced until an ops is registered.
 *
 * Environment:
 *   DYNFTRACE_VERBOSE=1     explain what the runtime does on stderr
 *   DYNFTRACE_POKE=procmem  write code through /proc/self/mem (test the
 *                           fallback used where W+X mappings are refused)
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "patch.h"
#include "ring.h"
#include "ctl.h"
#include "trace.h"
#include "hooks.h"
#include "got.h"

void rcu_atfork_prepare(void) HIDDEN;
void rcu_atfork_parent(void) HIDDEN;
void patch_atfork_child(void) HIDDEN;
void dft_fatal_install(void) HIDDEN; /* interpose.c */

/* fork: no batch may be half done, and no registry change in flight, when
 * the address space is copied. */
static __thread int fork_unload_held __attribute__((tls_model("initial-exec")));

static void atfork_prepare(void)
{
	dft_own_enter(); /* until the parent's or the child's handler */
	ctl_atfork_prepare();
	fork_unload_held = dft_unload_fork_prepare();
	patch_lock();
	rcu_atfork_prepare();
	ring_atfork_prepare(); /* last: the forking thread traces nothing meanwhile */
}

static void atfork_parent(void)
{
	ring_atfork_parent();
	rcu_atfork_parent();
	patch_unlock();
	dft_unload_fork_done(fork_unload_held);
	ctl_atfork_parent();
	dft_own_leave();
}

static void atfork_child(void)
{
	rcu_atfork_child();
	patch_atfork_child(); /* api_depth back to 0, ours included */
	dft_own_enter();
	dft_threads_atfork_child(); /* before control restarts its thread */
	trace_atfork_child();
	dft_unload_fork_done(fork_unload_held);
	ctl_atfork_child(); /* last: it may restart the control thread */
	dft_own_leave();
}

/* The runtime's start-up (run once by the core, see hooks.c). */
static void dft_init(void)
{
	/* Loaded into a running process by `dynftrace attach`: its settings
	 * come later (dynftrace_attach_start), never from its environment. */
	int attached = attach_loaded();
	if (attached)
		dft_config_set("", 1);
	const char *v = dft_getenv("DYNFTRACE_VERBOSE");
	dft_verbose = v && *v && strcmp(v, "0");
	if (!attached)
		dft_loaded_at_start_init(); /* an attach's dlopen never is */
	dft_signals_init();
	int err = patch_init(dft_trap_handler_install);
	if (err) {
		dft_kill("cannot set up live patching: %s", strerror(-err));
		return;
	}
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	ops_init(); /* before the first object is scanned */
	err = attached ? sites_init_deferred() : sites_init();
	if (err)
		dft_log("finding sites failed: %s", strerror(-err));
	/* Loaded late, nothing binds to our wrappers by name: hook them into
	 * every object's GOT (got.c). */
	if (attached && (err = got_hooks_install()) < 0)
		dft_log("cannot hook the C library functions the runtime wraps: %s",
			strerror(-err));
	trace_init();
	if (trace_recording())
		dft_fatal_install(); /* a fatal signal flushes the buffers first */
	ctl_init();		     /* live control, when DYNFTRACE_CONTROL=1 */
}
DFT_START(dft_init);

__attribute__((constructor(101))) static void dft_constructor(void)
{
	dft_own_enter();
	dft_ensure_init();
	dft_own_leave();
}
