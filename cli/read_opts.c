/* SPDX-License-Identifier: MIT */
/* read_opts.c - what the commands that read a session share: their common
 * options and opening the session. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "trace_read.h"
#include "pattern.h"

int cli_read_opt(const char *cmd, const char *usage, int argc, char **argv, int *i,
		 const char **dir)
{
	const char *a = argv[*i], *v;
	int r;

	if (cli_is_help(a)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((r = cli_opt(argc, argv, i, "-d", "--data", &v))) {
		if (r < 0)
			return 2;
		*dir = v;
		return CLI_OPT_TAKEN;
	}
	if ((r = cli_demangle_opt(cmd, argc, argv, i)))
		return r < 0 ? 2 : CLI_OPT_TAKEN;
	if ((r = cli_match_opt(cmd, argc, argv, i)))
		return r < 0 ? 2 : CLI_OPT_TAKEN;
	/* A session directory given as a word, as other tracers take it. */
	char infop[PATH_MAX];
	if (a[0] != '-' && snprintf(infop, sizeof(infop), "%s/info", a) < (int)sizeof(infop) &&
	    !access(infop, F_OK)) {
		cli_err("%s: '%s' is a session directory: give it with -d %s", cmd, a, a);
		return 2;
	}
	cli_err("%s: unknown %s '%s'; see 'dynftrace %s --help'", cmd,
		a[0] == '-' ? "option" : "argument", a, cmd);
	return 2;
}

int cli_demangle_opt(const char *cmd, int argc, char **argv, int *i)
{
	const char *v;
	int r;

	if (!strcmp(argv[*i], "--no-demangle")) {
		tr_demangle = 0;
		return 1;
	}
	if (!(r = cli_opt(argc, argv, i, NULL, "--demangle", &v)) || r < 0)
		return r;
	if (!strcmp(v, "simple"))
		tr_demangle = 1;
	else if (!strcmp(v, "full"))
		tr_demangle = 2;
	else if (!strcmp(v, "no"))
		tr_demangle = 0;
	else {
		cli_err("%s: bad --demangle '%s': use simple, full or no", cmd, v);
		return -1;
	}
	return 1;
}

int cli_match_opt(const char *cmd, int argc, char **argv, int *i)
{
	const char *v;
	enum pat_mode m;
	int r;

	if (!(r = cli_opt(argc, argv, i, NULL, "--match", &v)) || r < 0)
		return r;
	if (pat_parse_mode(v, &m)) {
		cli_err("%s: bad --match '%s': use glob or regex", cmd, v);
		return -1;
	}
	pat_set_mode(m);
	return 1;
}

int cli_open_session(struct tr_session *s, const char *dir)
{
	if (!tr_open(s, dir))
		return 0;
	cli_err("%s", s->err);
	tr_close(s);
	return 1;
}

int cli_need_calls(struct tr_session *s, const char *cmd, const char *dir)
{
	if (s->nstreams || !s->info.tracer || strcmp(s->info.tracer, "profile"))
		return 0;
	cli_err("%s: '%s' was recorded by the profile tracer, which keeps a table of "
		"counts and times per function, not the calls: see 'dynftrace report -d %s'",
		cmd, dir, dir);
	tr_close(s);
	return 1;
}

int cli_close_session(struct tr_session *s, int r, const char *doing)
{
	if (r < 0)
		cli_err("out of memory while %s", doing);
	tr_close(s);
	return r ? 1 : 0;
}

int cli_parse_tids(const char *arg, pid_t **tids, size_t *ntids)
{
	const char *p = arg;

	if (!*p)
		return -EINVAL;
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
		n = realloc(*tids, (*ntids + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		*tids = n;
		(*tids)[(*ntids)++] = (pid_t)v;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* "FROM~TO", "FROM~", "~TO": durations since the start of the recording. */
static int parse_range(const char *arg, struct cli_select *sel)
{
	const char *tilde = strchr(arg, '~');
	char from[64];
	size_t len;

	if (!tilde || (size_t)(tilde - arg) >= sizeof(from) || (tilde == arg && !tilde[1]))
		return -EINVAL;
	len = (size_t)(tilde - arg);
	memcpy(from, arg, len);
	from[len] = 0;
	sel->from_ns = 0;
	sel->to_ns = UINT64_MAX;
	if (len && cli_parse_duration(from, &sel->from_ns))
		return -EINVAL;
	if (tilde[1] && cli_parse_duration(tilde + 1, &sel->to_ns))
		return -EINVAL;
	if (sel->to_ns <= sel->from_ns)
		return -EINVAL;
	sel->has_range = 1;
	return 0;
}

int cli_select_opt(const char *cmd, int argc, char **argv, int *i, struct cli_select *sel)
{
	const char *v;
	int r;

	if ((r = cli_opt(argc, argv, i, NULL, "--tid", &v))) {
		if (r < 0)
			return 2;
		r = cli_parse_tids(v, &sel->tids, &sel->ntids);
		if (r == -ENOMEM) {
			cli_err("out of memory");
			return 1;
		}
		if (r) {
			cli_err("%s: bad thread id list '%s': give TID or TID,TID,...", cmd, v);
			return 2;
		}
		return CLI_OPT_TAKEN;
	}
	if ((r = cli_opt(argc, argv, i, "-r", "--time-range", &v))) {
		if (r < 0)
			return 2;
		if (parse_range(v, sel)) {
			cli_err("%s: bad time range '%s': give FROM~TO, FROM~ or ~TO, times since "
				"the start with ns, us, ms or s, FROM before TO",
				cmd, v);
			return 2;
		}
		return CLI_OPT_TAKEN;
	}
	return CLI_OPT_NONE;
}

int cli_select_tid(const struct cli_select *sel, pid_t tid)
{
	if (!sel || !sel->ntids)
		return 1;
	for (size_t i = 0; i < sel->ntids; i++)
		if (sel->tids[i] == tid)
			return 1;
	return 0;
}

void cli_select_free(struct cli_select *sel)
{
	free(sel->tids);
	sel->tids = NULL;
	sel->ntids = 0;
}
