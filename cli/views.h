/* SPDX-License-Identifier: MIT */
/*
 * views.h - what replay, report, dump and info print, from an open session
 * (trace_read.h). Separate from the option parsing so the fuzz harness
 * (tests/fuzz/fuzz_trace.c) runs them on damaged input. Each returns 0, or 1
 * when a stream was damaged (the messages already printed through cli_err()
 * after the output) or the output could not be written; -ENOMEM.
 */
#ifndef DYNFTRACE_VIEWS_H
#define DYNFTRACE_VIEWS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"
#include "trace_read.h"

struct replay_opts {
	struct cli_globs filter, notrace;
	struct cli_globs backtrace; /* -T FUNC@backtrace (and the session's) */
	uint64_t depth;		    /* 0: unlimited */
	uint64_t time_ns;	    /* hide calls shorter than this */
	pid_t *tids;		    /* only these threads (ntids > 0) */
	size_t ntids;
	int no_time; /* no duration / timestamp column */
};
int replay_run(struct tr_session *s, const struct replay_opts *o, FILE *out);

enum report_sort { SORT_TOTAL, SORT_SELF, SORT_CALLS, SORT_AVG };
int report_run(struct tr_session *s, enum report_sort sort, FILE *out);

int dump_chrome_run(struct tr_session *s, FILE *out);

int info_run(struct tr_session *s, FILE *out);

/* The end of a view that ended with RET: RET when not 0; else 1 when OUT
 * cannot be flushed (said) or a stream was damaged (each one's message
 * printed through cli_err()), else 0. */
int views_finish(struct tr_session *s, FILE *out, int ret);

#endif
