// SPDX-License-Identifier: MIT
/*
 * cmd_dump.c - `dynftrace dump --chrome`: the trace as Chrome trace-event
 * JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing load.
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

#include "cli.h"
#include "trace_read.h"
#include "views.h"

static const char usage_text[] =
    "usage: dynftrace dump --chrome [-d DIR] [-o FILE] [--demangle=simple|full|no]\n"
    "\n"
    "Write the trace as Chrome trace-event JSON, for Perfetto\n"
    "(https://ui.perfetto.dev) or chrome://tracing.\n"
    "\n"
    "  --chrome            the output format (the only one for now).\n"
    "  -d, --data DIR      the session directory (default dynftrace.data).\n"
    "  -o, --output FILE   write to FILE instead of the standard output.\n"
    "      --demangle=STYLE  C++ names: simple (default), full (as c++filt) or\n"
    "                      no (the symbol); --no-demangle is --demangle=no.\n"
    "  -h, --help          show this help.\n"
    "\n"
    "Exit status: 0, 1 when the trace is missing or damaged (the JSON then\n"
    "holds what comes before the damage and stays valid), 2 on a usage error.\n";

struct dump {
	FILE *out;
	uint64_t base;
	int first;
};

/* A JSON string: quotes, backslashes and control characters escaped; bytes
 * that are not valid UTF-8 become U+FFFD. */
static void json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	while (*p) {
		unsigned c = *p;
		int n = c < 0x80	     ? 0
			: (c & 0xe0) == 0xc0 ? 1
			: (c & 0xf0) == 0xe0 ? 2
			: (c & 0xf8) == 0xf0 ? 3
					     : -1;

		if (c == '"' || c == '\\') {
			fprintf(out, "\\%c", c);
			p++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(out, "\\u%04x", c);
			p++;
		} else if (n == 0) {
			fputc((int)c, out);
			p++;
		} else {
			int ok = n > 0 && !(c == 0xc0 || c == 0xc1 || c > 0xf4);

			for (int i = 1; ok && i <= n; i++)
				ok = (p[i] & 0xc0) == 0x80;
			if (ok) {
				fwrite(p, 1, (size_t)n + 1, out);
				p += n + 1;
			} else {
				fputs("\\ufffd", out);
				p++;
			}
		}
	}
	fputc('"', out);
}

static void ev_head(struct dump *d, const char *ph, const struct tr_stream *st, uint64_t ts)
{
	uint64_t us = ts >= d->base ? ts - d->base : 0;

	fprintf(d->out, "%s\n{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%" PRIu64 ".%03" PRIu64,
		d->first ? "" : ",", ph, (int)st->pid, (int)st->tid, us / 1000, us % 1000);
	d->first = 0;
}

static int d_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct dump *d = w->data;

	(void)ev;
	ev_head(d, "B", w->st, f->ts);
	fputs(",\"name\":", d->out);
	json_str(d->out, tr_func_name(w->st->proc, f->func));
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

static const struct tr_walk_ops d_ops = {d_enter, d_leave, d_other};

int dump_chrome_run(struct tr_session *s, FILE *out)
{
	struct dump d = {.out = out, .first = 1};
	int ret = 0;

	d.base = tr_base_ts(s);
	fputs("{\"traceEvents\":[", out);
	/* Name the processes after the command (the first word). */
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];
		char name[256];
		int dup = 0;

		for (size_t j = 0; j < i; j++)
			dup |= s->streams[j].pid == st->pid;
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

int cmd_dump(int argc, char **argv)
{
	const char *dir = "dynftrace.data", *output = NULL, *v;
	struct tr_session s;
	int chrome = 0, r;
	FILE *out = stdout;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((r = cli_opt(argc, argv, &i, "-o", "--output", &v))) {
			if (r < 0)
				return 2;
			output = v;
		} else if (!strcmp(a, "--chrome")) {
			chrome = 1;
		} else if ((r = cli_read_opt("dump", usage_text, argc, argv, &i, &dir)) !=
			   CLI_OPT_TAKEN) {
			return r;
		}
	}
	if (!chrome) {
		cli_err("dump: give the output format, --chrome; see 'dynftrace dump --help'");
		return 2;
	}
	if (cli_open_session(&s, dir))
		return 1;
	if (output) {
		out = fopen(output, "w");
		if (!out) {
			cli_err("cannot create '%s': %s", output, strerror(errno));
			tr_close(&s);
			return 1;
		}
	}
	r = dump_chrome_run(&s, out);
	if (output && fclose(out) && !r) {
		cli_err("cannot write '%s': %s", output, strerror(errno));
		r = 1;
	}
	return cli_close_session(&s, r, "writing the JSON");
}
