/* SPDX-License-Identifier: MIT */
/* log.c - messages from the runtime, and the fail-stop switch. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

HIDDEN int dft_verbose;
HIDDEN int dft_killed;
HIDDEN char dft_kill_reason[160];

static void vlog(const char *fmt, va_list ap)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "dynftrace[%d]: ", (int)getpid());
	if (n < 0)
		return;
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	size_t len = strlen(buf);
	buf[len++] = '\n';
	/* One write: lines of several threads do not interleave. */
	ssize_t w = write(STDERR_FILENO, buf, len);
	(void)w;
}

void dft_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

void dft_debug(const char *fmt, ...)
{
	if (!dft_verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog(fmt, ap);
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
	dft_log("tracing stopped: %s", dft_kill_reason);
}
