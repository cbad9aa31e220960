/* SPDX-License-Identifier: MIT */
/*
 * attach.c - the runtime's side of `dynftrace attach` and `detach`: a
 * process that was started without us gets the runtime loaded by a
 * debugger-like agent (cli/inject.c), and later has it taken out again.
 * The protocol and its order are in include/dynftrace/attach.h.
 *
 * Why the conversion waits. At start-up the constructor rewrites every
 * site into the canonical NOP before the program runs. A process that
 * already runs may have a thread between two of gcc's five 1-byte NOPs:
 * replacing them with one 5-byte instruction would leave it in the middle
 * of it. So the first scan (sites_init_deferred) prepares the writes and
 * dynftrace_attach_commit() does them while the agent holds every other
 * thread stopped, each moved past any run of NOPs it was in (running them
 * would have done the same) and the saved pointers of its signal frames
 * too. Single-instruction forms (`call __fentry__`) have no inside. The
 * commit may not wait for a stopped thread: no allocation, patch_lock by
 * trylock only.
 *
 * | state          | written by                          | read by          |
 * |----------------|-------------------------------------|------------------|
 * | attach_state   | the agent's calls, one at a time    | the same calls   |
 *
 * The agent makes one call at a time, so the entry points need no lock of
 * their own; what they change is protected as everywhere else.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ctl.h"
#include "trace.h"
#include "../include/dynftrace/attach.h"

void dft_fatal_install(void) HIDDEN; /* interpose.c */

enum { ATT_NONE, ATT_LOADED, ATT_COMMITTED, ATT_STARTED, ATT_DETACHING, ATT_DETACHED };
static int attach_state;

/* Was the runtime loaded by an attach? The agent loads it under the name
 * DYNFTRACE_ATTACH_SONAME, a link to the runtime: the loader keeps the name
 * it was given, and nothing else in a process can tell us. */
int attach_loaded(void)
{
	Dl_info di;
	if (!dladdr((void *)attach_loaded, &di) || !di.dli_fname)
		return 0;
	const char *base = strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	if (strcmp(base, DYNFTRACE_ATTACH_SONAME))
		return 0;
	attach_state = ATT_LOADED;
	return 1;
}

PUBLIC int dynftrace_attach_commit(void)
{
	if (attach_state != ATT_LOADED)
		return attach_state == ATT_NONE ? -EPERM : -EALREADY;
	if (READ_ONCE(dft_killed))
		return -ENODEV;
	size_t n;
	int err = sites_commit_deferred(&n);
	if (err == -EAGAIN)
		return err;
	attach_state = ATT_COMMITTED; /* sites that failed stay DISABLED, said once */
	return (int)sites_usable();
}

PUBLIC int dynftrace_attach_start(const char *config, size_t len)
{
	if (attach_state != ATT_COMMITTED)
		return attach_state < ATT_COMMITTED ? -EPERM : -EALREADY;
	sites_free_committed();
	int err = dft_config_set(config, len);
	if (err)
		return err;
	const char *v = dft_getenv("DYNFTRACE_VERBOSE");
	dft_verbose = v && *v && strcmp(v, "0");
	trace_record_start();
	if (trace_recording())
		dft_fatal_install();
	ctl_init();
	attach_state = ATT_STARTED;
	return 0;
}
