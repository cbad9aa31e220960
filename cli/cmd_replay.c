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
 * Whether an entry prints as "f() {" or as the leaf "f();", or at all (-t
 * hides short calls), depends on what follows it. Each stream is therefore
 * read by two cursors over its mapping: the printer, fed by the merge of
 * all streams in time order, and a look-ahead of its own that runs ahead
 * only until the entry the printer stands on is decided:
 *
 *   shown, not a leaf   once it is known to last long enough (-t: its
 *                       look-ahead time passed its entry + D) and something
 *                       under it shows
 *   a leaf, or hidden   at its end (the leaf's duration is needed there)
 *
 * The look-ahead keeps its call stack and, of the calls it saw end, only
 * the shown ones the printer has not reached (a hidden call is what it
 * does not keep). It stops as soon as the printer's entry is decided, so
 * those are at most the calls ending at the event that decided it: memory
 * grows with the threads and their nesting depth, not with the session.
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

#include "args_fmt.h"
#include "cli.h"
#include "trace_read.h"
#include "views.h"

static const char usage_text[] =
    "usage: dynftrace replay [-d DIR] [-F PATTERN] [-N PATTERN] [-T FUNC@backtrace]\n"
    "                        [-D N] [-t DURATION]\n"
    "                        [--tid TID] [--no-time] [--demangle=simple|full|no]\n"
    "                        [--match=glob|regex]\n"
    "\n"
    "Print the recorded trace as a call graph, threads interleaved by time:\n"
    "\n"
    "  # DURATION     TID     FUNCTION\n"
    "              [  1234] | main() {\n"
    "     0.180 us [  1234] |   bar();\n"
    "     1.234 us [  1234] | } /* main */\n"
    "\n"
    "  -d, --data DIR         the session directory (default dynftrace.data).\n"
    "  -F, --filter PATTERN   show only matching functions and what they call\n"
    "                         (repeatable; \"a,b\" is two patterns). A glob, or\n"
    "                         a regex when it has regex characters (^$+|(){}\n"
    "                         or '.' without * ? [); C++ names match in any\n"
    "                         form (symbol, simple, full).\n"
    "  -N, --notrace PATTERN  hide matching functions and what they call.\n"
    "  -D, --depth N          show N levels of calls (from the filter's match).\n"
    "  -t, --time-filter DUR  hide calls shorter than DUR (ns, us, ms, s).\n"
    "  -T, --trigger FUNC@backtrace\n"
    "                         before each shown call of FUNC, a comment with\n"
    "                         its callers (record's -T ...@backtrace too).\n"
    "      --tid TID          only these threads (repeatable, or TID,TID).\n"
    "      --no-time          leave out the duration / timestamp column.\n"
    "      --demangle=STYLE   C++ names: simple (default: no template arguments\n"
    "                         or parameters), full (as c++filt) or no (the\n"
    "                         symbol). --no-demangle is --demangle=no.\n"
    "      --match=KIND       every pattern is a glob, or a regex (default:\n"
    "                         decided by its characters).\n"
    "  -h, --help             show this help.\n"
    "\n"
    "Traces of the function tracer print one line per call:\n"
    "'TIMESTAMP [TID] func() <- caller', TIMESTAMP in seconds since the\n"
    "start of the recording. Lost events show where they were lost, and a\n"
    "summary ('# thread 1234 lost 5,120 events') ends the output. Calls still\n"
    "open when their thread's trace ends are closed there and marked\n"
    "'(unfinished)'; calls left by longjmp, an exception or pthread_exit\n"
    "are marked '(unwound)'; calls whose exit was lost with a full buffer\n"
    "close where the thread's trace goes on, marked '(exit lost)'.\n"
    "\n"
    "Exit status: 0, 1 when the trace is missing or damaged (what comes\n"
    "before the damage is printed first), 2 on a usage error.\n";

/* Frame flags. */
#define F_INFILTER 1u  /* this call or a caller matches -F (always without -F) */
#define F_NOTRACE  2u  /* this call or a caller matches -N */
#define F_COND	   4u  /* shown if long enough */
#define F_DESC	   8u  /* (look-ahead) something under it shows */
#define F_LONG	   16u /* (look-ahead) F_COND and known to last long enough: shown */
#define F_OPEN	   32u /* (printer) printed as "f() {" */

/* How a call shows: what the look-ahead decided for an entry. */
#define D_SHOWN	     1u
#define D_LEAF	     2u
#define D_UNFINISHED 4u
#define D_UNWOUND    8u
#define D_EXIT_LOST  16u

struct decision {
	uint64_t idx;	   /* the entry's ordinal in its stream */
	uint64_t dur;	   /* D_LEAF: its duration */
	unsigned how;	   /* D_* */
	uint16_t nrv;	   /* D_LEAF: its return value's bytes (0: none) */
	const uint8_t *rv; /* ... inside the stream's mapping */
};

struct rstream {
	struct replay *r;
	struct tr_stream *st;
	struct tr_walk w; /* the printer's call stack, fed by the merge */
	unsigned disp;	  /* shown open frames = indentation */
	/* look-ahead */
	struct tr_stream ahead; /* a second cursor over the stream */
	struct tr_walk aw;	/* its call stack */
	size_t known;		/* aw.stack[0, known) are past the duration check */
	int ahead_end;		/* it delivered the stream's end */
	uint64_t want;		/* the entry the printer asks about */
	struct decision *dec;	/* calls that ended shown, entries >= want, by idx */
	size_t ndec, cap;
};

struct replay {
	struct tr_session *s;
	const struct replay_opts *o;
	FILE *out;
	struct rstream *rs;  /* one per stream of the session */
	uint64_t base;	     /* time origin of the function tracer's timestamps */
	int flat;	     /* function tracer header */
	struct cli_globs bt; /* backtrace triggers: -T and the session's */
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
static uint32_t classify(const struct replay *r, struct tr_walk *w, struct tr_frame *parent,
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

/* ---- look-ahead ------------------------------------------------------- */

/* Would the non-call event EV print a line? (the same answer for both
 * cursors: their stacks are the same at the same event) */
static int other_shows(const struct replay *r, struct tr_walk *w, const struct tr_event *ev)
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
	case TR_CTX_SWITCH:
		return 1;
	default:
		return 0;
	}
}

/* Something under aw.stack[N - 1] shows (N = depth: under the top, or the
 * top's own event): mark it and its callers. A frame marked has all its
 * callers marked, so the walk stops at the first one. */
static void mark_desc(struct tr_walk *aw, size_t n)
{
	while (n-- > 0 && !(aw->stack[n].flags & F_DESC))
		aw->stack[n].flags |= F_DESC;
}

static int ahead_enter(struct tr_walk *aw, struct tr_frame *f, const struct tr_event *ev)
{
	struct rstream *rs = aw->data;

	(void)ev;
	f->flags = classify(rs->r, aw, tr_walk_parent(aw, f), f->func, aw->depth - 1, &f->user);
	return 0;
}

/* Keep D for the printer, in entry order. */
static int dec_add(struct rstream *rs, const struct decision *d)
{
	size_t i = rs->ndec;

	if (rs->ndec == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		struct decision *n = realloc(rs->dec, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rs->dec = n;
		rs->cap = cap;
	}
	/* callees end first: a caller goes before them */
	while (i > 0 && rs->dec[i - 1].idx > d->idx)
		i--;
	memmove(&rs->dec[i + 1], &rs->dec[i], (rs->ndec - i) * sizeof(*d));
	rs->dec[i] = *d;
	rs->ndec++;
	return 0;
}

static int ahead_leave(struct tr_walk *aw, struct tr_frame *f, uint64_t ts, int how)
{
	struct rstream *rs = aw->data;
	struct decision d = {.idx = f->idx, .dur = ts - f->ts};

	/* hidden: what shows under it has marked its callers already */
	if (!(f->flags & F_COND) || d.dur < rs->r->o->time_ns)
		return 0;
	mark_desc(aw, aw->depth - 1);
	if (f->idx < rs->want)
		return 0; /* the printer is past its entry: decided before */
	d.how = D_SHOWN;
	if (!(f->flags & F_DESC))
		d.how |= D_LEAF;
	if (how == TR_LEAVE_UNFINISHED)
		d.how |= D_UNFINISHED;
	else if (how == TR_LEAVE_UNWIND)
		d.how |= D_UNWOUND;
	else if (how == TR_LEAVE_LOST)
		d.how |= D_EXIT_LOST;
	else if (aw->cur && aw->cur->type == TR_EXIT && aw->cur->vals) {
		d.rv = aw->cur->vals;
		d.nrv = aw->cur->nvals;
	}
	return dec_add(rs, &d);
}

static int ahead_other(struct tr_walk *aw, const struct tr_event *ev)
{
	struct rstream *rs = aw->data;

	if (aw->depth && other_shows(rs->r, aw, ev))
		mark_desc(aw, aw->depth);
	return 0;
}

/* A frame set aside by a context switch shows open: its function runs on
 * after the switch back. */
static int ahead_suspend(struct tr_walk *aw, struct tr_frame *f, uint64_t ts)
{
	(void)aw;
	(void)ts;
	f->flags |= F_DESC;
	return 0;
}

static const struct tr_walk_ops ahead_ops = {
    .enter = ahead_enter, .leave = ahead_leave, .other = ahead_other, .suspend = ahead_suspend};

/* One more event for the look-ahead. 0, or -ENOMEM. */
static int ahead_step(struct rstream *rs)
{
	struct tr_walk *aw = &rs->aw;
	uint64_t t = rs->r->o->time_ns;
	struct tr_event ev;
	int ret;

	if (tr_stream_next(&rs->ahead, &ev) <= 0) {
		rs->ahead_end = 1;
		return 0;
	}
	ret = tr_walk_feed(aw, &ev);
	if (ret)
		return ret;
	if (ev.type == TR_CTX_SWITCH)
		rs->known = 0; /* another context's frames: check them again */
	/* The open frames end at EV's time or later: those that began at
	 * least T before it will show. Entry times grow up the stack. */
	if (rs->known > aw->depth)
		rs->known = aw->depth;
	for (; rs->known < aw->depth; rs->known++) {
		struct tr_frame *f = &aw->stack[rs->known];

		if (!(f->flags & F_COND))
			continue;
		if (ev.ts < f->ts || ev.ts - f->ts < t)
			break;
		f->flags |= F_LONG;
		mark_desc(aw, rs->known);
	}
	return 0;
}

/* The frame for entry IDX in F[0, N) (entry order), or NULL. */
static struct tr_frame *frame_find(struct tr_frame *f, size_t n, uint64_t idx)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f[mid].idx == idx)
			return &f[mid];
		if (f[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The open frame of the look-ahead for entry IDX, or NULL: on its stack,
 * or set aside with another context. */
static struct tr_frame *ahead_frame(struct tr_walk *aw, uint64_t idx)
{
	struct tr_frame *f = frame_find(aw->stack, aw->depth, idx);

	for (size_t i = 0; !f && i < aw->nsets; i++)
		f = frame_find(aw->sets[i].f, aw->sets[i].n, idx);
	return f;
}

/* How entry IDX of the stream shows (the printer asks in entry order):
 * run the look-ahead until it is decided. 0, or -ENOMEM. */
static int decide(struct rstream *rs, uint64_t idx, struct decision *d)
{
	struct tr_frame *f;
	size_t done;
	int ret;

	rs->want = idx;
	for (;;) {
		/* Decisions for entries the printer passed without asking
		 * (hidden by its own classification) go. */
		for (done = 0; done < rs->ndec && rs->dec[done].idx < idx; done++)
			;
		if (done < rs->ndec && rs->dec[done].idx == idx) {
			*d = rs->dec[done++];
			break;
		}
		if (idx < rs->aw.nentries) {
			f = ahead_frame(&rs->aw, idx);
			if (!f) {
				/* ended, and not kept: hidden */
				*d = (struct decision){.idx = idx};
				break;
			}
			if ((f->flags & (F_LONG | F_DESC)) == (F_LONG | F_DESC)) {
				*d = (struct decision){.idx = idx, .how = D_SHOWN};
				break;
			}
		}
		if (rs->ahead_end) {
			*d = (struct decision){.idx = idx}; /* cannot happen: same events */
			break;
		}
		ret = ahead_step(rs);
		if (ret)
			return ret;
	}
	if (done) {
		memmove(rs->dec, rs->dec + done, (rs->ndec - done) * sizeof(*d));
		rs->ndec -= done;
	}
	return 0;
}

/* ---- printer ---------------------------------------------------------- */

static void prefix(struct replay *r, struct rstream *rs, const uint64_t *dur)
{
	char buf[32];

	if (!r->o->no_time)
		fprintf(r->out, " %10s ", dur ? cli_fmt_duration(*dur, buf, sizeof(buf)) : "");
	fprintf(r->out, "[%6d] | %*s", (int)rs->st->tid, (int)(2 * rs->disp), "");
}

static const char *mark(unsigned how)
{
	if (how & D_UNFINISHED)
		return " (unfinished)";
	if (how & D_UNWOUND)
		return " (unwound)";
	if (how & D_EXIT_LOST)
		return " (exit lost)";
	return "";
}

/* The backtrace trigger: the function and its callers, innermost first,
 * as a comment above its entry. */
static void print_backtrace(struct replay *r, struct rstream *rs, struct tr_walk *w)
{
	char name[1024];

	prefix(r, rs, NULL);
	fputs("/* backtrace:", r->out);
	for (size_t k = w->depth; k-- > 0;) {
		tr_printable(tr_func_name(rs->st->proc, w->stack[k].func), name, sizeof(name));
		fprintf(r->out, " %s%s", k + 1 == w->depth ? "" : "<- ", name);
	}
	fputs(" */\n", r->out);
}

static int p2_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct rstream *rs = w->data;
	struct replay *r = rs->r;
	struct decision d;
	char name[1024];
	int ret;

	f->flags = classify(r, w, tr_walk_parent(w, f), f->func, w->depth - 1, &f->user);
	if (!(f->flags & F_COND))
		return 0;
	ret = decide(rs, f->idx, &d);
	if (ret || !(d.how & D_SHOWN))
		return ret;
	if (r->bt.n && tr_func_match(rs->st->proc, f->func, &r->bt))
		print_backtrace(r, rs, w);
	tr_printable(tr_func_name(rs->st->proc, f->func), name, sizeof(name));
	/* arguments and return value (args_fmt.c), as uftrace prints them */
	char args[2048] = "", rv[1024] = "";
	if (ev->vals)
		tr_args_format(r->s, ev->vals, ev->nvals, args, sizeof(args));
	if ((d.how & D_LEAF) && d.rv)
		tr_args_format(r->s, d.rv, d.nrv, rv, sizeof(rv));
	if (d.how & D_LEAF) {
		prefix(r, rs, &d.dur);
		fprintf(r->out, "%s(%s)%s%s;%s\n", name, args, *rv ? " = " : "", rv, mark(d.how));
	} else {
		prefix(r, rs, NULL);
		/* A fully demangled name carries its parameter list: as uftrace,
		 * no "()" after it unless there are values to show. */
		if (tr_demangle == 2 && !args[0] && strchr(name, '('))
			fprintf(r->out, "%s {\n", name);
		else
			fprintf(r->out, "%s(%s) {\n", name, args);
		f->flags |= F_OPEN;
		rs->disp++;
	}
	return 0;
}

static int p2_leave(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how)
{
	struct rstream *rs = w->data;
	uint64_t dur = ts - f->ts;
	char name[1024];

	if (!(f->flags & F_OPEN))
		return 0;
	rs->disp--;
	tr_printable(tr_func_name(rs->st->proc, f->func), name, sizeof(name));
	prefix(rs->r, rs, &dur);
	char rv[1024] = "";
	if (how == TR_LEAVE_RETURN && w->cur && w->cur->type == TR_EXIT && w->cur->vals)
		tr_args_format(rs->r->s, w->cur->vals, w->cur->nvals, rv, sizeof(rv));
	fprintf(rs->r->out, "}%s%s%s /* %s */%s\n", *rv ? " = " : "", rv, *rv ? ";" : "", name,
		mark(how == TR_LEAVE_UNFINISHED ? D_UNFINISHED
		     : how == TR_LEAVE_UNWIND	? D_UNWOUND
		     : how == TR_LEAVE_LOST	? D_EXIT_LOST
						: 0));
	return 0;
}

static int p2_other(struct tr_walk *w, const struct tr_event *ev)
{
	struct rstream *rs = w->data;
	struct replay *r = rs->r;
	char name[1024], caller[1024], num[40];

	if (ev->type == TR_CTX_SWITCH) {
		/* the indentation is the open frames' of the context now run */
		rs->disp = 0;
		for (size_t k = 0; k < w->depth; k++)
			rs->disp += (w->stack[k].flags & F_OPEN) != 0;
	}
	if (!other_shows(r, w, ev))
		return 0;
	switch (ev->type) {
	case TR_CTX_SWITCH:
		if (r->flat) {
			if (!r->o->no_time)
				fprintf(r->out, "%15s ", "");
			fprintf(r->out, "[%6d] /* context %" PRIu32 " -> %" PRIu32 " */\n",
				(int)rs->st->tid, TR_CTX_FROM(ev), TR_CTX_TO(ev));
		} else {
			prefix(r, rs, NULL);
			fprintf(r->out, "/* context %" PRIu32 " -> %" PRIu32 " */\n",
				TR_CTX_FROM(ev), TR_CTX_TO(ev));
		}
		break;
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

static const struct tr_walk_ops p2_ops = {.enter = p2_enter, .leave = p2_leave, .other = p2_other};

int views_finish(struct tr_session *s, FILE *out, int ret)
{
	if (ret)
		return ret;
	if (fflush(out) || ferror(out)) {
		if (errno != EPIPE) /* a reader that left (`| head`) is not an error to tell */
			cli_out_error();
		ret = 1;
	}
	/* Damage is told after the output, so it is the last thing seen. */
	for (size_t i = 0; i < s->nstreams; i++) {
		if (s->streams[i].failed) {
			cli_err("%s", s->streams[i].err);
			ret = 1;
		}
	}
	return ret;
}

/* The patterns of the backtrace triggers in TRIG ("f@a,b;g@c"): 0 or
 * -ENOMEM. */
static int add_backtraces(struct cli_globs *g, const char *trig)
{
	char *copy = strdup(trig), *save;

	if (!copy)
		return -ENOMEM;
	for (char *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		char *at = strrchr(t, '@');

		if (!at)
			continue;
		*at = 0;
		for (char *a = at + 1; a; a = strchr(a, ',') ? strchr(a, ',') + 1 : NULL)
			if (!strncmp(a, "backtrace", 9) && (a[9] == ',' || !a[9])) {
				if (cli_glob_add_one(g, t)) {
					free(copy);
					return -ENOMEM;
				}
				break;
			}
	}
	free(copy);
	return 0;
}

int replay_run(struct tr_session *s, const struct replay_opts *o, FILE *out)
{
	struct replay r = {.s = s, .o = o, .out = out};
	struct tr_merge m;
	struct tr_stream *st;
	struct tr_event ev;
	int ret = 0;

	r.flat = s->info.tracer && !strcmp(s->info.tracer, "function");
	for (size_t i = 0; i < o->backtrace.n; i++)
		if (cli_glob_add_one(&r.bt, o->backtrace.v[i]))
			return -ENOMEM;
	if (s->info.trigger && add_backtraces(&r.bt, s->info.trigger)) {
		cli_glob_free(&r.bt);
		return -ENOMEM;
	}
	r.rs = calloc(s->nstreams ? s->nstreams : 1, sizeof(*r.rs));
	if (!r.rs)
		return -ENOMEM;

	for (size_t i = 0; i < s->nstreams; i++) {
		struct rstream *rs = &r.rs[i];

		rs->r = &r;
		rs->st = &s->streams[i];
		tr_walk_init(&rs->w, &p2_ops, rs, rs->st);
		tr_stream_fork(rs->st, &rs->ahead);
		tr_walk_init(&rs->aw, &ahead_ops, rs, &rs->ahead);
	}
	r.base = tr_base_ts(s);
	if (r.flat)
		fputs(o->no_time ? "#   TID  FUNCTION\n" : "#     TIMESTAMP      TID  FUNCTION\n",
		      out);
	else
		fputs(o->no_time ? "#     TID  FUNCTION\n" : "# DURATION     TID     FUNCTION\n",
		      out);

	/* All streams by time; each one's look-ahead runs when its printer
	 * needs it. */
	ret = tr_merge_init(&m, s, want_stream, (void *)o);
	if (ret)
		goto out;
	/* to the end, unless the output can take no more (a closed pipe) */
	while (!ret && !ferror(out) && tr_merge_next(&m, &st, &ev) > 0)
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
		tr_walk_free(&r.rs[i].aw);
		free(r.rs[i].dec);
	}
	free(r.rs);
	cli_glob_free(&r.bt);
	return views_finish(s, out, ret);
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
		} else if ((r = cli_opt(argc, argv, &i, "-T", "--trigger", &v))) {
			const char *at = v ? strrchr(v, '@') : NULL;

			if (r < 0)
				goto out;
			if (!at || at == v || strcmp(at + 1, "backtrace")) {
				cli_err(
				    "replay: bad trigger '%s': replay takes FUNC@backtrace (the "
				    "other actions are record's)",
				    v);
				goto out;
			}
			char *fn = strndup(v, (size_t)(at - v));
			if (!fn || cli_glob_add_one(&o.backtrace, fn)) {
				free(fn);
				cli_err("out of memory");
				ret = 1;
				goto out;
			}
			free(fn);
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
			if (cli_parse_tids(v, &o.tids, &o.ntids)) {
				cli_err("replay: bad thread id list '%s'", v);
				goto out;
			}
		} else if (!strcmp(a, "--no-time")) {
			o.no_time = 1;
		} else if ((r = cli_read_opt("replay", usage_text, argc, argv, &i, &dir)) !=
			   CLI_OPT_TAKEN) {
			ret = r;
			goto out;
		}
	}
	if (cli_glob_check(&o.filter, "replay") || cli_glob_check(&o.notrace, "replay") ||
	    cli_glob_check(&o.backtrace, "replay"))
		goto out;
	if (cli_open_session(&s, dir)) {
		ret = 1;
		goto out;
	}
	/* The function tracer records each call's entry alone. */
	if ((o.time_ns || o.depth) && s.info.tracer && !strcmp(s.info.tracer, "function"))
		cli_err("warning: %s: the function tracer records no durations or depths: -t "
			"and -D do nothing on this session",
			dir);
	ret = cli_close_session(&s, replay_run(&s, &o, stdout), "replaying the trace");
out:
	cli_glob_free(&o.filter);
	cli_glob_free(&o.notrace);
	cli_glob_free(&o.backtrace);
	free(o.tids);
	return ret;
}
