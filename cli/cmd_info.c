// SPDX-License-Identifier: MIT
/*
 * cmd_info.c - `dynftrace info`: what a session holds. Every stream is read
 * through (and so validated) to count its events.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trace_read.h"
#include "views.h"

/* Processes named one by one on info's processes line. */
#define INFO_PIDS_SHOWN 16

static const char usage_text[] =
    "usage: dynftrace info [-d DIR]\n"
    "\n"
    "Print what the session in DIR (default dynftrace.data) holds: the\n"
    "command, tracer and options it was recorded with, its processes and\n"
    "the main one's exit status, every thread with its events, calls and\n"
    "lost events, the size on disk and the trace bytes per recorded call.\n"
    "\n"
    "  -d, --data DIR   the session directory.\n"
    "  -h, --help       show this help.\n"
    "\n"
    "Exit status: 0, 1 when the trace is missing or damaged (the damage is\n"
    "named after the summary), 2 on a usage error.\n";

/* Bytes under PATH (regular files, not following links). */
static uint64_t du(const char *path, int depth)
{
	struct stat st;
	uint64_t sum = 0;
	struct dirent *de;
	DIR *d;

	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	if (depth > 8 || !(d = opendir(path)))
		return 0;
	while ((de = readdir(d))) {
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (asprintf(&sub, "%s/%s", path, de->d_name) < 0)
			break;
		sum += du(sub, depth + 1);
		free(sub);
	}
	closedir(d);
	return sum;
}

/* Distinct threads: with a stream, or only named by a "lost:" line. */
/* The functions patched by relocation (-P) and the refused ones with
 * why, from the processes' patch-*.txt (lib/trace/trace.c); each object
 * once, however many processes loaded it. Printed to OUT (if any); the
 * refused and the objects with some into *NREFUSED, *NOBJECTS_REFUSING. */
#define REFUSED_SHOWN 20
void cli_patched(const char *dir, FILE *out, size_t *nrefused, size_t *nobjects_refusing)
{
	DIR *d = opendir(dir);
	if (nrefused)
		*nrefused = 0, *nobjects_refusing = 0;
	if (!d)
		return;
	char **seen = NULL, line[4096], *some[REFUSED_SHOWN];
	size_t nseen = 0, patched = 0, refused = 0, shown = 0, objects = 0, refusing = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "patch-", 6) || len < 4 ||
		    strcmp(de->d_name + len - 4, ".txt"))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		int skip = 0;
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
			char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
			if (!t3)
				continue; /* damaged: not ours to guess */
			*t1++ = 0, *t2++ = 0, *t3++ = 0;
			if (!strcmp(line, "patched")) {
				skip = 0;
				for (size_t i = 0; i < nseen && !skip; i++)
					skip = !strcmp(seen[i], t3);
				char **v = skip ? seen : realloc(seen, (nseen + 1) * sizeof(*v));
				if (!skip && v && (v[nseen] = strdup(t3))) {
					seen = v;
					nseen++;
				} else if (!skip && v) {
					seen = v;
				}
				if (skip)
					continue;
				objects++;
				patched += strtoul(t1, NULL, 10);
				refused += strtoul(t2, NULL, 10);
				refusing += strtoul(t2, NULL, 10) != 0;
			} else if (!strcmp(line, "refused") && !skip && out) {
				char *s = NULL;
				if (shown < REFUSED_SHOWN &&
				    asprintf(&s, "#   refused      : %s in %s: %s\n", t1, t2, t3) <
					0)
					s = NULL;
				if (shown < REFUSED_SHOWN)
					some[shown] = s;
				shown++;
			}
		}
		fclose(f);
	}
	closedir(d);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	if (nrefused)
		*nrefused = refused, *nobjects_refusing = refusing;
	if (!out)
		return;
	if (objects)
		fprintf(out, "# patched (-P)   : %zu functions in %zu object%s, %zu refused\n",
			patched, objects, objects == 1 ? "" : "s", refused);
	for (size_t i = 0; i < shown && i < REFUSED_SHOWN; i++) {
		if (some[i])
			fputs(some[i], out);
		free(some[i]);
	}
	if (shown > REFUSED_SHOWN)
		fprintf(out, "#   ...          : %zu more refused (patch-*.txt lists them)\n",
			shown - REFUSED_SHOWN);
}

/* Does a "lost:" line before line I name the same thread? */
static int lost_line_repeats(const struct tr_info *in, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (in->lost[j].pid == in->lost[i].pid && in->lost[j].tid == in->lost[i].tid)
			return 1;
	return 0;
}

static size_t count_threads(const struct tr_session *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nstreams; i++) {
		int dup = 0;

		for (size_t j = 0; j < i; j++)
			dup |= s->streams[j].pid == s->streams[i].pid &&
			       s->streams[j].tid == s->streams[i].tid;
		n += !dup;
	}
	for (size_t i = 0; i < s->info.nlost; i++) {
		const struct tr_lost_line *l = &s->info.lost[i];
		int dup = lost_line_repeats(&s->info, i);

		for (size_t j = 0; j < s->nstreams; j++)
			dup |= s->streams[j].pid == l->pid && s->streams[j].tid == l->tid;
		n += !dup;
	}
	return n;
}

static const char *trim(const char *s)
{
	return s + strspn(s, " ");
}

static const char *opt_str(const char *s)
{
	return s && *s ? s : "(none)";
}

int info_run(struct tr_session *s, FILE *out)
{
	const struct tr_info *in = &s->info;
	uint64_t events = 0, calls = 0, stream_bytes = 0, lost_total = 0, first = UINT64_MAX,
		 last = 0;
	char a[48], b[48], c[48], d[48];

	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];

		tr_stream_scan(st);
		events += st->nevents;
		calls += st->ncalls;
		stream_bytes += st->size;
		if (st->have_first && st->first_ts < first)
			first = st->first_ts;
		if (st->nevents && st->last_ts > last)
			last = st->last_ts;
	}
	fprintf(out, "# session        : %s\n", s->dir);
	fprintf(out, "# command        : %s\n", opt_str(in->command));
	fprintf(out, "# tracer         : %s\n", opt_str(in->tracer));
	fprintf(out, "# filter         : %s\n", opt_str(in->filter));
	fprintf(out, "# notrace        : %s\n", opt_str(in->notrace));
	if (in->depth)
		fprintf(out, "# depth          : %" PRIu64 "\n", in->depth);
	else
		fprintf(out, "# depth          : unlimited\n");
	if (in->time_filter_ns)
		fprintf(out, "# time filter    : %" PRIu64 " ns\n", in->time_filter_ns);
	else
		fprintf(out, "# time filter    : (none)\n");
	if (in->buffer_kb)
		fprintf(out, "# buffer         : %" PRIu64 " KiB per thread, %s\n", in->buffer_kb,
			in->overwrite ? "overwrite (keeps the newest)"
				      : "no-overwrite (keeps the oldest)");
	else
		fprintf(out, "# buffer         : runtime default, %s\n",
			in->overwrite ? "overwrite (keeps the newest)"
				      : "no-overwrite (keeps the oldest)");
	if (in->has_start && in->has_end && in->end_ns >= in->start_ns)
		fprintf(out, "# run time       : %s\n",
			trim(cli_fmt_duration(in->end_ns - in->start_ns, a, sizeof(a))));
	fprintf(out, "# processes      :");
	if (!in->npids)
		fprintf(out, " (none started tracing)");
	/* A session of a shell's run holds hundreds: the first ones, then
	 * how many (every one is in the info file's pid: lines). */
	for (size_t i = 0; i < in->npids && i < INFO_PIDS_SHOWN; i++)
		fprintf(out, " %s", in->pids[i]);
	if (in->npids > INFO_PIDS_SHOWN)
		fprintf(out, " ... %zu in all", in->npids);
	fputc('\n', out);
	if (in->has_attach) {
		char b[40];
		fprintf(out, "# attached       : process %d, %" PRIu64 " sites; stopped %s",
			(int)in->attach_pid, in->attach_sites,
			trim(cli_fmt_duration(in->attach_stop_ns, a, sizeof(a))));
		if (in->has_detach && in->detach_ended)
			fprintf(out, "; it ended while recorded\n");
		else if (in->has_detach && in->detach_ns >= in->attach_ns)
			fprintf(out, "; recorded %s, then detached (stopped %s)\n",
				trim(cli_fmt_duration(in->detach_ns - in->attach_ns, b, sizeof(b))),
				trim(cli_fmt_duration(in->detach_stop_ns, a, sizeof(a))));
		else
			fprintf(out, "; not detached (the recording did not finish)\n");
	}
	if (in->has_attach && !in->has_exit && in->has_detach && !in->detach_ended)
		fprintf(out, "# exit status    : still running (detached)\n");
	else if (in->has_exit)
		fprintf(out, "# exit status    : process %d %s %d%s%s%s\n", (int)in->exit_pid,
			in->exit_signaled ? "was killed by signal" : "exited with status",
			in->exit_code, in->exit_signaled ? " (" : "",
			in->exit_signaled ? strsignal(in->exit_code) : "",
			in->exit_signaled ? ")" : "");
	else
		fprintf(out, "# exit status    : unknown (the recording did not finish)\n");
	fprintf(out, "# threads        : %zu\n", count_threads(s));
	if (s->nstreams || in->nlost) {
		fprintf(out, "#   %8s %8s %14s %14s %14s %10s\n", "PID", "TID", "events", "calls",
			"lost", "bytes");
		for (size_t i = 0; i < s->nstreams; i++) {
			struct tr_stream *st = &s->streams[i];
			uint64_t lost = tr_thread_lost(s, st->pid, st->tid);
			int dup = 0;

			for (size_t j = 0; j < i; j++)
				dup |= s->streams[j].pid == st->pid && s->streams[j].tid == st->tid;
			if (!dup)
				lost_total += lost;
			fprintf(out, "#   %8s %8d %14s %14s %14s %10s%s\n", st->proc->key,
				(int)st->tid, cli_thousands(st->nevents, a, sizeof(a)),
				cli_thousands(st->ncalls, b, sizeof(b)),
				cli_thousands(lost, c, sizeof(c)),
				cli_fmt_size(st->size, d, sizeof(d)),
				st->failed ? "  DAMAGED" : "");
		}
	}
	/* threads that lost everything have no stream */
	for (size_t i = 0; i < in->nlost; i++) {
		int seen = lost_line_repeats(in, i);

		for (size_t j = 0; j < s->nstreams; j++)
			seen |= s->streams[j].pid == in->lost[i].pid &&
				s->streams[j].tid == in->lost[i].tid;
		if (seen)
			continue;
		lost_total += tr_thread_lost(s, in->lost[i].pid, in->lost[i].tid);
		fprintf(out, "#   %8d %8d %14s %14s %14s %10s\n", (int)in->lost[i].pid,
			(int)in->lost[i].tid, "0", "0",
			cli_thousands(tr_thread_lost(s, in->lost[i].pid, in->lost[i].tid), c,
				      sizeof(c)),
			"-");
	}
	fprintf(out, "# events         : %s (%s calls)\n", cli_thousands(events, a, sizeof(a)),
		cli_thousands(calls, b, sizeof(b)));
	/* Never a bare 0 when a process's buffers died with it. */
	int uncounted = 0;
	for (size_t i = 0; i < in->nunflushed; i++)
		uncounted += !in->unflushed[i].recovered;
	fprintf(out, "# lost events    : %s%s\n", cli_thousands(lost_total, a, sizeof(a)),
		uncounted ? ", and more not counted (a process was killed before it could flush: "
			    "see below)"
			  : "");
	uint64_t over = 0, drop = 0;
	for (size_t i = 0; i < in->nlost; i++)
		if (!lost_line_repeats(in, i)) {
			over += tr_thread_overwritten(s, in->lost[i].pid, in->lost[i].tid);
			drop += tr_thread_dropped(s, in->lost[i].pid, in->lost[i].tid);
		}
	if (over)
		fprintf(out, "# overwritten    : %s of them (overwrite mode keeps the newest)\n",
			cli_thousands(over, a, sizeof(a)));
	if (drop)
		fprintf(out,
			"# dropped        : %s of them: a thread's buffer was full, the recorder "
			"behind it (a larger buffer, -b, or fewer traced functions lose fewer)\n",
			cli_thousands(drop, a, sizeof(a)));
	if (first != UINT64_MAX && last >= first)
		fprintf(out, "# traced time    : %s\n",
			trim(cli_fmt_duration(last - first, a, sizeof(a))));
	fprintf(out, "# size on disk   : %s (streams %s)\n",
		cli_fmt_size(du(s->dir, 0), a, sizeof(a)),
		cli_fmt_size(stream_bytes, b, sizeof(b)));
	if (calls)
		fprintf(out, "# bytes per call : %.1f (stream files, page padding included)\n",
			(double)stream_bytes / (double)calls);
	cli_patched(s->dir, out, NULL, NULL);
	tr_print_losses(s, out, "# ");
	return views_finish(s, out, 0);
}

int cmd_info(int argc, char **argv)
{
	const char *dir = "dynftrace.data";
	struct tr_session s;
	int r;

	for (int i = 1; i < argc; i++)
		if ((r = cli_read_opt("info", usage_text, argc, argv, &i, &dir)) != CLI_OPT_TAKEN)
			return r;
	if (cli_open_session(&s, dir))
		return 1;
	return cli_close_session(&s, info_run(&s, stdout), "reading the trace");
}
