// SPDX-License-Identifier: MIT
/*
 * cmd_graph.c - `dynftrace graph [FUNC]`: the calls of a recorded trace
 * aggregated by call path (calltree.h), as uftrace's graph command shows
 * them: below FUNC, with the paths that led to it above; every call from
 * the threads' outermost ones without FUNC.
 *
 *   # Function call graph of 'foo'
 *   =============== BACKTRACE ===============
 *    backtrace #0: hit 1, time   1.234 us
 *      [0] main
 *      [1] foo
 *
 *   ========== FUNCTION CALL GRAPH ==========
 *   # TOTAL TIME   SELF TIME  FUNCTION
 *      1.234 us    0.954 us : (1) foo
 *      0.180 us    0.180 us :  +-(1) bar
 *      0.100 us    0.100 us :  +-(1) ns::Cls::method
 *
 * (N) is the number of calls along that path; recursion shows as deeper
 * paths. Children are sorted by total time, longest first.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "views.h"

static const char usage_text[] =
    "usage: dynftrace graph [-d DIR] [--tid TID] [-r FROM~TO] [--demangle=STYLE] [FUNC]\n"
    "\n"
    "Print the call graph below FUNC (a name or glob) with the paths that led\n"
    "to it (BACKTRACE), or of every call when FUNC is left out: for each call\n"
    "path its total time, self time and number of calls.\n"
    "\n"
    "  -d, --data DIR          the session directory (default dynftrace.data).\n"
    "      --tid TID           only these threads (repeatable, or TID,TID).\n"
    "  -r, --time-range FROM~TO  only the time between FROM and TO since the\n"
    "                          start of the recording (ns, us, ms, s; FROM~ or ~TO\n"
    "                          leave a side open); calls are cut to the range.\n"
    "      --demangle=STYLE    C++ names: simple (default), full (as c++filt) or\n"
    "                          no (the symbol); --no-demangle is --demangle=no.\n"
    "  -h, --help              show this help.\n"
    "\n"
    "Exit status: 0, 1 when the trace is missing or damaged (the graph of what\n"
    "comes before the damage is printed first) or FUNC was never called, 2 on a\n"
    "usage error.\n";

/* Does node K have a later sibling that is shown? */
static int shown_next(const struct calltree *t, uint32_t k)
{
	for (uint32_t n = t->node[k].next; n; n = t->node[n].next)
		if (t->node[n].calls)
			return 1;
	return 0;
}

/* Next shown node of a depth-first walk from K, or 0. */
static uint32_t next_shown(const struct calltree *t, uint32_t k, int descend)
{
	if (descend)
		for (uint32_t c = t->node[k].child; c; c = t->node[c].next)
			if (t->node[c].calls)
				return c;
	while (k) {
		for (uint32_t n = t->node[k].next; n; n = t->node[n].next)
			if (t->node[n].calls)
				return n;
		k = t->node[k].parent;
	}
	return 0;
}

static void print_graph(const struct calltree *t, FILE *out)
{
	uint32_t chain[4096];

	fputs("========== FUNCTION CALL GRAPH ==========\n"
	      "# TOTAL TIME   SELF TIME  FUNCTION\n",
	      out);
	for (uint32_t k = next_shown(t, 0, 1); k; k = next_shown(t, k, 1)) {
		const struct ct_node *n = &t->node[k];
		char tot[32], self[32], name[1024];
		size_t d = 0;

		for (uint32_t p = k; p; p = t->node[p].parent)
			if (d < sizeof(chain) / sizeof(chain[0]))
				chain[d++] = p;
		/* chain[d - 1] is the outermost, chain[0] is K */
		fprintf(out, "%s  %s : ", cli_fmt_duration(n->total_ns, tot, sizeof(tot)),
			cli_fmt_duration(n->self_ns, self, sizeof(self)));
		if (d > 1) {
			fputc(' ', out);
			for (size_t j = d - 1; j-- > 1;)
				fputs(shown_next(t, chain[j]) ? "|  " : "   ", out);
			fputs("+-", out);
		}
		fprintf(out, "(%" PRIu64 ") %s\n", n->calls,
			views_text(t->names.str[n->name], name, sizeof(name)));
	}
}

/* The backtraces: the ends of BT's paths (nodes with calls), longest total
 * first. */
static int cmp_bt(const void *pa, const void *pb, void *data)
{
	const struct calltree *bt = data;
	const struct ct_node *a = &bt->node[*(const uint32_t *)pa];
	const struct ct_node *b = &bt->node[*(const uint32_t *)pb];

	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

static int print_backtraces(const struct calltree *bt, FILE *out)
{
	uint32_t *ends = malloc(bt->n * sizeof(*ends)), *path = malloc(bt->n * sizeof(*path));
	size_t nends = 0;

	if (!ends || !path) {
		free(ends);
		free(path);
		return -ENOMEM;
	}
	for (size_t k = 1; k < bt->n; k++)
		if (bt->node[k].calls)
			ends[nends++] = (uint32_t)k;
	qsort_r(ends, nends, sizeof(*ends), cmp_bt, (void *)bt);
	fputs("=============== BACKTRACE ===============\n", out);
	for (size_t i = 0; i < nends; i++) {
		char tot[32], name[1024];
		size_t d = 0;

		fprintf(out, " backtrace #%zu: hit %" PRIu64 ", time %s\n", i,
			bt->node[ends[i]].calls,
			cli_fmt_duration(bt->node[ends[i]].total_ns, tot, sizeof(tot)));
		for (uint32_t p = ends[i]; p; p = bt->node[p].parent)
			path[d++] = p;
		for (size_t j = 0; d--; j++)
			fprintf(
			    out, "   [%zu] %s\n", j,
			    views_text(bt->names.str[bt->node[path[d]].name], name, sizeof(name)));
		fputc('\n', out);
	}
	free(ends);
	free(path);
	return 0;
}

int graph_run(struct tr_session *s, const struct cli_select *sel, const struct cli_globs *focus,
	      FILE *out)
{
	struct calltree t, bt;
	struct ct_build b = {.sel = sel, .focus = focus && focus->n ? focus : NULL};
	int ret, any = 0;

	ret = ct_init(&t);
	if (ret)
		return ret;
	ret = ct_init(&bt);
	if (!ret) {
		b.backtraces = b.focus ? &bt : NULL;
		ret = ct_build(&t, s, &b);
	}
	if (!ret)
		ret = ct_sort(&t, 0);
	if (ret)
		goto out;
	for (uint32_t c = t.node[0].child; c; c = t.node[c].next)
		any |= t.node[c].calls != 0;
	if (b.focus) {
		char *pat = cli_glob_join(focus);

		fprintf(out, "# Function call graph of '%s'\n", pat ? pat : "?");
		free(pat);
		if (any && (ret = print_backtraces(&bt, out)))
			goto out;
	} else {
		fputs("# Function call graph of every call\n", out);
	}
	print_graph(&t, out);
	ret = views_finish(s, out, 0);
	if (!any && !ret) {
		char *pat = b.focus ? cli_glob_join(focus) : NULL;

		if (b.focus)
			cli_err("graph: no call of '%s' in the threads and time range selected",
				pat ? pat : "?");
		else
			cli_err("graph: no calls in the threads and time range selected");
		free(pat);
		ret = 1;
	}
out:
	ct_free(&t);
	ct_free(&bt);
	return ret;
}

int cmd_graph(int argc, char **argv)
{
	struct cli_select sel = {0};
	struct cli_globs focus = {0};
	const char *dir = "dynftrace.data";
	struct tr_session s;
	int ret = 2, r;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((r = cli_select_opt("graph", argc, argv, &i, &sel)) != CLI_OPT_NONE) {
			if (r != CLI_OPT_TAKEN) {
				ret = r;
				goto out;
			}
		} else if (a[0] != '-' || !a[1]) {
			if (focus.n) {
				cli_err("graph: give one function (a glob matches several: "
					"'foo*'); see 'dynftrace graph --help'");
				goto out;
			}
			if (cli_glob_add(&focus, a)) {
				cli_err("out of memory");
				ret = 1;
				goto out;
			}
		} else if ((r = cli_read_opt("graph", usage_text, argc, argv, &i, &dir)) !=
			   CLI_OPT_TAKEN) {
			ret = r;
			goto out;
		}
	}
	if (cli_open_session(&s, dir) || cli_need_calls(&s, "graph", dir)) {
		ret = 1;
		goto out;
	}
	ret = cli_close_session(&s, graph_run(&s, &sel, &focus, stdout), "building the graph");
out:
	cli_select_free(&sel);
	cli_glob_free(&focus);
	return ret;
}
