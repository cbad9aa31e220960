// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - `dynftrace report`: time and calls per function.
 *
 * From function_graph entries and exits: total time counts a call from its
 * entry to its exit, once per outermost activation (a recursive function's
 * inner calls are inside its outer call, so they are not added again); self
 * time is the total minus the time of the calls it made; average and
 * standard deviation are over the calls' durations. From a profile session,
 * the runtime's profile-PID.txt tables ("FUNC_ID CALLS TOTAL_NS SELF_NS
 * SUMSQ_NS2" per line) are read instead. Functions of several processes are
 * added up by name and object.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace_read.h"
#include "views.h"

static const char usage_text[] =
    "usage: dynftrace report [-d DIR] [-s total|self|calls|avg]\n"
    "                       [--demangle=simple|full|no]\n"
    "\n"
    "Print one line per function, most expensive first:\n"
    "\n"
    "    Total time   Self time     Average      Stddev       Calls  Function\n"
    "    ==========  ==========  ==========  ==========  ==========  ========\n"
    "    123.456 us   10.000 us    1.234 us    0.100 us         100  main\n"
    "\n"
    "Total time runs from entry to exit (a recursive function counts its\n"
    "outermost calls only); self time leaves out the functions it called;\n"
    "average and standard deviation are over the durations of all calls.\n"
    "Sessions recorded with the profile tracer are read from the runtime's\n"
    "tables; function-tracer sessions have counts only. Losses are summed up\n"
    "at the end ('# thread 1234 lost 5,120 events').\n"
    "\n"
    "  -d, --data DIR       the session directory (default dynftrace.data).\n"
    "  -s, --sort KEY       total (default; calls for a function-tracer\n"
    "                       session, which has no durations), self, calls\n"
    "                       or avg.\n"
    "      --demangle=STYLE C++ names: simple (default), full (as c++filt) or\n"
    "                       no (the symbol); --no-demangle is --demangle=no.\n"
    "  -h, --help           show this help.\n"
    "\n"
    "Exit status: 0, 1 when the trace is missing or damaged (the table then\n"
    "counts what comes before the damage), 2 on a usage error.\n";

struct fstat {
	char *name; /* display name, then " [object]" when not the main program */
	uint64_t calls, total, self;
	uint64_t sum;	    /* of call durations, recursion included */
	long double sumsq;  /* of call durations, ns^2 */
	struct fstat *next; /* hash chain */
};

struct table {
	struct fstat **hash;
	size_t nbuckets, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static struct fstat *table_get(struct table *t, const char *name)
{
	uint64_t h = hash_str(name);
	struct fstat *f;

	if (!t->nbuckets) {
		t->nbuckets = 1024;
		t->hash = calloc(t->nbuckets, sizeof(*t->hash));
		if (!t->hash)
			return NULL;
	}
	for (f = t->hash[h % t->nbuckets]; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->name = strdup(name);
	if (!f->name) {
		free(f);
		return NULL;
	}
	f->next = t->hash[h % t->nbuckets];
	t->hash[h % t->nbuckets] = f;
	t->n++;
	return f;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct fstat *f = t->hash[i], *n;

		for (; f; f = n) {
			n = f->next;
			free(f->name);
			free(f);
		}
	}
	free(t->hash);
}

/* Key of site ID of P: "name", or "name [lib.so]" for a library's function. */
static const char *func_key(struct tr_proc *p, uint32_t id, const char *main_obj, char *buf,
			    size_t size)
{
	const struct tr_site *s = tr_site(p, id);
	const char *name = tr_func_name(p, id), *obj = s ? s->obj : "", *b;

	b = strrchr(obj, '/');
	b = b ? b + 1 : obj;
	if (!*obj || (main_obj && !strcmp(obj, main_obj)))
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%s [%s]", name, b);
	return buf;
}

/* The main program's object of P: the object of its first map, if any. */
static const char *main_object(struct tr_proc *p)
{
	if (p->nmaps)
		return p->maps[0].path;
	return p->nsites ? p->sites[0].obj : NULL;
}

struct rwalk {
	struct table *t;
	uint32_t *active; /* per site id (dense ids) or NULL: recursion depth */
	size_t nactive;
	const char *main_obj;
	int err;
};

static uint32_t *active_of(struct rwalk *rw, uint32_t func)
{
	return rw->active && func < rw->nactive ? &rw->active[func] : NULL;
}

static int r_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct rwalk *rw = w->data;
	uint32_t *a = active_of(rw, f->func);

	(void)ev;
	if (a) {
		f->user = *a == 0; /* outermost activation */
		++*a;
	} else {
		/* sparse ids: look down the stack */
		f->user = 1;
		for (struct tr_frame *g = w->stack; g < f; g++)
			if (g->func == f->func)
				f->user = 0;
	}
	return 0;
}

static int r_leave(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how)
{
	struct rwalk *rw = w->data;
	uint32_t *a = active_of(rw, f->func);
	uint64_t dur = ts - f->ts;
	struct fstat *fs;
	char key[1200];

	(void)how;
	if (a && *a)
		--*a;
	fs = table_get(rw->t, func_key(w->st->proc, f->func, rw->main_obj, key, sizeof(key)));
	if (!fs)
		return -ENOMEM;
	fs->calls++;
	if (f->user)
		fs->total += dur;
	fs->self += dur > f->child_ns ? dur - f->child_ns : 0;
	fs->sum += dur;
	fs->sumsq += (long double)dur * dur;
	return 0;
}

static int r_other(struct tr_walk *w, const struct tr_event *ev)
{
	struct rwalk *rw = w->data;
	struct fstat *fs;
	char key[1200];

	if (ev->type != TR_CALL && ev->type != TR_FUNCTION)
		return 0;
	fs = table_get(rw->t, func_key(w->st->proc, ev->func, rw->main_obj, key, sizeof(key)));
	if (!fs)
		return -ENOMEM;
	fs->calls++;
	if (ev->type == TR_CALL) {
		/* a whole call (-t): its time counts fully; its callees are
		 * recorded the same way, so self time is not known: use total */
		fs->total += ev->arg;
		fs->self += ev->arg;
		fs->sum += ev->arg;
		fs->sumsq += (long double)ev->arg * ev->arg;
		if (w->depth)
			w->stack[w->depth - 1].child_ns += ev->arg;
	}
	return 0;
}

static const struct tr_walk_ops r_ops = {.enter = r_enter, .leave = r_leave, .other = r_other};

static int from_streams(struct tr_session *s, struct table *t)
{
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];
		struct rwalk rw = {.t = t};
		struct tr_walk w;
		struct tr_event ev;
		int ret = 0;

		rw.main_obj = main_object(st->proc);
		if (st->proc->dense && st->proc->nsites) {
			rw.nactive = st->proc->nsites;
			rw.active = calloc(rw.nactive, sizeof(*rw.active));
			if (!rw.active)
				return -ENOMEM;
		}
		tr_walk_init(&w, &r_ops, &rw, st);
		tr_stream_rewind(st);
		while (!ret && tr_stream_next(st, &ev) > 0)
			ret = tr_walk_feed(&w, &ev);
		tr_walk_free(&w);
		free(rw.active);
		if (ret)
			return ret;
	}
	return 0;
}

/* profile-KEY.txt: "FUNC_ID CALLS TOTAL_NS SELF_NS SUMSQ_NS2 SUM_NS" lines
 * (SUM_NS absent from older tables, whose total counted recursion: it is
 * their sum too). Lines starting with "# " are the runtime's notes (a table
 * written at a fatal signal, or incomplete): they go to NOTES, shown under
 * the table. */
static int from_profiles(struct tr_session *s, struct table *t, int *found, FILE *notes)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		struct tr_proc *p = &s->procs[i];
		char *path, line[512], key[1200];
		unsigned no = 0;
		FILE *f;

		if (asprintf(&path, "%s/profile-%s.txt", s->dir, p->key) < 0)
			return -ENOMEM;
		f = fopen(path, "r");
		if (!f) {
			free(path);
			continue;
		}
		*found = 1;
		while (fgets(line, sizeof(line), f)) {
			unsigned long long id, calls, total, self, sum;
			long double sumsq;
			struct fstat *fs;
			int n = -1, m = -1;

			no++;
			if (line[0] == '#' && line[1] == ' ' && notes) {
				size_t l = strcspn(line + 2, "\n");
				fprintf(notes, "# profile-%s.txt: %.*s\n", p->key, (int)l,
					line + 2);
				continue;
			}
			if (line[0] == '#' || line[0] == '\n')
				continue;
			if (sscanf(line, "%llu %llu %llu %llu %Lf%n", &id, &calls, &total, &self,
				   &sumsq, &n) == 5 &&
			    sscanf(line + n, " %llu%n", &sum, &m) == 1)
				n += m;
			else
				sum = total;
			if (n < 0 || (line[n] != '\n' && line[n] != 0) || id > UINT32_MAX ||
			    !tr_site(p, (uint32_t)id)) {
				cli_err("%s: line %u is not 'FUNC_ID CALLS TOTAL_NS SELF_NS "
					"SUMSQ_NS2 [SUM_NS]' with a known function id",
					path, no);
				fclose(f);
				free(path);
				return 1;
			}
			fs = table_get(t,
				       func_key(p, (uint32_t)id, main_object(p), key, sizeof(key)));
			if (!fs) {
				fclose(f);
				free(path);
				return -ENOMEM;
			}
			fs->calls += calls;
			fs->total += total;
			fs->self += self;
			fs->sum += sum;
			fs->sumsq += sumsq;
		}
		fclose(f);
		free(path);
	}
	return 0;
}

static enum report_sort sort_key;

static long double avg_of(const struct fstat *f)
{
	return f->calls ? (long double)f->sum / f->calls : 0;
}

static int cmp_fstat(const void *a, const void *b)
{
	const struct fstat *x = *(const struct fstat *const *)a;
	const struct fstat *y = *(const struct fstat *const *)b;
	long double kx, ky;

	switch (sort_key) {
	case SORT_SELF:
		kx = x->self, ky = y->self;
		break;
	case SORT_CALLS:
		kx = x->calls, ky = y->calls;
		break;
	case SORT_AVG:
		kx = avg_of(x), ky = avg_of(y);
		break;
	default:
		kx = x->total, ky = y->total;
		break;
	}
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* sqrt without libm: Newton's method. */
static long double root(long double v)
{
	long double x = v > 1 ? v : 1;

	if (v <= 0)
		return 0;
	for (int i = 0; i < 200; i++) {
		long double n = (x + v / x) / 2;

		if (n >= x)
			break;
		x = n;
	}
	return x;
}

static const char *dur_col(long double ns, char *buf, size_t size)
{
	/* Sums of corrupt durations can exceed 64 bits (or be NaN): clamp. */
	uint64_t v = !(ns > 0) ? 0 : ns >= 1.8e19L ? UINT64_MAX : (uint64_t)(ns + 0.5L);
	return cli_fmt_duration(v, buf, size);
}

int report_run(struct tr_session *s, enum report_sort sort, FILE *out)
{
	struct table t = {0};
	struct fstat **v = NULL;
	int ret = 0, profile = 0, timed;
	size_t k = 0, notes_len = 0;
	char *notes_text = NULL;
	FILE *notes = NULL;

	if (s->info.tracer && !strcmp(s->info.tracer, "profile")) {
		notes = open_memstream(&notes_text, &notes_len);
		ret = from_profiles(s, &t, &profile, notes);
		if (notes && fclose(notes) && !ret)
			ret = -ENOMEM;
	}
	if (!ret && !profile)
		ret = from_streams(s, &t);
	if (ret)
		goto out;
	timed = !(s->info.tracer && !strcmp(s->info.tracer, "function"));
	v = malloc((t.n ? t.n : 1) * sizeof(*v));
	if (!v) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t.nbuckets; i++)
		for (struct fstat *f = t.hash[i]; f; f = f->next)
			v[k++] = f;
	sort_key = sort;
	qsort(v, k, sizeof(*v), cmp_fstat);
	fprintf(
	    out,
	    "  Total time   Self time     Average      Stddev       Calls  Function\n"
	    "  ==========  ==========  ==========  ==========  ==========  ====================\n");
	for (size_t i = 0; i < k; i++) {
		struct fstat *f = v[i];
		char a[32], b[32], c[32], d[32], name[1200];
		long double avg = avg_of(f), var = 0;

		/* sample variance of the call durations, as trace_stat's s^2 */
		if (f->calls > 1) {
			var = (f->sumsq - (long double)f->sum * f->sum / f->calls) / (f->calls - 1);
			if (var < 0)
				var = 0;
		}
		tr_printable(f->name, name, sizeof(name));
		if (timed)
			fprintf(out, "  %s  %s  %s  %s  %10" PRIu64 "  %s\n",
				dur_col(f->total, a, sizeof(a)), dur_col(f->self, b, sizeof(b)),
				dur_col(avg, c, sizeof(c)), dur_col(root(var), d, sizeof(d)),
				f->calls, name);
		else
			fprintf(out, "  %10s  %10s  %10s  %10s  %10" PRIu64 "  %s\n", "-", "-", "-",
				"-", f->calls, name);
	}
	if (!k)
		fputs("# the trace holds no calls\n", out);
	if (notes_text)
		fputs(notes_text, out);
	tr_print_losses(s, out, "# ");
out:
	free(notes_text);
	free(v);
	table_free(&t);
	return views_finish(s, out, ret);
}

int cmd_report(int argc, char **argv)
{
	const char *dir = "dynftrace.data", *v;
	enum report_sort sort = SORT_TOTAL;
	struct tr_session s;
	int r, sort_given = 0;

	for (int i = 1; i < argc; i++) {
		if ((r = cli_opt(argc, argv, &i, "-s", "--sort", &v))) {
			if (r < 0)
				return 2;
			sort_given = 1;
			if (!strcmp(v, "total"))
				sort = SORT_TOTAL;
			else if (!strcmp(v, "self"))
				sort = SORT_SELF;
			else if (!strcmp(v, "calls"))
				sort = SORT_CALLS;
			else if (!strcmp(v, "avg"))
				sort = SORT_AVG;
			else {
				cli_err(
				    "report: unknown sort key '%s': use total, self, calls or avg",
				    v);
				return 2;
			}
		} else if ((r = cli_read_opt("report", usage_text, argc, argv, &i, &dir)) !=
			   CLI_OPT_TAKEN) {
			return r;
		}
	}
	if (cli_open_session(&s, dir))
		return 1;
	/* The function tracer records no durations: most calls first. */
	if (!sort_given && s.info.tracer && !strcmp(s.info.tracer, "function"))
		sort = SORT_CALLS;
	return cli_close_session(&s, report_run(&s, sort, stdout), "building the report");
}
