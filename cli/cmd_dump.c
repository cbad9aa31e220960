// SPDX-License-Identifier: MIT
/*
 * cmd_dump.c - `dynftrace dump`: the trace in another tool's format. Here
 * --chrome, the Chrome trace-event JSON, which Perfetto (ui.perfetto.dev)
 * and chrome://tracing load; --perfetto (dump_perfetto.c), --flame-graph
 * and --svg (dump_flame.c) elsewhere.
 *
 *   {"traceEvents":[
 *   {"ph":"B","pid":1,"tid":1,"ts":0.120,"name":"main"},
 *   {"ph":"E","pid":1,"tid":1,"ts":5.300,"name":"main"},
 *   ...],"displayTimeUnit":"ns"}
 *
 * ts in microseconds since the start of the recording, with nanosecond
 * decimals. Entries and exits are B/E pairs (calls still open when their
 * thread's trace ended get an E there, with "args":{"unfinished":true});
 * whole calls of -t recordings are X events with a dur; function-tracer
 * calls, losses and markers are thread-scoped instant events (ph "i").
 * Streams are written one after the other: viewers sort by ts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args_fmt.h"
#include "argspec.h"
#include "cli.h"
#include "trace_read.h"
#include "views.h"

static const char usage_text[] =
    "usage: dynftrace dump (--chrome | --perfetto | --flame-graph | --svg)\n"
    "                      [-d DIR] [-o FILE] [--tid TID] [-r FROM~TO]\n"
    "                      [--demangle=simple|full|no]\n"
    "       dynftrace dump --ctf -o OUTDIR [-d DIR] [--tid TID]\n"
    "                      [--demangle=simple|full|no]\n"
    "\n"
    "Write the trace in another tool's format:\n"
    "\n"
    "  --chrome            Chrome trace-event JSON, for Perfetto\n"
    "                      (https://ui.perfetto.dev) or chrome://tracing.\n"
    "  --perfetto          Perfetto's own protobuf trace: slices per thread with\n"
    "                      interned names, several times smaller than --chrome.\n"
    "  --flame-graph       folded stacks (\"main;foo;bar 180\": a call path and\n"
    "                      its self time in nanoseconds), for flamegraph.pl,\n"
    "                      inferno or speedscope.\n"
    "  --svg               an interactive flame graph, one SVG file (click to\n"
    "                      zoom, Search or Ctrl-F, Escape to reset).\n"
    "  --ctf               the CTF trace into directory OUTDIR (-o), the\n"
    "                      function ids named: babeltrace2 OUTDIR shows them.\n"
    "\n"
    "  -d, --data DIR      the session directory (default dynftrace.data).\n"
    "  -o, --output FILE   write to FILE instead of the standard output.\n"
    "      --tid TID       only these threads (repeatable, or TID,TID).\n"
    "  -r, --time-range FROM~TO  only the time between FROM and TO since the\n"
    "                      start of the recording (ns, us, ms, s; FROM~ or ~TO\n"
    "                      leave a side open), calls cut to it (--flame-graph\n"
    "                      and --svg).\n"
    "      --demangle=STYLE  C++ names: simple (default), full (as c++filt) or\n"
    "                      no (the symbol); --no-demangle is --demangle=no.\n"
    "  -h, --help          show this help.\n"
    "\n"
    "Flame graphs merge the threads by function name; the time of a call still\n"
    "open when its thread's trace ended counts up to that end.\n"
    "\n"
    "Exit status: 0, 1 when the trace is missing or damaged (the output then\n"
    "holds what comes before the damage and stays valid) or a flame graph has\n"
    "no timed calls, 2 on a usage error.\n";

struct dump {
	FILE *out;
	struct tr_session *s;
	uint64_t base;
	int first;
};

/* A JSON string: quotes, backslashes and control characters escaped; a
 * byte that is not valid UTF-8 becomes the text \xNN, as replay shows it. */
static void json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s);

	fputc('"', out);
	while (*p) {
		unsigned c = *p;
		int n = c >= 0x80 ? argspec_utf8_len(p, left) : 1;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else if (!n)
			fprintf(out, "\\\\x%02x", c);
		else
			fwrite(p, 1, (size_t)n, out);
		n = n ? n : 1;
		p += n;
		left -= (size_t)n;
	}
	fputc('"', out);
}

const char *views_text(const char *s, char *buf, size_t size)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t at = 0, left = strlen(s);

	if (!size)
		return buf;
	while (*p) {
		unsigned c = *p;
		int n = c >= 0x80 ? argspec_utf8_len(p, left) : c < 0x20 || c == 0x7f ? 0 : 1;
		char e[5];
		const void *from = p;
		size_t k = (size_t)n;

		if (!n) {
			snprintf(e, sizeof(e), "\\x%02x", c);
			from = e;
			k = 4;
		}
		if (at + k >= size)
			break;
		memcpy(buf + at, from, k);
		at += k;
		n = n ? n : 1;
		p += n;
		left -= (size_t)n;
	}
	buf[at] = 0;
	return buf;
}

static void ev_head(struct dump *d, const char *ph, const struct tr_stream *st, uint64_t ts)
{
	uint64_t us = ts >= d->base ? ts - d->base : 0;

	fprintf(d->out, "%s\n{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%" PRIu64 ".%03" PRIu64,
		d->first ? "" : ",", ph, (int)st->pid, (int)st->tid, us / 1000, us % 1000);
	d->first = 0;
}

/* The values VALS (NVALS bytes: arguments or a return value) as
 * ,"args":{"arg1":"-3","retval":"\"abc\""}, the text replay shows. */
static void json_vals(struct dump *d, struct tr_session *s, const uint8_t *vals, size_t nvals)
{
	const uint8_t *p, *end = vals + nvals;
	int n = fmt_args_items(vals, nvals, &p);
	struct fmt_arg a;
	char name[16], text[FMT_ARG_STR_MAX * 4 + 64];
	int first = 1;

	for (int i = 0; i < n && fmt_arg_next(&p, end, &a) > 0; i++) {
		tr_arg_name(&a, name, sizeof(name));
		tr_arg_format(s, &a, text, sizeof(text));
		fprintf(d->out, "%s\"%s\":", first ? ",\"args\":{" : ",", name);
		json_str(d->out, text);
		first = 0;
	}
	if (!first)
		fputc('}', d->out);
}

static int d_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct dump *d = w->data;

	ev_head(d, "B", w->st, f->ts);
	fputs(",\"name\":", d->out);
	json_str(d->out, tr_func_name(w->st->proc, f->func));
	if (ev->vals)
		json_vals(d, d->s, ev->vals, ev->nvals);
	fputc('}', d->out);
	return 0;
}

static int d_leave(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how)
{
	struct dump *d = w->data;

	ev_head(d, "E", w->st, ts);
	fputs(",\"name\":", d->out);
	json_str(d->out, tr_func_name(w->st->proc, f->func));
	if (how == TR_LEAVE_UNFINISHED)
		fputs(",\"args\":{\"unfinished\":true}", d->out);
	else if (how == TR_LEAVE_UNWIND)
		fputs(",\"args\":{\"unwound\":true}", d->out);
	else if (how == TR_LEAVE_LOST)
		fputs(",\"args\":{\"exit_lost\":true}", d->out);
	else if (w->cur && w->cur->type == TR_EXIT && w->cur->vals)
		json_vals(d, d->s, w->cur->vals, w->cur->nvals);
	fputc('}', d->out);
	return 0;
}

static int d_other(struct tr_walk *w, const struct tr_event *ev)
{
	struct dump *d = w->data;
	char buf[1100], num[40];

	switch (ev->type) {
	case TR_CALL: {
		uint64_t start = ev->ts - ev->arg;

		ev_head(d, "X", w->st, start);
		fprintf(d->out, ",\"dur\":%" PRIu64 ".%03" PRIu64 ",\"name\":", ev->arg / 1000,
			ev->arg % 1000);
		json_str(d->out, tr_func_name(w->st->proc, ev->func));
		fputc('}', d->out);
		break;
	}
	case TR_FUNCTION:
		ev_head(d, "i", w->st, ev->ts);
		fputs(",\"s\":\"t\",\"name\":", d->out);
		json_str(d->out, tr_func_name(w->st->proc, ev->func));
		fputs(",\"args\":{\"caller\":", d->out);
		json_str(d->out, tr_symbolize(w->st->proc, ev->arg, buf, sizeof(buf)));
		fputs("}}", d->out);
		break;
	case TR_LOST:
	case TR_DISCARDED:
		snprintf(buf, sizeof(buf), "lost %s events",
			 cli_thousands(ev->arg, num, sizeof(num)));
		ev_head(d, "i", w->st, ev->ts);
		fputs(",\"s\":\"t\",\"name\":", d->out);
		json_str(d->out, buf);
		fputc('}', d->out);
		break;
	case TR_MARKER:
		ev_head(d, "i", w->st, ev->ts);
		fputs(",\"s\":\"t\",\"name\":", d->out);
		json_str(d->out, ev->text);
		fputc('}', d->out);
		break;
	case TR_TRACEPOINT:
		tr_tracepoint_format(w->st, ev, buf, sizeof(buf));
		ev_head(d, "i", w->st, ev->ts);
		fputs(",\"s\":\"t\",\"name\":", d->out);
		json_str(d->out, buf);
		fputc('}', d->out);
		break;
	}
	return 0;
}

/* A context switch: the frames set aside end ("switched") and begin again
 * ("resumed") when they come back, so that B and E nest per thread. */
static int d_suspend(struct tr_walk *w, struct tr_frame *f, uint64_t ts)
{
	struct dump *d = w->data;

	ev_head(d, "E", w->st, ts);
	fputs(",\"name\":", d->out);
	json_str(d->out, tr_func_name(w->st->proc, f->func));
	fputs(",\"args\":{\"switched\":true}}", d->out);
	return 0;
}

static int d_resume(struct tr_walk *w, struct tr_frame *f, uint64_t ts)
{
	struct dump *d = w->data;

	ev_head(d, "B", w->st, ts);
	fputs(",\"name\":", d->out);
	json_str(d->out, tr_func_name(w->st->proc, f->func));
	fputs(",\"args\":{\"resumed\":true}}", d->out);
	return 0;
}

static const struct tr_walk_ops d_ops = {
    .enter = d_enter, .leave = d_leave, .other = d_other, .suspend = d_suspend, .resume = d_resume};

int dump_chrome_run(struct tr_session *s, const struct cli_select *sel, FILE *out)
{
	struct dump d = {.out = out, .s = s, .first = 1};
	int ret = 0;

	d.base = tr_base_ts(s);
	fputs("{\"traceEvents\":[", out);
	/* Name the processes after the command (the first word). */
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];
		char name[256];
		int dup = 0;

		if (!cli_select_tid(sel, st->tid))
			continue;
		for (size_t j = 0; j < i; j++)
			dup |=
			    s->streams[j].pid == st->pid && cli_select_tid(sel, s->streams[j].tid);
		if (dup)
			continue;
		snprintf(name, sizeof(name), "%s", s->info.command ? s->info.command : "");
		name[strcspn(name, " ")] = 0;
		fprintf(out,
			"%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"process_name\","
			"\"args\":{\"name\":",
			d.first ? "" : ",", (int)st->pid, (int)st->pid);
		d.first = 0;
		json_str(out, name);
		fputs("}}", out);
	}
	for (size_t i = 0; i < s->nstreams && !ret; i++) {
		struct tr_stream *st = &s->streams[i];
		struct tr_walk w;
		struct tr_event ev;

		if (!cli_select_tid(sel, st->tid))
			continue;
		tr_walk_init(&w, &d_ops, &d, st);
		tr_stream_rewind(st);
		while (!ret && tr_stream_next(st, &ev) > 0)
			ret = tr_walk_feed(&w, &ev);
		tr_walk_free(&w);
	}
	if (ret)
		return ret;
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", out);
	return views_finish(s, out, 0);
}

enum dump_format { FMT_NONE, FMT_CHROME, FMT_PERFETTO, FMT_FOLDED, FMT_SVG, FMT_CTF };

int cmd_dump(int argc, char **argv)
{
	static const char *const flags[] = {NULL,    "--chrome", "--perfetto", "--flame-graph",
					    "--svg", "--ctf"};
	const char *dir = "dynftrace.data", *output = NULL, *v;
	struct cli_select sel = {0};
	struct tr_session s;
	enum dump_format fmt = FMT_NONE;
	int r, ret = 2;
	FILE *out = stdout;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		enum dump_format f = FMT_NONE;

		for (int k = FMT_CHROME; k <= FMT_CTF; k++)
			if (!strcmp(a, flags[k]))
				f = (enum dump_format)k;
		if (f != FMT_NONE) {
			if (fmt != FMT_NONE && fmt != f) {
				cli_err("dump: give one output format, not %s and %s", flags[fmt],
					a);
				goto out;
			}
			fmt = f;
		} else if ((r = cli_opt(argc, argv, &i, "-o", "--output", &v))) {
			if (r < 0)
				goto out;
			output = v;
		} else if ((r = cli_select_opt("dump", argc, argv, &i, &sel)) != CLI_OPT_NONE) {
			if (r != CLI_OPT_TAKEN) {
				ret = r;
				goto out;
			}
		} else if ((r = cli_read_opt("dump", usage_text, argc, argv, &i, &dir)) !=
			   CLI_OPT_TAKEN) {
			ret = r;
			goto out;
		}
	}
	if (fmt == FMT_NONE) {
		cli_err("dump: give the output format, --chrome, --perfetto, --flame-graph, "
			"--svg or --ctf; see 'dynftrace dump --help'");
		goto out;
	}
	if ((fmt == FMT_CHROME || fmt == FMT_PERFETTO || fmt == FMT_CTF) && sel.has_range) {
		cli_err("dump: --time-range works with --flame-graph and --svg");
		goto out;
	}
	if (fmt == FMT_CTF && !output) {
		cli_err("dump: --ctf writes a directory: name it with -o DIR");
		goto out;
	}
	ret = 1;
	if (cli_open_session(&s, dir) || cli_need_calls(&s, "dump", dir))
		goto out;
	if (fmt == FMT_CTF) {
		ret = cli_close_session(&s, dump_ctf_run(&s, &sel, output), "writing the trace");
		goto out;
	}
	if (output) {
		out = fopen(output, "w");
		if (!out) {
			cli_err("cannot create '%s': %s", output, strerror(errno));
			tr_close(&s);
			goto out;
		}
	}
	switch (fmt) {
	case FMT_PERFETTO:
		r = dump_perfetto_run(&s, &sel, out);
		break;
	case FMT_FOLDED:
		r = dump_folded_run(&s, &sel, out);
		break;
	case FMT_SVG:
		r = dump_svg_run(&s, &sel, out);
		break;
	default:
		r = dump_chrome_run(&s, &sel, out);
		break;
	}
	if (output && fclose(out) && !r) {
		cli_err("cannot write '%s': %s", output, strerror(errno));
		r = 1;
	}
	ret = cli_close_session(&s, r, "writing the trace");
out:
	cli_select_free(&sel);
	return ret;
}
