/* SPDX-License-Identifier: MIT */
/*
 * log.c - messages from the runtime, and the fail-stop switch.
 *
 * The runtime writes into the stderr of somebody else's program, so every
 * message is bounded per call site (docs/ARCHITECTURE.md, "Messages"):
 *
 *   dft_log    something the user must know or act on: always shown, once
 *              per call site; its repeats only with DYNFTRACE_VERBOSE, as
 *              dft_debug shows them.
 *   dft_debug  information: only with DYNFTRACE_VERBOSE, at most
 *              DFT_LOG_BURST lines per call site in each DFT_LOG_WINDOW_S
 *              seconds; the next line shown says how many were not.
 *   dft_kill   stops tracing for good: shown once (the first reason).
 *
 * Both are macros giving each call site its own struct dft_logsite. A
 * message may be logged from any thread, from traced code and from a signal
 * handler (a fatal signal's flush, a trap): the state is changed with
 * atomics only (no lock, no malloc), the clock is clock_gettime, the line
 * is formatted on the stack and leaves in one write(2).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

HIDDEN int dft_verbose;
HIDDEN int dft_killed;
HIDDEN char dft_kill_reason[160];

/* "dynftrace[PID]: MESSAGE[ (N more not shown)]\n", in one write: lines of
 * several threads do not interleave. */
static void vlog(unsigned skipped, const char *fmt, va_list ap)
{
	char buf[512];
	size_t cap = sizeof(buf) - 1; /* room for the newline */
	int n = snprintf(buf, cap, "dynftrace[%d]: ", (int)getpid());
	if (n < 0)
		return;
	if (vsnprintf(buf + n, cap - (size_t)n, fmt, ap) < 0)
		return;
	size_t len = strlen(buf);
	if (skipped)
		snprintf(buf + len, cap - len, " (%u more not shown)", skipped);
	len = strlen(buf);
	buf[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, buf, len);
	(void)w;
}

/* May SITE show a line now (verbose rate)? *SKIPPED: how many it did not
 * show since the last one. */
static int site_may_show(struct dft_logsite *site, unsigned *skipped)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t win = (uint64_t)ts.tv_sec / DFT_LOG_WINDOW_S + 1; /* 0: never shown */
	uint64_t old = __atomic_load_n(&site->rate, __ATOMIC_RELAXED), nv;
	do {
		if (old >> 32 != win)
			nv = win << 32 | 1;
		else if ((uint32_t)old < DFT_LOG_BURST)
			nv = old + 1;
		else {
			__atomic_fetch_add(&site->skipped, 1, __ATOMIC_RELAXED);
			return 0;
		}
	} while (!__atomic_compare_exchange_n(&site->rate, &old, nv, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	*skipped = __atomic_exchange_n(&site->skipped, 0, __ATOMIC_RELAXED);
	return 1;
}

void dft_log_site(struct dft_logsite *site, int always, const char *fmt, ...)
{
	unsigned skipped = 0;
	/* The first time of an always-shown message; then the verbose rate. */
	if (!(always && !__atomic_exchange_n(&site->said, 1, __ATOMIC_RELAXED)) &&
	    (!READ_ONCE(dft_verbose) || !site_may_show(site, &skipped)))
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(skipped, fmt, ap);
	va_end(ap);
}

/* Called with patch_lock held; ops.c then turns every site back into a NOP. */
void dft_kill(const char *fmt, ...)
{
	if (READ_ONCE(dft_killed))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dft_kill_reason, sizeof(dft_kill_reason), fmt, ap);
	va_end(ap);
	__atomic_store_n(&dft_killed, 1, __ATOMIC_SEQ_CST);
	static struct dft_logsite site;
	dft_log_site(&site, 1, "tracing stopped: %s", dft_kill_reason);
}
