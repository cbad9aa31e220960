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

int dump_chrome_run(struct tr_session *s, const struct cli_select *sel, FILE *out);
/* dump_perfetto.c: Perfetto's protobuf trace of the threads SEL names. */
int dump_perfetto_run(struct tr_session *s, const struct cli_select *sel, FILE *out);
/* dump_ctf.c: the CTF trace of the threads SEL names into directory DIR,
 * the site ids of `func` fields as enumerations of the function names.
 * 0, or 1 with the reason said (a damaged stream: what precedes it is
 * written). */
int dump_ctf_run(struct tr_session *s, const struct cli_select *sel, const char *dir);
/* dump_flame.c: folded stacks (self time in ns) and the SVG flame graph of
 * the threads and time range of SEL. */
int dump_folded_run(struct tr_session *s, const struct cli_select *sel, FILE *out);
int dump_svg_run(struct tr_session *s, const struct cli_select *sel, FILE *out);
/* cmd_graph.c: the call graph below the functions FOCUS matches (every
 * call without FOCUS) and their backtraces. */
int graph_run(struct tr_session *s, const struct cli_select *sel, const struct cli_globs *focus,
	      FILE *out);

/* S copied into BUF as valid UTF-8 with control characters and bytes that
 * are not UTF-8 shown as \xNN (cmd_dump.c), cut at a character. Returns
 * BUF. */
const char *views_text(const char *s, char *buf, size_t size);

int info_run(struct tr_session *s, FILE *out);

/* The end of a view that ended with RET: RET when not 0; else 1 when OUT
 * cannot be flushed (said) or a stream was damaged (each one's message
 * printed through cli_err()), else 0. */
int views_finish(struct tr_session *s, FILE *out, int ret);

#endif
