/* SPDX-License-Identifier: MIT */
/*
 * attach.h - the protocol between `dynftrace attach` and the runtime it
 * loads into a process that is already running. Programs do not call these;
 * they are public so that the command can find them in any build of the
 * runtime, stripped or not.
 *
 * The command loads the runtime under the name libdynftrace-attach.so (a
 * link to libdynftrace.so). Loaded under that name, the constructor sets
 * everything up but leaves the code of the objects already running as it
 * found it: their sites are still in their compiled form (gcc's five
 * 1-byte NOPs, `call __fentry__`), and a thread may be between two of those
 * NOPs. Then, in order:
 *
 *  0. dynftrace_attach_config(CONFIG, LEN), called while the process runs:
 *     CONFIG is LEN bytes of NUL-terminated NAME=VALUE strings, the
 *     settings a process started under dynftrace takes from its environment
 *     (DYNFTRACE_CONTROL, DYNFTRACE_RECORD, DYNFTRACE_PATCH, ...,
 *     XDG_RUNTIME_DIR), which replace the environment for the runtime.
 *     Relocates the entries DYNFTRACE_PATCH selects into new blocks; their
 *     jumps wait for the commit. Returns how many (>= 0).
 *     dynftrace_attach_refused() then says how many of the selected
 *     entries could not be relocated (`dynftrace sites --all` says why);
 *     with DYNFTRACE_PATCH_QUIET=1 in CONFIG the runtime does not also
 *     say so on the program's stderr.
 *  1. dynftrace_attach_commit(TPS, NTPS, IPS, NIPS), called with every
 *     other thread of the process stopped and moved out of any run of NOPs
 *     (which is exactly what executing them would have done): writes the
 *     canonical NOPs and the relocated entries' jumps. IPS are the stopped
 *     threads' instruction pointers and those saved in their signal frames:
 *     each one inside bytes an entry's jump replaces is changed in place to
 *     the same instruction's copy in its block, and the agent puts it back
 *     where it came from. It waits for nothing and allocates nothing.
 *     Returns how many sites the runtime holds (>= 0). TPS are the thread
 *     pointers of the threads whose mask blocked SIGTRAP: the agent
 *     unblocks it (a breakpoint met with SIGTRAP blocked kills the process)
 *     and the runtime remembers they block it, as its signal wrappers do.
 *     -EAGAIN: a stopped thread holds the runtime's lock; let the process
 *     run a moment and retry.
 *  2. dynftrace_attach_start(CONFIG, LEN), called while the process runs:
 *     the settings, if step 0 was skipped (else CONFIG is ignored). Starts
 *     control and, if asked, recording.
 *
 * And to leave:
 *
 *  3. dynftrace_detach_prepare(WHY, N), while the process runs: stops every
 *     tracer, puts every site back to its NOP, flushes and closes a
 *     recording, closes the control endpoint and ends the runtime's threads.
 *  4. dynftrace_detach_finish(IPS, NIPS, TPS, NTPS, WHY, N), with every
 *     other thread stopped: IPS are their instruction pointers (and those
 *     saved in their signal frames); TPS one record of
 *     DYNFTRACE_DETACH_THREAD_WORDS words per thread: its thread pointer
 *     (replaced by 1 if the thread blocks SIGTRAP, the agent blocks it
 *     again, else 0), its stack pointer, the bounds [lo, hi) of the
 *     mapping that holds it (0, 0: unknown) and its link register (the
 *     return address register, aarch64's x30; 0 where there is none),
 *     replaced by the value to put back when it held a hooked return.
 *     Puts back every return address the graph tracer replaced (where
 *     the return address comes in a register: in the thread's frames on
 *     that stack, its link register and signal frames there) and every
 *     relocated entry's bytes (each of IPS inside a relocated copy is
 *     changed in place to the original instruction: the agent puts it
 *     back), removes its signal handlers and thread-exit hooks, and says
 *     whether the runtime may now be unloaded: 0 yes; -EBUSY no, with the
 *     reason in WHY (a thread is inside the runtime's code), in which case
 *     the runtime stays loaded and inert: every site is a NOP, no thread of
 *     its own runs, nothing calls it.
 *
 * Each returns 0 (or a count) or a negative errno value; WHY gets one sentence.
 * Each keeps the thread's errno, and what it calls in other objects is the
 * runtime's own work, never traced.
 * -EAGAIN from any: the thread the agent borrowed was stopped inside the
 * runtime (a callback); let it run on and call again.
 */
#ifndef DYNFTRACE_ATTACH_H
#define DYNFTRACE_ATTACH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DYNFTRACE_ATTACH_SONAME "libdynftrace-attach.so"
/* dynftrace_detach_finish's TPS: per thread {tp, sp, stack lo, stack hi, link} */
#define DYNFTRACE_DETACH_THREAD_WORDS 5

__attribute__((visibility("default"))) int dynftrace_attach_config(const char *config, size_t len);
__attribute__((visibility("default"))) int dynftrace_attach_refused(void);
__attribute__((visibility("default"))) int dynftrace_attach_commit(const uint64_t *tps, size_t ntps,
								   uint64_t *ips, size_t nips);
__attribute__((visibility("default"))) int dynftrace_attach_start(const char *config, size_t len);
__attribute__((visibility("default"))) int dynftrace_detach_prepare(char *why, size_t n);
__attribute__((visibility("default"))) int dynftrace_detach_finish(uint64_t *ips, size_t nips,
								   uint64_t *tps, size_t ntps,
								   char *why, size_t n);

#ifdef __cplusplus
}
#endif
#endif
