// SPDX-License-Identifier: MIT
/*
 * cmd_replay.c - `dynftrace replay`: the recorded calls as ftrace's
 * function_graph text, threads interleaved by time.
 *
 *   # DURATION     TID     FUNCTION
 *               [  1234] | main() {
 *               [  1234] |   foo() {
 *      0.180 us [  1234] |     bar();
 *      1.234 us [  1234] |   } (closed by a C comment naming foo)
 *
 * Two passes. Whether an entry prints as "f() {" or as the leaf "f();", or
 * at all (-t hides short calls), depends on what follows it, so the first
 * pass reads each stream on its own and keeps, per entry, its duration and
 * how it shows (8 bytes per entry). The second pass merges the streams by
 * time and prints, using what the first pass decided.
 *
 * Display rules (filters given to replay act on the displayed tree):
 *  - with -F, a call shows if it matches or is called (directly or not) by
 *    a matching call; -N hides a call and everything it calls;
 *  - -D N keeps calls at depth < N, depth counted from the outermost
 *    displayed-by-filter call (from the thread's first frame without -F);
 *  - -t D hides calls shorter than D;
 *  - a shown call with nothing shown under it is a leaf on one line;
 *  - indentation counts the shown calls around a line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace_read.h"
#include "views.h"

static const char usage_text[] =
    "usage: dynftrace replay [-d DIR] [-F GLOB] [-N GLOB] [-D N] [-t DURATION]\n"
    "                        [--tid TID] [--no-time] [--no-demangle]\n"
    "\n"
    "Print the recorded trace as a call graph, threads interleaved by time:\n"
    "\n"
    "  # DURATION     TID     FUNCTION\n"
    "              [  1234] | main() {\n"
    "     0.180 us [  1234] |   bar();\n"
    "     1.234 us [  1234] | } /* main */\n"
    "\n"
    "  -d, --data DIR         the session directory (default dynftrace.data).\n"
    "  -F, --filter GLOB      show only matching functions and what they call\n"
    "                         (repeatable; \"a,b\" is two patterns).\n"
    "  -N, --notrace GLOB     hide matching functions and what they call.\n"
    "  -D, --depth N          show N levels of calls (from the filter's match).\n"
    "  -t, --time-filter DUR  hide calls shorter than DUR (ns, us, ms, s).\n"
    "      --tid TID          only these threads (repeatable, or TID,TID).\n"
    "      --no-time          leave out the duration / timestamp column.\n"
    "      --no-demangle      show C++ names as they are in the symbol table.\n"
    "  -h, --help             show this help.\n"
    "\n"
    "Traces of the function tracer print one line per call:\n"
    "'TIMESTAMP [TID] func() <- caller', TIMESTAMP in seconds since the\n"
    "start of the recording. Lost events show where they were lost, and a\n"
    "summary ('# thread 1234 lost 5,120 events') ends the output. Calls still\n"
    "open when their thread's trace ends are closed there and marked\n"
    "'(unfinished)'; calls left by longjmp, an exception or pthread_exit\n"
    "are marked '(unwound)'.\n"
    "\n"
    "Exit status: 0, 1 when the trace is missing or damaged (what comes\n"
    "before the damage is printed first), 2 on a usage error.\n";

/* Per-entry result of the first pass: duration in the low 56 bits. */
#define E_SHOWN	     (1ull << 56)
#define E_LEAF	     (1ull << 57)
#define E_UNFINISHED (1ull << 58)
#define E_UNWOUND    (1ull << 59)
#define E_DUR_MASK   ((1ull << 56) - 1)

/* Frame flags (both passes). */
#define F_INFILTER 1u  /* this call or a caller matches -F (always without -F) */
#define F_NOTRACE  2u  /* this call or a caller matches -N */
#define F_COND	   4u  /* shown if long enough */
#define F_DESC	   8u  /* (pass 1) something under it shows */
#define F_SHOWN	   16u /* (pass 2) printed */
#define F_OPEN	   32u /* (pass 2) printed as "f() {" */

struct rstream {
	struct tr_stream *st;
	uint64_t *ent; /* pass 1 results, by entry ordinal */
	size_t nent, cap;
	struct tr_walk w;
	unsigned disp; /* pass 2: shown open frames = indentation */
};

struct replay {
	struct tr_session *s;
	const struct replay_opts *o;
	FILE *out;
	struct rstream *rs; /* one per stream of the session */
	uint64_t base;	    /* time origin of the function tracer's timestamps */
	int flat;	    /* function tracer header */
	int err;
};

static int want_stream(struct tr_stream *st, void *data)
{
	const struct replay_opts *o = data;

	if (!o->ntids)
		return 1;
	for (size_t i = 0; i < o->ntids; i++)
		if (o->tids[i] == st->tid)
			return 1;
	return 0;
}

/* Flags and filter depth of a call of FUNC under PARENT. */
static uint32_t classify(struct replay *r, struct tr_walk *w, struct tr_frame *parent,
			 uint32_t func, size_t depth, uint64_t *fdepth)
{
	const struct replay_opts *o = r->o;
	struct tr_proc *p = w->st->proc;
	uint32_t fl = 0;

	if (!o->filter.n || (parent && (parent->flags & F_INFILTER)) ||
	    tr_func_match(p, func, &o->filter))
		fl |= F_INFILTER;
	if ((parent && (parent->flags & F_NOTRACE)) ||
	    (o->notrace.n && tr_func_match(p, func, &o->notrace)))
		fl |= F_NOTRACE;
	if (!o->filter.n)
		*fdepth = depth;
	else
		*fdepth = parent && (parent->flags & F_INFILTER) ? parent->user + 1 : 0;
	if ((fl & F_INFILTER) && !(fl & F_NOTRACE) && (!o->depth || *fdepth < o->depth))
		fl |= F_COND;
	return fl;
}

/* ---- pass 1 ----------------------------------------------------------- */

static int p1_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct replay *r = w->data;
	struct rstream *rs = &r->rs[w->st - r->s->streams];

	(void)ev;
	f->flags = classify(r, w, tr_walk_parent(w, f), f->func, w->depth - 1, &f->user);
	if (rs->nent == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 1024;
		uint64_t *n = realloc(rs->ent, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rs->ent = n;
		rs->cap = cap;
	}
	rs->ent[rs->nent++] = 0;
	return 0;
}

static int p1_leave(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how)
{
	struct replay *r = w->data;
	struct rstream *rs = &r->rs[w->st - r->s->streams];
	struct tr_frame *parent = tr_walk_parent(w, f);
	uint64_t dur = ts - f->ts, e = dur & E_DUR_MASK;

	if ((f->flags & F_COND) && dur >= r->o->time_ns) {
		e |= E_SHOWN;
		if (!(f->flags & F_DESC))
			e |= E_LEAF;
	}
	if (how == TR_LEAVE_UNFINISHED)
		e |= E_UNFINISHED;
	else if (how == TR_LEAVE_UNWIND)
		e |= E_UNWOUND;
	if (parent && ((e & E_SHOWN) || (f->flags & F_DESC)))
		parent->flags |= F_DESC;
	rs->ent[f->idx] = e;
	return 0;
}

/* Would the non-call event EV print a line? (same answer in both passes) */
static int other_shows(struct replay *r, struct tr_walk *w, const struct tr_event *ev)
{
	struct tr_frame *top = w->depth ? &w->stack[w->depth - 1] : NULL;
	uint64_t fdepth;
	uint32_t fl;

	switch (ev->type) {
	case TR_CALL:
		fl = classify(r, w, top, ev->func, w->depth, &fdepth);
		return (fl & F_COND) && ev->arg >= r->o->time_ns;
	case TR_FUNCTION:
		fl = classify(r, w, NULL, ev->func, 0, &fdepth);
		return (fl & F_COND) != 0;
	case TR_LOST:
	case TR_DISCARDED:
		return ev->arg != 0; /* losses always show */
	case TR_MARKER:
	case TR_TRACEPOINT:
		return 1;
	default:
		return 0;
	}
}

static int p1_other(struct tr_walk *w, const struct tr_event *ev)
{
	struct replay *r = w->data;

	if (w->depth && other_shows(r, w, ev))
		w->stack[w->depth - 1].flags |= F_DESC;
	return 0;
}

static const struct tr_walk_ops p1_ops = {p1_enter, p1_leave, p1_other};

/* ---- pass 2 ----------------------------------------------------------- */

static void prefix(struct replay *r, struct rstream *rs, const uint64_t *dur)
{
	char buf[32];

	if (!r->o->no_time)
		fprintf(r->out, " %10s ", dur ? cli_fmt_duration(*dur, buf, sizeof(buf)) : "");
	fprintf(r->out, "[%6d] | %*s", (int)rs->st->tid, (int)(2 * rs->disp), "");
}

static const char *mark(uint64_t e)
{
	if (e & E_UNFINISHED)
		return " (unfinished)";
	if (e & E_UNWOUND)
		return " (unwound)";
	return "";
}

static int p2_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct replay *r = w->data;
	struct rstream *rs = &r->rs[w->st - r->s->streams];
	uint64_t e, dur;
	char name[1024];

	(void)ev;
	f->flags = classify(r, w, tr_walk_parent(w, f), f->func, w->depth - 1, &f->user);
	if (f->idx >= rs->nent)
		return 0; /* the first pass stopped earlier: cannot happen */
	e = rs->ent[f->idx];
	if (!(e & E_SHOWN))
		return 0;
	f->flags |= F_SHOWN;
	tr_printable(tr_func_name(rs->st->proc, f->func), name, sizeof(name));
	if (e & E_LEAF) {
		dur = e & E_DUR_MASK;
		prefix(r, rs, &dur);
		fprintf(r->out, "%s();%s\n", name, mark(e));
	} else {
		prefix(r, rs, NULL);
		fprintf(r->out, "%s() {\n", name);
		f->flags |= F_OPEN;
		rs->disp++;
	}
	return 0;
}

static int p2_leave(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how)
{
	struct replay *r = w->data;
	struct rstream *rs = &r->rs[w->st - r->s->streams];
	uint64_t e, dur = ts - f->ts;
	char name[1024];

	(void)how;
	if (!(f->flags & F_OPEN))
		return 0;
	e = rs->ent[f->idx];
	rs->disp--;
	tr_printable(tr_func_name(rs->st->proc, f->func), name, sizeof(name));
	prefix(r, rs, &dur);
	fprintf(r->out, "} /* %s */%s\n", name, mark(e));
	return 0;
}

static int p2_other(struct tr_walk *w, const struct tr_event *ev)
{
	struct replay *r = w->data;
	struct rstream *rs = &r->rs[w->st - r->s->streams];
	char name[1024], caller[1024], num[40];

	if (!other_shows(r, w, ev))
		return 0;
	switch (ev->type) {
	case TR_CALL:
		tr_printable(tr_func_name(rs->st->proc, ev->func), name, sizeof(name));
		prefix(r, rs, &ev->arg);
		fprintf(r->out, "%s();\n", name);
		break;
	case TR_FUNCTION:
		tr_printable(tr_func_name(rs->st->proc, ev->func), name, sizeof(name));
		tr_symbolize(rs->st->proc, ev->arg, caller, sizeof(caller));
		tr_printable(caller, caller, sizeof(caller));
		if (r->flat) {
			if (!r->o->no_time) {
				int64_t d = (int64_t)(ev->ts - r->base);
				uint64_t a = d < 0 ? (uint64_t)-d : (uint64_t)d;
				char ts[40];

				snprintf(ts, sizeof(ts), "%s%" PRIu64 ".%09" PRIu64,
					 d < 0 ? "-" : "", a / 1000000000, a % 1000000000);
				fprintf(r->out, "%15s ", ts);
			}
			fprintf(r->out, "[%6d] %s() <- %s\n", (int)rs->st->tid, name, caller);
		} else {
			prefix(r, rs, NULL);
			fprintf(r->out, "%s() <- %s\n", name, caller);
		}
		break;
	case TR_LOST:
	case TR_DISCARDED:
		if (r->flat) {
			if (!r->o->no_time)
				fprintf(r->out, "%15s ", "");
			fprintf(r->out, "[%6d] ... lost %s events\n", (int)rs->st->tid,
				cli_thousands(ev->arg, num, sizeof(num)));
		} else {
			prefix(r, rs, NULL);
			fprintf(r->out, "... lost %s events\n",
				cli_thousands(ev->arg, num, sizeof(num)));
		}
		break;
	case TR_TRACEPOINT:
		tr_tracepoint_format(rs->st, ev, name, sizeof(name));
		if (r->flat) {
			if (!r->o->no_time)
				fprintf(r->out, "%15s ", "");
			fprintf(r->out, "[%6d] /* tp: %s */\n", (int)rs->st->tid, name);
		} else {
			prefix(r, rs, NULL);
			fprintf(r->out, "/* tp: %s */\n", name);
		}
		break;
	case TR_MARKER:
		tr_printable(ev->text, name, sizeof(name));
		if (r->flat) {
			if (!r->o->no_time)
				fprintf(r->out, "%15s ", "");
			fprintf(r->out, "[%6d] /* %s */\n", (int)rs->st->tid, name);
		} else {
			prefix(r, rs, NULL);
			fprintf(r->out, "/* %s */\n", name);
		}
		break;
	}
	return 0;
}

static const struct tr_walk_ops p2_ops = {p2_enter, p2_leave, p2_other};

int views_report_damage(struct tr_session *s)
{
	int n = 0;

	for (size_t i = 0; i < s->nstreams; i++) {
		if (s->streams[i].failed) {
			cli_err("%s", s->streams[i].err);
			n++;
		}
	}
	return n;
}

int replay_run(struct tr_session *s, const struct replay_opts *o, FILE *out)
{
	struct replay r = {.s = s, .o = o, .out = out};
	struct tr_merge m;
	struct tr_stream *st;
	struct tr_event ev;
	int ret = 0;

	r.flat = s->info.tracer && !strcmp(s->info.tracer, "function");
	r.rs = calloc(s->nstreams ? s->nstreams : 1, sizeof(*r.rs));
	if (!r.rs)
		return -ENOMEM;

	/* Pass 1: each stream alone. */
	for (size_t i = 0; i < s->nstreams && !ret; i++) {
		struct rstream *rs = &r.rs[i];

		rs->st = &s->streams[i];
		if (!want_stream(rs->st, (void *)o))
			continue;
		tr_walk_init(&rs->w, &p1_ops, &r, rs->st);
		tr_stream_rewind(rs->st);
		while (!ret && tr_stream_next(rs->st, &ev) > 0)
			ret = tr_walk_feed(&rs->w, &ev);
		tr_walk_free(&rs->w);
	}
	if (ret)
		goto out;

	r.base = tr_base_ts(s);
	if (r.flat)
		fputs(o->no_time ? "#   TID  FUNCTION\n" : "#     TIMESTAMP      TID  FUNCTION\n",
		      out);
	else
		fputs(o->no_time ? "#     TID  FUNCTION\n" : "# DURATION     TID     FUNCTION\n",
		      out);

	/* Pass 2: all streams by time. */
	for (size_t i = 0; i < s->nstreams; i++)
		tr_walk_init(&r.rs[i].w, &p2_ops, &r, &s->streams[i]);
	ret = tr_merge_init(&m, s, want_stream, (void *)o);
	if (ret)
		goto out;
	while (!ret && tr_merge_next(&m, &st, &ev) > 0)
		ret = tr_walk_feed(&r.rs[st - s->streams].w, &ev);
	tr_merge_free(&m);
	if (ret)
		goto out;
	if (!s->nstreams && s->info.tracer && !strcmp(s->info.tracer, "profile"))
		fputs("# the profile tracer records no call graph: see 'dynftrace report'\n", out);
	else if (!s->nstreams)
		fputs("# the trace holds no events\n", out);
	tr_print_losses(s, out, "# ");
out:
	for (size_t i = 0; i < s->nstreams; i++) {
		tr_walk_free(&r.rs[i].w);
		free(r.rs[i].ent);
	}
	free(r.rs);
	if (ret)
		return ret;
	if (fflush(out) || ferror(out)) {
		cli_out_error();
		ret = 1;
	}
	if (views_report_damage(s))
		ret = 1;
	return ret;
}

static int add_tids(struct replay_opts *o, const char *arg)
{
	const char *p = arg;

	while (*p) {
		size_t len = strcspn(p, ",");
		char tok[16];
		uint64_t v;
		pid_t *n;

		if (!len || len >= sizeof(tok))
			return -EINVAL;
		memcpy(tok, p, len);
		tok[len] = 0;
		if (cli_parse_uint(tok, INT32_MAX, &v) || !v)
			return -EINVAL;
		n = realloc(o->tids, (o->ntids + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		o->tids = n;
		o->tids[o->ntids++] = (pid_t)v;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

int cmd_replay(int argc, char **argv)
{
	struct replay_opts o = {0};
	const char *dir = "dynftrace.data", *v;
	struct tr_session s;
	int ret = 2, r;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((r = cli_opt(argc, argv, &i, "-F", "--filter", &v)) ||
		    (r = cli_opt(argc, argv, &i, "-N", "--notrace", &v))) {
			if (r < 0)
				goto out;
			if (cli_glob_add(
				a[1] == 'F' || !strncmp(a, "--f", 3) ? &o.filter : &o.notrace, v)) {
				cli_err("out of memory");
				ret = 1;
				goto out;
			}
		} else if ((r = cli_opt(argc, argv, &i, "-D", "--depth", &v))) {
			if (r < 0)
				goto out;
			if (cli_parse_uint(v, UINT32_MAX, &o.depth) || !o.depth) {
				cli_err(
				    "replay: bad depth '%s': give a number of levels, 1 or more",
				    v);
				goto out;
			}
		} else if ((r = cli_opt(argc, argv, &i, "-t", "--time-filter", &v))) {
			if (r < 0)
				goto out;
			if (cli_parse_duration(v, &o.time_ns)) {
				cli_err(
				    "replay: bad duration '%s': give a number with ns, us, ms or s",
				    v);
				goto out;
			}
		} else if ((r = cli_opt(argc, argv, &i, NULL, "--tid", &v))) {
			if (r < 0)
				goto out;
			if (add_tids(&o, v)) {
				cli_err("replay: bad thread id list '%s'", v);
				goto out;
			}
		} else if (!strcmp(a, "--no-time")) {
			o.no_time = 1;
		} else if ((r = cli_read_opt("replay", usage_text, argc, argv, &i, &dir))) {
			if (r == CLI_OPT_HELP)
				ret = 0;
			goto out;
		}
	}
	if (cli_open_session(&s, dir)) {
		ret = 1;
		goto out;
	}
	r = replay_run(&s, &o, stdout);
	if (r < 0)
		cli_err("out of memory while replaying the trace");
	ret = r ? 1 : 0;
	tr_close(&s);
out:
	cli_glob_free(&o.filter);
	cli_glob_free(&o.notrace);
	free(o.tids);
	return ret;
}
