// SPDX-License-Identifier: MIT
/*
 * cmd_record.c - `dynftrace record` and `dynftrace live`.
 *
 * record checks the program before it starts anything (found, executable,
 * not setuid, dynamically linked, has sites), prepares the session
 * directory and its info file, then runs the program with the runtime
 * preloaded and configured through the environment:
 *
 *   LD_PRELOAD=<dir of this binary>/libdynftrace.so[:previous LD_PRELOAD]
 *   DYNFTRACE_RECORD=<absolute session dir>
 *   DYNFTRACE_TRACER=function_graph|function|profile
 *   DYNFTRACE_FILTER, DYNFTRACE_NOTRACE   comma-separated globs
 *   DYNFTRACE_DEPTH, DYNFTRACE_TIME_FILTER (ns), DYNFTRACE_BUFFER_KB,
 *   DYNFTRACE_OVERWRITE=1, DYNFTRACE_DISABLED=1
 *   DYNFTRACE_EVENTS      comma-separated tracepoint globs (-e; kept from
 *                         record's own environment when -e is not given)
 *   DYNFTRACE_SHM         /dev/shm/dynftrace-RECORDPID.XXXXXX: the runtime's
 *                         trace buffers are files there (lib/ring/ring.c, section 6)
 *
 * Every second while the program runs, and once it has ended, record
 * recovers from those files what a process that died without flushing
 * (SIGKILL, OOM killer, _exit) still had in memory, then removes them, and
 * says what a process that died so with buffers in ordinary memory lost
 * (shm_watch.c); a recorder that died itself leaves a directory that the
 * next record removes (its pid is dead).
 *
 * Children inherit the environment: one session covers the process tree.
 * record waits for the program, appends its exit status to the info file
 * and exits with the program's status (128 + N for signal N). SIGINT,
 * SIGTERM and SIGHUP sent to record itself are passed on to the program
 * (those a terminal sends reach the program directly: same process group).
 *
 * live records into a fresh directory under $TMPDIR (or /tmp), replays it,
 * and removes it unless --keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "argspec.h"
#include "attach.h"
#include "cli.h"
#include "dwarf_args.h"
#include "elf.h"
#include "glob.h"
#include "ring.h"
#include "pattern.h"
#include "shm_watch.h"
#include "trace_read.h"
#include "views.h"

#define DEFAULT_DIR	  "dynftrace.data"
#define DEFAULT_BUFFER_KB 4096 /* the runtime's default too (lib/ring/ring.h) */
#define DURATION_MAX_S	  (10ull * 366 * 24 * 3600) /* --duration: 10 years */

static const char record_usage[] =
    "usage: dynftrace record [OPTIONS] [--] PROG [ARGS...]\n"
    "       dynftrace record [OPTIONS] -p PID [--duration DUR]\n"
    "\n"
    "Run PROG with the tracing runtime preloaded and record its calls into\n"
    "a session directory. Threads, fork and exec are followed: the whole\n"
    "process tree goes into one session. Read it with 'dynftrace replay',\n"
    "'report', 'info' or 'dump --chrome'.\n"
    "\n"
    "  -p, --pid PID           attach to running process PID instead (see\n"
    "                          'dynftrace attach'), record it and the children\n"
    "                          it forks until Ctrl-C, SIGTERM or --duration,\n"
    "                          then detach. The process is never restarted.\n"
    "      --duration DUR      with -p: stop after DUR seconds (10, 0.5) or\n"
    "                          DUR with a unit (500ms, 2s).\n"
    "  -d, --data DIR          the session directory (default dynftrace.data).\n"
    "                          An old session there is replaced; any other\n"
    "                          existing file or directory is refused.\n"
    "  -T, --tracer NAME       function_graph (default: entries and exits),\n"
    "                          function (one event per call, with its caller)\n"
    "                          or profile (counts and times per function).\n"
    "  -F, --filter GLOB       trace only matching functions; with\n"
    "                          function_graph also what they call (repeatable;\n"
    "                          \"a,b\" is two patterns). FUNC@OBJECT (or\n"
    "                          FUNC:mod:OBJECT) names one object's functions:\n"
    "                          OBJECT is a glob of its file name, with or\n"
    "                          without what follows .so (malloc@libc).\n"
    "                          Functions these name that have no compiler\n"
    "                          site are patched as with -P: those of other\n"
    "                          objects, or all when PROG has no site.\n"
    "  -N, --notrace GLOB      do not trace matching functions.\n"
    "  -P, --patch GLOB        also trace matching functions that were not\n"
    "                          built with dynftrace's flags: their entries are\n"
    "                          relocated (x86-64, needs libcapstone4). A plain\n"
    "                          glob names the program's functions, FUNC@OBJECT\n"
    "                          another object's (malloc@libc); repeatable.\n"
    "      --patch-libs        plain -P globs name every library's functions\n"
    "                          too (alias: uftrace's --nest-libcall).\n"
    "  -e, --event GLOB        record the tracepoints whose names match, with\n"
    "                          their fields (repeatable; \"a,b\" is two\n"
    "                          patterns; default: none, or DYNFTRACE_EVENTS).\n"
    "  -A, --argument SPEC     record the arguments of matching functions, as\n"
    "                          uftrace: FUNC@arg1,arg2/s,fparg1. argN: integer\n"
    "                          argument N (1-8), fpargN: floating-point one;\n"
    "                          /FORMAT: d (default), i, u, x, p, c, s\n"
    "                          (string), f, e:ENUM, with a size in bits (x32,\n"
    "                          f32). Repeatable. Only these functions pay.\n"
    "  -R, --retval SPEC       record the return value of matching functions:\n"
    "                          FUNC@retval[/FORMAT] (retval/f32, /s...).\n"
    "  -a, --auto-args         record the arguments and return values of every\n"
    "                          function the program's DWARF describes (build it\n"
    "                          with -g), as 'dynftrace sites --args' lists them.\n"
    "  -D, --depth N           trace N levels of calls.\n"
    "  -t, --time-filter DUR   keep only calls that last DUR or more (ns, us,\n"
    "                          ms, s: 10us).\n"
    "  -b, --buffer KB         trace buffer per thread, in KiB (default 4096).\n"
    "      --overwrite         when a buffer is full, overwrite the oldest\n"
    "                          events (flight recorder) instead of dropping\n"
    "                          new ones. Losses are counted either way.\n"
    "      --disabled          start with tracing off (switched on later by\n"
    "                          the control interface).\n"
    "      --force             run even if PROG and its libraries seem to have\n"
    "                          no traceable sites (a script, or code that only\n"
    "                          dlopen()s traced libraries).\n"
    "  -h, --help              show this help.\n"
    "\n"
    "PROG must be built with the flags of 'dynftrace cflags'. It cannot be\n"
    "setuid, setgid, have file capabilities or be statically linked: the\n"
    "runtime is loaded with LD_PRELOAD.\n"
    "\n"
    "Exit status: PROG's (128 + N when signal N killed it); 1 when it could\n"
    "not be started or recorded, 2 on a usage error.\n";

static const char live_usage[] =
    "usage: dynftrace live [OPTIONS] [--] PROG [ARGS...]\n"
    "       dynftrace live [OPTIONS] -p PID [--duration DUR]\n"
    "\n"
    "Record PROG into a temporary session, print it as 'dynftrace replay'\n"
    "does, then delete the session. Takes the options of 'dynftrace record'\n"
    "(see 'dynftrace record --help'; -d is not one of them), and:\n"
    "\n"
    "      --keep       keep the session and print where it is.\n"
    "      --no-time    print no duration column.\n"
    "  -h, --help       show this help.\n"
    "\n"
    "The temporary session is created under $TMPDIR, or /tmp.\n"
    "\n"
    "Exit status: PROG's (128 + N when signal N killed it), or 1 when it\n"
    "could not be started, recorded or replayed; 2 on a usage error.\n";

struct rec_opts {
	const char *dir;
	const char *tracer;
	struct cli_globs filter, notrace, events, patch;
	struct cli_globs triggers; /* -T FUNC@ACTIONS, whole (their commas are actions') */
	struct cli_globs args;	   /* -A FUNC@ARGS and -R FUNC@retval, whole */
	const char *match;	   /* --match: glob or regex, NULL: decided per pattern */
	uint64_t depth, time_ns, buffer_kb;
	int overwrite, disabled, force, patch_libs, auto_args;
	/* -p: attach to a running process instead of starting PROG */
	pid_t pid;
	uint64_t duration_ns; /* --duration: stop after this long (0: on a signal) */
	/* live */
	int keep, no_time;
	char **prog; /* PROG ARGS..., NULL-terminated (argv's end) */
};

/* Is V a trigger the runtime takes (FUNC@ACTION[,ACTION]...)? 0, or -1
 * after saying why. The runtime's parser (lib/trace/trigger.c) checks it
 * again; this one gives the sentence at the command line. */
static int trigger_check(const char *cmd, const char *v)
{
	const char *at = strrchr(v, '@');
	char func[1024], why[512];

	if (!at || at == v || !at[1] || strchr(v, ';')) {
		cli_err("%s: bad trigger '%s': give FUNC@ACTION[,ACTION...]", cmd, v);
		return -1;
	}
	struct cli_globs one = {0};
	if ((size_t)(at - v) >= sizeof(func)) {
		cli_err("%s: trigger pattern too long", cmd);
		return -1;
	}
	memcpy(func, v, (size_t)(at - v));
	func[at - v] = 0;
	char *fv[1] = {func};
	one.v = fv;
	one.n = 1;
	if (cli_glob_check(&one, cmd))
		return -1;
	char *acts = strdup(at + 1), *save;
	if (!acts) {
		cli_err("out of memory");
		return -1;
	}
	for (char *w = strtok_r(acts, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		uint64_t n;
		int ok = !strcmp(w, "trace_on") || !strcmp(w, "traceon") ||
			 !strcmp(w, "trace_off") || !strcmp(w, "traceoff") ||
			 !strcmp(w, "finish") || !strcmp(w, "backtrace") || !strcmp(w, "filter") ||
			 !strcmp(w, "notrace") ||
			 (!strncmp(w, "depth=", 6) && !cli_parse_uint(w + 6, 65535, &n) && n) ||
			 (!strncmp(w, "time=", 5) && !cli_parse_duration(w + 5, &n) && n);
		if (!ok) {
			snprintf(
			    why, sizeof(why),
			    !strcmp(w, "trace") || !strcmp(w, "recover") ||
				    !strncmp(w, "read=", 5) || !strncmp(w, "size=", 5)
				? "uftrace's '%s' action is not supported"
				: "unknown action '%s' (depth=N, time=DUR, trace_on, trace_off, "
				  "finish, backtrace, filter, notrace)",
			    w);
			cli_err("%s: bad trigger '%s': %s", cmd, v, why);
			free(acts);
			return -1;
		}
	}
	free(acts);
	return 0;
}

/* Is V an argument (RETVAL 0: -A) or return value (1: -R) specification
 * the runtime takes? 0, or -1 after saying why. The runtime parses it
 * again with the same parser (lib/trace/argspec.c). */
static int argspec_check(const char *cmd, const char *v, int retval)
{
	const char *at = strrchr(v, '@');
	char func[1024], why[512];
	struct arg_spec sp;

	if (!at || at == v || (!retval && !at[1]) || strchr(v, ';') || strchr(v, '\n')) {
		cli_err("%s: bad %s '%s': give %s", cmd, retval ? "return value" : "argument", v,
			retval ? "FUNC@retval[/FORMAT]" : "FUNC@arg1[/FORMAT][,arg2...]");
		return -1;
	}
	if ((size_t)(at - v) >= sizeof(func)) {
		cli_err("%s: argument pattern too long", cmd);
		return -1;
	}
	memcpy(func, v, (size_t)(at - v));
	func[at - v] = 0;
	char *fv[1] = {func};
	struct cli_globs one = {.v = fv, .n = 1};
	if (cli_glob_check(&one, cmd))
		return -1;
	int err = argspec_parse(at + 1, retval, &sp, why, sizeof(why));
	if (err == -ENOMEM) {
		cli_err("out of memory");
		return -1;
	}
	if (err) {
		cli_err("%s: %s", cmd, why);
		return -1;
	}
	return 0;
}

/* The triggers as DYNFTRACE_TRIGGER takes them: "a;b" (malloc'd). */
static char *trigger_join(const struct cli_globs *g)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < g->n; i++)
		len += strlen(g->v[i]) + 1;
	if (!(s = malloc(len)))
		return NULL;
	s[0] = 0;
	for (size_t i = 0; i < g->n; i++) {
		if (i)
			strcat(s, ";");
		strcat(s, g->v[i]);
	}
	return s;
}

static void rec_free(struct rec_opts *o)
{
	cli_glob_free(&o->filter);
	cli_glob_free(&o->notrace);
	cli_glob_free(&o->events);
	cli_glob_free(&o->patch);
	cli_glob_free(&o->triggers);
	cli_glob_free(&o->args);
}

/* Does the filter pattern P name another object's functions (FUNC@OBJECT,
 * FUNC:mod:OBJECT)? */
static int names_object(const char *p)
{
	return strchr(p, '@') || strstr(p, ":mod:");
}

/*
 * A filter is a request to trace what it names, so the -F patterns that
 * compiler sites cannot serve are patched by relocation as -P patterns are:
 * those that name an object (few libraries are built with sites), and, when
 * the program and its libraries have no site at all, the plain ones too
 * (PLAIN). The runtime never relocates a function that has a compiler site.
 * 0 or -ENOMEM.
 */
static int filters_to_patch(struct rec_opts *o, int plain)
{
	for (size_t k = 0; k < o->filter.n; k++)
		if (!names_object(o->filter.v[k]) == !!plain &&
		    cli_glob_add(&o->patch, o->filter.v[k]))
			return -ENOMEM;
	return 0;
}

/* Returns 0, 1 (help printed) or 2 (usage error printed). */
static int rec_parse(int argc, char **argv, struct rec_opts *o, int live)
{
	const char *cmd = live ? "live" : "record", *v;
	int i, r;

	o->tracer = "function_graph";
	o->dir = DEFAULT_DIR;
	o->buffer_kb = DEFAULT_BUFFER_KB;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (cli_is_help(a)) {
			fputs(live ? live_usage : record_usage, stdout);
			return 1;
		} else if (!live && (r = cli_opt(argc, argv, &i, "-d", "--data", &v))) {
			if (r < 0)
				return 2;
			o->dir = v;
		} else if ((r = cli_opt(argc, argv, &i, "-T", "--tracer", &v)) ||
			   (r = cli_opt(argc, argv, &i, NULL, "--trigger", &v))) {
			if (r < 0)
				return 2;
			/* -T as uftrace's users type it: FUNC@ACTION is a
			 * trigger, a tracer's name (no '@') stays a tracer */
			if (strchr(v, '@') || !strcmp(a, "--trigger") ||
			    !strncmp(a, "--trigger=", 10)) {
				if (trigger_check(cmd, v))
					return 2;
				char **nv =
				    realloc(o->triggers.v, (o->triggers.n + 1) * sizeof(*nv));
				if (!nv || !(nv[o->triggers.n] = strdup(v))) {
					if (nv)
						o->triggers.v = nv;
					cli_err("out of memory");
					return 2;
				}
				o->triggers.v = nv;
				o->triggers.n++;
				continue;
			}
			if (strcmp(v, "function_graph") && strcmp(v, "function") &&
			    strcmp(v, "profile")) {
				cli_err("%s: unknown tracer '%s': use function_graph, function or "
					"profile (or FUNC@ACTION for a trigger)",
					cmd, v);
				return 2;
			}
			o->tracer = v;
		} else if ((r = cli_opt(argc, argv, &i, "-A", "--argument", &v)) ||
			   (r = cli_opt(argc, argv, &i, "-R", "--retval", &v))) {
			if (r < 0)
				return 2;
			int ret = a[1] == 'R' || !strncmp(a, "--retval", 8);
			if (argspec_check(cmd, v, ret))
				return 2;
			/* -R FUNC: FUNC@retval */
			char *one = NULL;
			size_t vl = strlen(v);
			if (ret && v[vl - 1] == '@') {
				one = malloc(vl + 7);
				if (one)
					snprintf(one, vl + 7, "%sretval", v);
			} else {
				one = strdup(v);
			}
			char **nv = realloc(o->args.v, (o->args.n + 1) * sizeof(*nv));
			if (!nv || !one) {
				if (nv)
					o->args.v = nv;
				free(one);
				cli_err("out of memory");
				return 2;
			}
			nv[o->args.n++] = one;
			o->args.v = nv;
		} else if (!strcmp(a, "-a") || !strcmp(a, "--auto-args")) {
			o->auto_args = 1;
		} else if ((r = cli_opt(argc, argv, &i, NULL, "--match", &v))) {
			enum pat_mode m;
			if (r < 0)
				return 2;
			if (pat_parse_mode(v, &m) || m == PAT_AUTO) {
				cli_err("%s: bad --match '%s': use glob or regex", cmd, v);
				return 2;
			}
			pat_set_mode(m);
			o->match = v;
		} else if (live && (r = cli_demangle_opt(cmd, argc, argv, &i))) {
			if (r < 0)
				return 2;
		} else if ((r = cli_opt(argc, argv, &i, "-F", "--filter", &v)) ||
			   (r = cli_opt(argc, argv, &i, "-N", "--notrace", &v))) {
			if (r < 0)
				return 2;
			if (cli_glob_add(a[1] == 'F' || !strncmp(a, "--f", 3) ? &o->filter
									      : &o->notrace,
					 v)) {
				cli_err("out of memory");
				return 2;
			}
		} else if ((r = cli_opt(argc, argv, &i, "-P", "--patch", &v))) {
			if (r < 0)
				return 2;
			if (cli_glob_add(&o->patch, v)) {
				cli_err("out of memory");
				return 2;
			}
		} else if (!strcmp(a, "--patch-libs") || !strcmp(a, "--nest-libcall")) {
			o->patch_libs = 1;
		} else if ((r = cli_opt(argc, argv, &i, "-e", "--event", &v))) {
			if (r < 0)
				return 2;
			if (cli_glob_add(&o->events, v)) {
				cli_err("out of memory");
				return 2;
			}
		} else if ((r = cli_opt(argc, argv, &i, "-D", "--depth", &v))) {
			if (r < 0)
				return 2;
			if (cli_parse_uint(v, 65535, &o->depth) || !o->depth) {
				cli_err(
				    "%s: bad depth '%s': give a number of levels from 1 to 65535",
				    cmd, v);
				return 2;
			}
		} else if ((r = cli_opt(argc, argv, &i, "-t", "--time-filter", &v))) {
			if (r < 0)
				return 2;
			if (cli_parse_duration(v, &o->time_ns)) {
				cli_err("%s: bad duration '%s': give a number with ns, us, ms or s",
					cmd, v);
				return 2;
			}
		} else if ((r = cli_opt(argc, argv, &i, "-b", "--buffer", &v))) {
			if (r < 0)
				return 2;
			if (cli_parse_uint(v, 1u << 22, &o->buffer_kb) || o->buffer_kb < 8) {
				cli_err("%s: bad buffer size '%s': give KiB per thread, from 8 to "
					"4194304",
					cmd, v);
				return 2;
			}
		} else if ((r = cli_opt(argc, argv, &i, "-p", "--pid", &v))) {
			uint64_t pid;
			if (r < 0)
				return 2;
			if (cli_parse_uint(v, INT_MAX, &pid) || !pid) {
				cli_err("%s: bad process id '%s'", cmd, v);
				return 2;
			}
			o->pid = (pid_t)pid;
		} else if ((r = cli_opt(argc, argv, &i, NULL, "--duration", &v))) {
			if (r < 0)
				return 2;
			/* A plain number is seconds, as timeout(1) reads it. */
			if (cli_parse_seconds(v, DURATION_MAX_S, &o->duration_ns) ||
			    !o->duration_ns) {
				cli_err("%s: bad duration '%s': give seconds, or a number with ns, "
					"us, ms or s, up to 10 years",
					cmd, v);
				return 2;
			}
		} else if (!strcmp(a, "--overwrite")) {
			o->overwrite = 1;
		} else if (!strcmp(a, "--disabled")) {
			o->disabled = 1;
		} else if (!strcmp(a, "--force")) {
			o->force = 1;
		} else if (live && !strcmp(a, "--keep")) {
			o->keep = 1;
		} else if (live && !strcmp(a, "--no-time")) {
			o->no_time = 1;
		} else {
			cli_err("%s: unknown option '%s'; see 'dynftrace %s --help'", cmd, a, cmd);
			return 2;
		}
	}
	if (cli_glob_check(&o->filter, cmd) || cli_glob_check(&o->notrace, cmd) ||
	    cli_glob_check(&o->patch, cmd))
		return 2;
	if ((o->args.n || o->auto_args) && strcmp(o->tracer, "function_graph")) {
		cli_err("%s: arguments and return values (-A, -R) work with the function_graph "
			"tracer only",
			cmd);
		return 2;
	}
	if ((o->args.n || o->auto_args) && o->time_ns)
		cli_err("warning: with -t, calls are recorded whole, without their values: "
			"-A, -R and --auto-args are ignored (record without -t and filter with "
			"'replay -t' to see them)");
	if (o->triggers.n && strcmp(o->tracer, "function_graph")) {
		cli_err("%s: triggers (-T FUNC@ACTION) work with the function_graph tracer only",
			cmd);
		return 2;
	}
	if (filters_to_patch(o, 0)) {
		cli_err("out of memory");
		return 2;
	}
	if (o->pid) {
		if (i < argc) {
			cli_err("%s: -p attaches to a running process: give no program", cmd);
			return 2;
		}
		o->prog = argv + argc; /* empty */
		return 0;
	}
	if (o->duration_ns) {
		cli_err("%s: --duration needs -p PID", cmd);
		return 2;
	}
	if (i >= argc) {
		cli_err("%s: no program given; see 'dynftrace %s --help'", cmd, cmd);
		return 2;
	}
	o->prog = argv + i;
	return 0;
}

/*
 * Find PROG as execvp would: a name with a slash as is, else the first
 * executable regular file in $PATH. 0 with PATH_OUT, or 1 with the error
 * printed.
 */
static int resolve(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH"), *p;
	struct stat st;
	int denied = 0;

	if (!*prog) {
		cli_err("the program name is empty");
		return 1;
	}
	if (strchr(prog, '/')) {
		if (stat(prog, &st) < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				cli_err("program '%s' not found", prog);
			else
				cli_err("cannot run '%s': %s", prog, strerror(errno));
			return 1;
		}
		if (!S_ISREG(st.st_mode) || access(prog, X_OK)) {
			cli_err("program '%s' is not executable", prog);
			return 1;
		}
		snprintf(out, size, "%s", prog);
		return 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if ((int)snprintf(out, size, "%.*s%s%s", (int)len, p, len ? "/" : "", prog) <
			(int)size &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (!access(out, X_OK))
				return 0;
			denied = 1;
		}
		if (!end)
			break;
		p = end;
	}
	if (denied)
		cli_err("program '%s' is not executable", prog);
	else
		cli_err("program '%s' not found in PATH", prog);
	return 1;
}

/* The checks on a resolved program that need no side effect. 0 or 1. */
static int check_program(const char *path, const char *prog, int force, struct rec_opts *o)
{
	char err[300], head[2] = {0};
	struct stat st;
	size_t total;
	int is_static, fd, ret;

	if (stat(path, &st) < 0) {
		cli_err("cannot run '%s': %s", prog, strerror(errno));
		return 1;
	}
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		cli_err("%s is %s: the loader ignores LD_PRELOAD for it, so it cannot be traced",
			prog, st.st_mode & S_ISUID ? "setuid" : "setgid");
		return 1;
	}
	if (getxattr(path, "security.capability", NULL, 0) > 0) {
		cli_err("%s has file capabilities: the loader ignores LD_PRELOAD for it, so it "
			"cannot be traced",
			prog);
		return 1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, head, 2) < 0)
			head[0] = 0;
		close(fd);
	}
	if (head[0] == '#' && head[1] == '!')
		return 0; /* a script: what it runs is not known here */
	if (force)
		return 0;
	ret = cli_sites_count(path, &total, &is_static, err, sizeof(err));
	if (ret == -ENOMEM) {
		cli_err("out of memory while reading '%s'", prog);
		return 1;
	}
	if (ret) {
		/* elf.c's messages start with the path */
		if (ret == -EINVAL && !strncmp(err, path, strlen(path)))
			cli_err("cannot trace %s (--force runs it anyway)", err);
		else
			cli_err("cannot trace '%s': %s (--force runs it anyway)", prog, err);
		return 1;
	}
	if (is_static) {
		cli_err("%s is statically linked: the runtime cannot be preloaded into it, so it "
			"cannot be traced",
			prog);
		return 1;
	}
	if (!total && filters_to_patch(o, 1)) {
		cli_err("out of memory");
		return 1;
	}
	if (!total && !o->patch.n) {
		cli_err(
		    "%s has no traceable sites, nor have its libraries: rebuild it with the "
		    "flags of 'dynftrace cflags', name functions to patch with -P or -F, or pass "
		    "--force if it dlopen()s traced code",
		    prog);
		return 1;
	}
	return 0;
}

/* Does DIR look like a session of ours: an info file that starts with
 * "version:"? */
static int is_session(const char *dir)
{
	char path[PATH_MAX], buf[9] = {0};
	int fd;
	ssize_t n;

	if (snprintf(path, sizeof(path), "%s/info", dir) >= (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	n = read(fd, buf, 8);
	close(fd);
	return n == 8 && !memcmp(buf, "version:", 8);
}

/* Create DIR (replacing an old session) and DIR/ctf. 0 or 1. */
static int make_dir(const char *dir, int fresh)
{
	char ctf[PATH_MAX];
	struct stat st;

	if (!fresh && lstat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || !is_session(dir)) {
			cli_err("'%s' exists and is not a dynftrace session: remove it or choose "
				"another directory with -d",
				dir);
			return 1;
		}
		if (cli_rm_tree(dir)) {
			cli_err("cannot replace the old session in '%s': %s", dir, strerror(errno));
			return 1;
		}
	}
	if (!fresh && mkdir(dir, 0755) < 0) {
		cli_err("cannot create the output directory '%s': %s", dir, strerror(errno));
		return 1;
	}
	if (snprintf(ctf, sizeof(ctf), "%s/ctf", dir) >= (int)sizeof(ctf)) {
		cli_err("the output directory name '%s' is too long", dir);
		return 1;
	}
	if (mkdir(ctf, 0755) < 0) {
		cli_err("cannot create the output directory '%s': %s", ctf, strerror(errno));
		return 1;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ARG for the command line of the info file: shell-quoted when needed,
 * control characters as '?' (one line). */
static void put_arg(FILE *f, const char *arg)
{
	int plain = *arg != 0;

	for (const char *p = arg; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "-_./=:,+@%",
			    *p))
			plain = 0;
	if (plain) {
		fputs(arg, f);
		return;
	}
	fputc('\'', f);
	for (const char *p = arg; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, f);
	}
	fputc('\'', f);
}

/* A specification list longer than this goes to the runtime through the
 * session's args.txt: one string of the environment holds 128 KiB at most. */
#define ARGS_ENV_MAX 16384

/* --auto-args: the specifications DWARF gives, added to -A/-R's. */
struct auto_ctx {
	struct rec_opts *o;
	int oom;
};

static int auto_add(struct auto_ctx *c, const char *func, const char *spec)
{
	char *one, **nv;

	if (!spec)
		return 0;
	/* A '.' (foo.lto_priv.0) would make the name a regex, matching
	 * anywhere: as a glob class it stays this one name. */
	size_t dots = 0, k = 0;
	for (const char *p = func; *p; p++)
		dots += *p == '.';
	char *name = malloc(strlen(func) + 2 * dots + 1);
	if (!name) {
		c->oom = 1;
		return -1;
	}
	for (const char *p = func; *p; p++) {
		if (*p == '.') {
			memcpy(name + k, "[.]", 3);
			k += 3;
		} else {
			name[k++] = *p;
		}
	}
	name[k] = 0;
	int r = asprintf(&one, "%s@%s", name, spec);
	free(name);
	if (r < 0) {
		c->oom = 1;
		return -1;
	}
	nv = realloc(c->o->args.v, (c->o->args.n + 1) * sizeof(*nv));
	if (!nv) {
		free(one);
		c->oom = 1;
		return -1;
	}
	nv[c->o->args.n++] = one;
	c->o->args.v = nv;
	return 0;
}

static int auto_emit(void *ctx, const struct dwarf_func_args *f)
{
	struct auto_ctx *c = ctx;

	return auto_add(c, f->func, f->argspec) || auto_add(c, f->func, f->retspec);
}

/*
 * Every function of EXE (the program's file) that its DWARF describes gets
 * the specifications `sites --args` prints, and the enums they name go to
 * DIR/enums.txt for the readers. Shared objects' functions are not read
 * (their DWARF is usually in a separate debug package); -A/-R name them.
 * 0, or 1 after saying why.
 */
static int auto_args(struct rec_opts *o, const char *exe, const char *dir)
{
	struct auto_ctx c = {.o = o};
	char path[PATH_MAX], err[512] = "";
	FILE *en;
	int n;

	if (!o->auto_args)
		return 0;
	if (!dwarf_args_available()) {
		cli_err("--auto-args: %s", DWARF_ARGS_NO_LIBDW);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/enums.txt", dir);
	en = fopen(path, "w");
	if (!en) {
		cli_err("cannot write to the output directory '%s': %s", dir, strerror(errno));
		return 1;
	}
	n = dwarf_auto_args(exe, NULL, auto_emit, &c, en, err, sizeof(err));
	if (fclose(en) && n >= 0) {
		cli_err("cannot write %s: %s", path, strerror(errno));
		return 1;
	}
	if (c.oom) {
		cli_err("out of memory");
		return 1;
	}
	if (n < 0) {
		cli_err("--auto-args: %s", *err ? err : strerror(-n));
		return 1;
	}
	if (*err)
		cli_err("warning: --auto-args: %s", err);
	if (!n)
		cli_err("warning: --auto-args: the DWARF of %s describes no function", exe);
	return 0;
}

static int write_info(const char *dir, const struct rec_opts *o, uint64_t start)
{
	char path[PATH_MAX], *filter, *notrace;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/info", dir);
	f = fopen(path, "w");
	if (!f) {
		cli_err("cannot write to the output directory '%s': %s", dir, strerror(errno));
		return 1;
	}
	filter = cli_glob_join(&o->filter);
	notrace = cli_glob_join(&o->notrace);
	fprintf(f, "version: 1\ncommand:");
	for (char **a = o->prog; *a; a++) {
		fputc(' ', f);
		put_arg(f, *a);
	}
	fprintf(f,
		"\ntracer: %s\nfilter:%s%s\nnotrace:%s%s\ndepth: %" PRIu64
		"\ntime_filter_ns: %" PRIu64 "\nbuffer_kb: %" PRIu64 "\noverwrite: %d\n"
		"start_ns: %" PRIu64 "\n",
		o->tracer, filter && *filter ? " " : "", filter ? filter : "",
		notrace && *notrace ? " " : "", notrace ? notrace : "", o->depth, o->time_ns,
		o->buffer_kb, o->overwrite, start);
	free(filter);
	free(notrace);
	if (o->triggers.n) {
		char *trig = trigger_join(&o->triggers);
		if (trig)
			fprintf(f, "trigger: %s\n", trig);
		free(trig);
	}
	if (o->args.n) {
		char *args = trigger_join(&o->args);
		if (args && strlen(args) > ARGS_ENV_MAX)
			fprintf(f, "argument: %zu specifications (args.txt)\n", o->args.n);
		else if (args)
			fprintf(f, "argument: %s\n", args);
		free(args);
	}
	if (fflush(f) || ferror(f)) {
		cli_err("cannot write to the output directory '%s': %s", dir, strerror(errno));
		ret = 1;
	}
	if (fclose(f) && !ret) {
		cli_err("cannot write to the output directory '%s': %s", dir, strerror(errno));
		ret = 1;
	}
	return ret;
}

static volatile pid_t child_pid;

static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* A terminal's signals already reached the child (same process
	 * group): pass on only those sent to dynftrace itself. */
	if (child_pid > 0 &&
	    (si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL))
		kill(child_pid, sig);
}

static int set_env(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_env(const char *name, const char *fmt, ...)
{
	va_list ap;
	char *v;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&v, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	r = setenv(name, v, 1);
	free(v);
	return r;
}

/* The runtime's settings for a recording, each given to PUT (NAME, VALUE):
 * the child's environment, or the block an attach passes. 0 or -1. */
typedef int (*put_fn)(void *ctx, const char *name, const char *val);
static int rec_settings(const struct rec_opts *o, const char *absdir, const char *shmdir,
			put_fn put, void *ctx)
{
	char *filter = cli_glob_join(&o->filter), *notrace = cli_glob_join(&o->notrace);
	char num[32];
	int r = 0;

	if (!filter || !notrace) {
		free(filter);
		free(notrace);
		return -1;
	}
	r |= put(ctx, "DYNFTRACE_RECORD", absdir);
	/* The relocator's sweep of each library, once for the whole tree */
	char cache[PATH_MAX + 8];
	snprintf(cache, sizeof(cache), "%s/cache", absdir);
	r |= put(ctx, "DYNFTRACE_RELOC_CACHE", cache);
	r |= put(ctx, "DYNFTRACE_TRACER", o->tracer);
	if (*filter)
		r |= put(ctx, "DYNFTRACE_FILTER", filter);
	if (*notrace)
		r |= put(ctx, "DYNFTRACE_NOTRACE", notrace);
#define PUT_NUM(name, v)                                                                           \
	(snprintf(num, sizeof(num), "%" PRIu64, (uint64_t)(v)), put(ctx, name, num))
	if (o->depth)
		r |= PUT_NUM("DYNFTRACE_DEPTH", o->depth);
	if (o->time_ns)
		r |= PUT_NUM("DYNFTRACE_TIME_FILTER", o->time_ns);
	if (o->buffer_kb)
		r |= PUT_NUM("DYNFTRACE_BUFFER_KB", o->buffer_kb);
#undef PUT_NUM
	if (o->overwrite)
		r |= put(ctx, "DYNFTRACE_OVERWRITE", "1");
	if (o->disabled)
		r |= put(ctx, "DYNFTRACE_DISABLED", "1");
	if (o->events.n) {
		char *events = cli_glob_join(&o->events);
		r |= events ? put(ctx, "DYNFTRACE_EVENTS", events) : -1;
		free(events);
	}
	if (o->patch.n) {
		char *patch = cli_glob_join(&o->patch);
		r |= patch ? put(ctx, "DYNFTRACE_PATCH", patch) : -1;
		free(patch);
	}
	if (o->patch_libs)
		r |= put(ctx, "DYNFTRACE_PATCH_LIBS", "1");
	if (o->triggers.n) {
		char *trig = trigger_join(&o->triggers);
		r |= trig ? put(ctx, "DYNFTRACE_TRIGGER", trig) : -1;
		free(trig);
	}
	if (o->args.n) {
		char *args = trigger_join(&o->args), path[PATH_MAX + 16];
		/* A long list (--auto-args): through a file (ARGS_ENV_MAX) */
		if (args && strlen(args) > ARGS_ENV_MAX) {
			FILE *f;
			int bad;
			snprintf(path, sizeof(path), "@%s/args.txt", absdir); /* "@FILE" */
			if (!(f = fopen(path + 1, "w"))) {
				bad = 1;
			} else {
				bad = fputs(args, f) < 0;
				bad |= fclose(f) != 0;
			}
			free(args);
			if (bad) {
				cli_err("cannot write %s: %s", path + 1, strerror(errno));
				return -1;
			}
			args = strdup(path);
		}
		r |= args ? put(ctx, "DYNFTRACE_ARGS", args) : -1;
		free(args);
	}
	if (o->match)
		r |= put(ctx, "DYNFTRACE_MATCH", o->match);
	if (*shmdir)
		r |= put(ctx, "DYNFTRACE_SHM", shmdir);
	const char *ctl = getenv("DYNFTRACE_CONTROL"); /* live control; =0 turns it off */
	r |= put(ctx, "DYNFTRACE_CONTROL", ctl ? ctl : "1");
	free(filter);
	free(notrace);
	return r ? -1 : 0;
}

static int put_env(void *ctx, const char *name, const char *val)
{
	(void)ctx;
	return setenv(name, val, 1);
}

/* In the child: the environment of the runtime. 0 or -1. */
static int child_env(const struct rec_opts *o, const char *lib, const char *absdir,
		     const char *shmdir)
{
	static const char *const ours[] = {
	    "DYNFTRACE_FILTER",	     "DYNFTRACE_NOTRACE",    "DYNFTRACE_DEPTH",
	    "DYNFTRACE_TIME_FILTER", "DYNFTRACE_BUFFER_KB",  "DYNFTRACE_OVERWRITE",
	    "DYNFTRACE_DISABLED",    "DYNFTRACE_SHM",	     "DYNFTRACE_PATCH",
	    "DYNFTRACE_PATCH_LIBS",  "DYNFTRACE_TRIGGER",    "DYNFTRACE_MATCH",
	    "DYNFTRACE_ARGS",	     "DYNFTRACE_RELOC_CACHE"};
	const char *pre = getenv("LD_PRELOAD");
	int r = pre && *pre ? set_env("LD_PRELOAD", "%s:%s", lib, pre)
			    : set_env("LD_PRELOAD", "%s", lib);
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		unsetenv(ours[i]);
	return r || rec_settings(o, absdir, shmdir, put_env, NULL) ? -1 : 0;
}

struct cfg_block {
	char *buf;
	size_t len;
};

static int put_block(void *ctx, const char *name, const char *val)
{
	struct cfg_block *b = ctx;
	return attach_config_add(&b->buf, &b->len, name, val);
}

/* While the program runs: look for dead processes (shm_watch_scan). */
#define SCAN_NS 1000000000ull

/*
 * Run the recording of O into DIR (FRESH: DIR was just created by us).
 * Returns the exit status for the shell; *STARTED tells whether the program
 * ran (so that a trace exists).
 */
static int record_run(struct rec_opts *o, const char *dir, int fresh, int *started)
{
	char exe[PATH_MAX], lib[PATH_MAX], absdir[PATH_MAX], line[128];
	char shmdir[128];
	struct sigaction sa, old[3];
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	int pfd[2], status = 0, exec_err = 0, ret;
	struct shm_watch w;
	sigset_t chld, oldmask;
	uint64_t start, next_scan;
	pid_t pid, r;
	ssize_t n;

	*started = 0;
	if (resolve(o->prog[0], exe, sizeof(exe)) || check_program(exe, o->prog[0], o->force, o))
		return 1;
	if (cli_runtime(NULL, lib, NULL, sizeof(lib))) {
		cli_err(
		    "cannot find the runtime libdynftrace.so (next to the dynftrace command, or "
		    "installed with it)");
		return 1;
	}
	if (make_dir(dir, fresh))
		return 1;
	if (!realpath(dir, absdir)) {
		cli_err("cannot resolve the output directory '%s': %s", dir, strerror(errno));
		return 1;
	}
	if (auto_args(o, exe, dir))
		return 1;
	start = now_ns();
	if (write_info(dir, o, start))
		return 1;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		cli_err("cannot start '%s': %s", o->prog[0], strerror(errno));
		return 1;
	}
	shm_watch_mkdir(shmdir, sizeof(shmdir));
	fflush(NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	/* SIGCHLD blocked: the wait below sleeps until it comes (sigtimedwait) */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &oldmask);
	pid = fork();
	if (pid == 0) {
		int e;

		for (int i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		close(pfd[0]);
		if (child_env(o, lib, absdir, shmdir)) {
			e = ENOMEM;
		} else {
			execv(exe, o->prog);
			e = errno;
		}
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		cli_err("cannot start '%s': %s", o->prog[0], strerror(errno));
		close(pfd[0]);
		for (int i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		if (*shmdir)
			cli_rm_tree(shmdir);
		return 1;
	}
	child_pid = pid;
	do
		n = read(pfd[0], &exec_err, sizeof(exec_err));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	/* While the program runs, every SCAN_NS: the buffers of processes
	 * that died go now, not at the end (a long-running program's dead
	 * workers would keep their tmpfs memory). */
	shm_watch_init(&w, dir, shmdir, absdir, pid);
	next_scan = now_ns() + SCAN_NS;
	while ((r = waitpid(pid, &status, WNOHANG)) != pid) {
		uint64_t now = now_ns();
		struct timespec ts;

		if (r < 0 && errno != EINTR)
			break;
		if (now >= next_scan) {
			if (n != (ssize_t)sizeof(exec_err))
				shm_watch_scan(&w, 0, 0);
			next_scan = now_ns() + SCAN_NS;
			continue;
		}
		ts.tv_sec = (time_t)((next_scan - now) / 1000000000ull);
		ts.tv_nsec = (long)((next_scan - now) % 1000000000ull);
		sigtimedwait(&chld, NULL, &ts); /* SIGCHLD, a timeout or a forwarded signal */
	}
	child_pid = 0;
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	if (n == (ssize_t)sizeof(exec_err)) {
		cli_err("cannot run '%s': %s", o->prog[0], strerror(exec_err));
		if (*shmdir)
			cli_rm_tree(shmdir);
		return 1;
	}
	*started = 1;
	shm_watch_scan(&w, 1, status);
	shm_watch_free(&w);
	if (*shmdir)
		cli_rm_tree(shmdir);
	if (WIFSIGNALED(status)) {
		snprintf(line, sizeof(line), "exit: %d signal %d\nend_ns: %" PRIu64 "\n", (int)pid,
			 WTERMSIG(status), now_ns());
		ret = 128 + WTERMSIG(status);
	} else {
		snprintf(line, sizeof(line), "exit: %d status %d\nend_ns: %" PRIu64 "\n", (int)pid,
			 WEXITSTATUS(status), now_ns());
		ret = WEXITSTATUS(status);
	}
	if (cli_info_append(dir, line) < 0)
		cli_err("warning: cannot complete %s/info: %s", dir, strerror(errno));
	if (WIFSIGNALED(status))
		cli_err("%s was killed by signal %d (%s)", o->prog[0], WTERMSIG(status),
			strsignal(WTERMSIG(status)));
	return ret;
}

/* The target's runtime writes its streams and info lines itself: when we
 * run as root and it does not (a daemon's worker as 'nobody'), give it
 * the session's directory, info file, ctf/ and buffer directory, or it could
 * write nothing (and say so only on its own stderr). */
static int give_to_target(pid_t pid, const char *dir, const char *shmdir)
{
	char path[PATH_MAX + 16], line[256];
	unsigned uid = 0, gid = 0, u[4], g[4];
	if (geteuid() != 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4)
			uid = u[1];
		else if (sscanf(line, "Gid: %u %u %u %u", &g[0], &g[1], &g[2], &g[3]) == 4)
			gid = g[1];
	}
	fclose(f);
	if (!uid)
		return 0;
	char ctf[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/info", dir);
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	if (chown(dir, uid, gid) || chown(path, uid, gid) || chown(ctf, uid, gid) ||
	    (*shmdir && chown(shmdir, uid, gid)))
		cli_err("warning: process %d runs as uid %u and cannot be given %s: %s; it may "
			"record nothing",
			(int)pid, uid, dir, strerror(errno));
	/* And it must reach it: a directory on the way may be closed to it
	 * (root's home). Asked as that user, in a child. */
	pid_t c = fork();
	if (c == 0) {
		_exit(setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid) ||
			      access(dir, W_OK | X_OK)
			  ? 1
			  : 0);
	}
	int st = 0;
	if (c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 1) {
		cli_err("process %d runs as uid %u, which cannot reach %s to write its trace (a "
			"directory on the way is closed to it): record into one it can reach, "
			"under /tmp for instance",
			(int)pid, uid, dir);
		return -1;
	}
	return 0;
}

/* Is PID gone (or a zombie nobody reaped yet)? */
static int proc_gone(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return !p || p[2] == 'Z' || p[2] == 'X';
}

/*
 * record -p / live -p: attach to a running process, record it (and the
 * children it forks meanwhile) until a signal, --duration or its end, then
 * detach everything. The session is an ordinary one, plus its info lines
 * "attached:" and "detached:".
 */
static int record_attach(struct rec_opts *o, const char *dir, int fresh, int *started)
{
	char absdir[PATH_MAX], shmdir[128], line[256];
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	struct cfg_block b = {0};
	struct attach_result ar;
	sigset_t stop, oldmask;
	pid_t pid = o->pid;
	int ret = 0, gone = 0, got = 0;

	*started = 0;
	uint64_t t_cmd = now_ns();
	char **cmd = attach_cmdline(pid);
	if (!cmd || !cmd[0]) {
		free(cmd);
		cli_err("no process %d", (int)pid);
		return 1;
	}
	if (make_dir(dir, fresh)) {
		free(cmd);
		return 1;
	}
	if (!realpath(dir, absdir)) {
		cli_err("cannot resolve the output directory '%s': %s", dir, strerror(errno));
		free(cmd);
		return 1;
	}
	/* A program without sites: plain -F patterns patch its functions, as
	 * when it is started by record. */
	char exe[64], err[300];
	size_t total;
	int is_static;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	if (!cli_sites_count(exe, &total, &is_static, err, sizeof(err)) && !total &&
	    filters_to_patch(o, 1)) {
		cli_err("out of memory");
		free(cmd);
		return 1;
	}
	if (auto_args(o, exe, dir)) {
		free(cmd);
		return 1;
	}
	uint64_t start = now_ns();
	o->prog = cmd;
	ret = write_info(dir, o, start);
	o->prog = NULL;
	free(cmd);
	if (ret)
		return 1;
	shm_watch_mkdir(shmdir, sizeof(shmdir));
	if (give_to_target(pid, absdir, shmdir)) {
		if (*shmdir)
			cli_rm_tree(shmdir);
		return 1;
	}
	if (rec_settings(o, absdir, shmdir, put_block, &b)) {
		cli_err("out of memory");
		return 1;
	}
	/* If we are killed before we can detach, the target ends the recording
	 * itself (lib/ring/ring.c: recorder_check). */
	char me[64];
	struct ring_proc self = {0};
	ring_proc_stat(0, &self); /* start 0 if unknown: then the pid alone */
	snprintf(me, sizeof(me), "%d %" PRIu64, (int)getpid(), self.start);
	if (attach_config_add(&b.buf, &b.len, "DYNFTRACE_RECORDER", me)) {
		cli_err("out of memory");
		return 1;
	}
	attach_config_target(pid, &b.buf, &b.len);
	/* Ctrl-C, SIGTERM, SIGHUP end the recording, not dynftrace. */
	sigemptyset(&stop);
	for (int i = 0; i < 3; i++)
		sigaddset(&stop, sigs[i]);
	sigprocmask(SIG_BLOCK, &stop, &oldmask);
	ret = attach_process(pid, b.buf, b.len, &ar);
	free(b.buf);
	if (ret) {
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		if (*shmdir)
			cli_rm_tree(shmdir);
		return 1;
	}
	*started = 1;
	uint64_t t_att = now_ns();
	snprintf(line, sizeof(line),
		 "attached: %d at_ns %" PRIu64 " stopped_ns %" PRIu64 " sites %zu threads %zu\n",
		 (int)pid, t_att, ar.commit_ns, ar.sites, ar.threads);
	cli_info_append(dir, line);
	fprintf(stderr,
		"dynftrace: recording process %d: %zu sites, %zu threads (stopped %.3f ms, "
		"recording after %.3f ms); %s\n",
		(int)pid, ar.sites, ar.threads, ar.commit_ns / 1e6, (t_att - t_cmd) / 1e6,
		o->duration_ns ? "stops after --duration or Ctrl-C" : "stop with Ctrl-C");

	struct shm_watch w;
	shm_watch_init(&w, dir, shmdir, absdir, pid);
	uint64_t next_scan = now_ns() + SCAN_NS;
	/* Nothing to trace (no site built in, -P matched nothing): say so now
	 * rather than record nothing until --duration or Ctrl-C. */
	int nothing = ar.sites == 0;
	if (nothing) {
		cli_err("process %d has no function to trace: it has no sites built in and -P "
			"matched none of its functions ('dynftrace sites -a /proc/%d/exe' lists "
			"them, FUNC@OBJECT names another object's); detaching",
			(int)pid, (int)pid);
		ret = 1;
	}
	while (!nothing) {
		uint64_t now = now_ns();
		if (o->duration_ns && now - t_att >= o->duration_ns)
			break;
		if (proc_gone(pid)) {
			gone = 1;
			break;
		}
		if (now >= next_scan) {
			shm_watch_scan(&w, 0, 0);
			next_scan = now_ns() + SCAN_NS;
		}
		uint64_t wait = 100000000ull; /* to notice its end */
		if (o->duration_ns && t_att + o->duration_ns - now < wait)
			wait = t_att + o->duration_ns - now;
		struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
		if ((got = sigtimedwait(&stop, NULL, &ts)) > 0)
			break;
	}
	/* Children it forked carry the runtime too: they go first. */
	int kids = gone ? 0 : detach_descendants(pid);
	int unloaded = 0;
	uint64_t dns = 0;
	if (!gone && detach_process(pid, &unloaded, &dns))
		ret = 1;
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	shm_watch_scan(&w, 1, 0);
	shm_watch_free(&w);
	if (*shmdir)
		cli_rm_tree(shmdir);
	if (gone)
		snprintf(line, sizeof(line),
			 "detached: %d ended end_ns %" PRIu64 "\nend_ns: %" PRIu64 "\n", (int)pid,
			 now_ns(), now_ns());
	else
		snprintf(line, sizeof(line),
			 "detached: %d end_ns %" PRIu64 " stopped_ns %" PRIu64
			 " children %d\nend_ns: %" PRIu64 "\n",
			 (int)pid, now_ns(), dns, kids, now_ns());
	cli_info_append(dir, line);
	if (gone)
		cli_err("process %d ended while it was recorded", (int)pid);
	return ret;
}

/* After a recording: say what went wrong without failing. */
/* Does pattern PAT (FUNC, FUNC@OBJECT or FUNC:mod:OBJECT; a leading '!'
 * ignored) name one of the functions with a site in the session, by the
 * runtime's own rules (glob.c)? */
static int session_has_match(const struct tr_session *s, const char *pat)
{
	if (*pat == '!')
		pat++;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct tr_proc *p = &s->procs[i];
		for (size_t k = 0; k < p->nsites; k++)
			if (dft_glob_match_in(pat, p->sites[k].name, p->sites[k].obj))
				return 1;
	}
	return 0;
}

/* The program's file when it has no symbol table (nor a debug file that
 * has one), else NULL: its own functions are then named only where it
 * exports them (.dynsym), the others sub_ADDRESS. Into BUF. */
static const char *stripped_program(const struct rec_opts *o, char *buf, size_t size)
{
	struct elf_image img;
	int stripped;

	if (o->pid) {
		char link[64];
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)o->pid);
		ssize_t n = readlink(link, buf, size - 1);
		if (n <= 0)
			return NULL;
		buf[n] = 0;
	} else if (!o->prog || !o->prog[0] || resolve(o->prog[0], buf, size)) {
		return NULL;
	}
	memset(&img, 0, sizeof(img));
	if (elf_load(&img, buf, 0, 0))
		return NULL;
	stripped = !img.has_symtab;
	elf_free(&img);
	return stripped ? buf : NULL;
}

/*
 * A filter that matched nothing traces nothing, silently: say so, once per
 * pattern, naming the option. Only sessions whose processes wrote their
 * sites are judged (a process that died before naming them proves
 * nothing).
 */
static void report_unmatched(const struct tr_session *s, const char *opt, const struct cli_globs *g,
			     const struct cli_globs *seen, const struct rec_opts *o)
{
	char exe[PATH_MAX];
	const char *stripped = NULL;
	int any_sites = 0, looked = 0;

	for (size_t i = 0; i < s->nprocs; i++)
		any_sites |= s->procs[i].has_sites;
	if (!any_sites)
		return;
	for (size_t k = 0; k < g->n; k++) {
		char func[DFT_GLOB_MAX + 2];
		const char *pat = g->v[k];
		int dup = 0;

		if (!strcmp(opt, "-T") || !strcmp(opt, "-A/-R")) {
			/* FUNC@ACTIONS, FUNC@ARGS: the function's part */
			const char *at = strrchr(pat, '@');
			size_t n = at ? (size_t)(at - pat) : strlen(pat);
			if (n >= sizeof(func))
				continue;
			memcpy(func, pat, n);
			func[n] = 0;
			pat = func;
		}
		/* -P '!GLOB' keeps functions from being patched: they have no
		 * site to match */
		if (!strcmp(opt, "-P") && *pat == '!')
			continue;
		for (size_t j = 0; seen && j < seen->n && !dup; j++)
			dup = !strcmp(seen->v[j], g->v[k]);
		for (size_t j = 0; j < k && !dup; j++)
			dup = !strcmp(g->v[j], g->v[k]);
		if (dup || session_has_match(s, pat))
			continue;
		/* A plain glob names the program's functions: say why it may
		 * have missed (a stripped program, or another object's). */
		char hint[PATH_MAX + 200] = "";
		if (!strchr(pat, '@') && !strstr(pat, ":mod:")) {
			if (!looked++)
				stripped = stripped_program(o, exe, sizeof(exe));
			snprintf(hint, sizeof(hint),
				 " (%s%sanother object's functions need FUNC@OBJECT or "
				 "--patch-libs)",
				 stripped ? stripped : "",
				 stripped ? " is stripped: only the functions it exports have "
					    "names, the others are sub_ADDRESS, as 'dynftrace "
					    "sites -a' lists them; "
					  : "");
		}
		cli_err("warning: %s '%s' matched no function traced in this run%s", opt, pat,
			hint);
	}
}

/* The functions -P named that were not patched (cmd_info.c counts them):
 * one line, where the runtime used to print one per object and process on
 * the program's stderr. */
static void report_refused(const char *dir)
{
	size_t refused, objects;
	cli_patched(dir, NULL, &refused, &objects);
	if (refused)
		cli_err("%zu function%s named by -P could not be patched (in %zu object%s): "
			"'dynftrace info' lists them with why",
			refused, refused == 1 ? "" : "s", objects, objects == 1 ? "" : "s");
}

/* Threads whose losses record names one by one. */
#define LOST_THREADS_SAID 4

static void record_summary(const char *dir, const struct rec_opts *o)
{
	struct tr_session s;
	char num[40];

	if (tr_open(&s, dir)) {
		cli_err("warning: the recorded session cannot be read: %s", s.err);
		tr_close(&s);
		return;
	}
	report_unmatched(&s, "-F", &o->filter, NULL, o);
	report_unmatched(&s, "-N", &o->notrace, NULL, o);
	report_unmatched(&s, "-P", &o->patch, &o->filter, o); /* -F FUNC@OBJECT is patched too */
	report_unmatched(&s, "-T", &o->triggers, NULL, o);
	report_unmatched(&s, "-A/-R", &o->args, NULL, o);
	if (o->patch.n)
		report_refused(dir);
	if (!s.nstreams && !s.info.nlost && !o->disabled && strcmp(o->tracer, "profile"))
		cli_err("warning: no events were recorded (did the program run traced code?)");
	/* Dropped events warn; what overwrite mode replaced by newer ones is
	 * the mode working, said once for the whole session. */
	uint64_t over = 0, lost = 0, drop = 0;
	int over_threads = 0, lost_threads = 0;
	for (size_t i = 0; i < s.info.nlost; i++) {
		const struct tr_lost_line *l = &s.info.lost[i];
		if (l->count > l->overwritten) {
			/* a line per thread, up to a few: then one sum */
			if (++lost_threads <= LOST_THREADS_SAID)
				cli_err("warning: thread %d lost %s events; see 'dynftrace info'",
					(int)l->tid,
					cli_thousands(l->count - l->overwritten, num, sizeof(num)));
			lost += l->count - l->overwritten;
			drop += l->dropped;
		}
		over += l->overwritten;
		over_threads += l->overwritten != 0;
	}
	if (lost_threads > LOST_THREADS_SAID)
		cli_err("warning: %d threads lost %s events in all; see 'dynftrace info'",
			lost_threads, cli_thousands(lost, num, sizeof(num)));
	if (drop)
		cli_err("%s of them were dropped because a thread's buffer was full: the recorder "
			"could not keep up; a larger buffer (-b KB, now %" PRIu64
			") or fewer traced functions (-F, -N, -D) lose fewer",
			cli_thousands(drop, num, sizeof(num)), o->buffer_kb);
	if (over)
		cli_err("overwrite mode kept the newest events: %s older ones were overwritten "
			"(%d thread%s); see 'dynftrace info'",
			cli_thousands(over, num, sizeof(num)), over_threads,
			over_threads == 1 ? "" : "s");
	fflush(stdout);
	tr_print_unflushed(&s, stderr, "dynftrace: warning: ");
	tr_close(&s);
}

int cmd_record(int argc, char **argv)
{
	struct rec_opts o = {0};
	int ret, started;

	ret = rec_parse(argc, argv, &o, 0);
	if (ret) {
		rec_free(&o);
		return ret == 1 ? 0 : 2;
	}
	ret = o.pid ? record_attach(&o, o.dir, 0, &started) : record_run(&o, o.dir, 0, &started);
	if (started)
		record_summary(o.dir, &o);
	rec_free(&o);
	return ret;
}

int cmd_live(int argc, char **argv)
{
	struct rec_opts o = {0};
	struct replay_opts ro = {0};
	struct tr_session s;
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX];
	int ret, started, r;

	ret = rec_parse(argc, argv, &o, 1);
	if (ret) {
		rec_free(&o);
		return ret == 1 ? 0 : 2;
	}
	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(dir, sizeof(dir), "%s/dynftrace-live.XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		cli_err("cannot create a temporary directory in '%s': %s", tmp, strerror(errno));
		rec_free(&o);
		return 1;
	}
	ret = o.pid ? record_attach(&o, dir, 1, &started) : record_run(&o, dir, 1, &started);
	/* A reader that goes away (`| head`) must not kill us before the
	 * temporary session is removed: the replay stops at the write error,
	 * then SIGPIPE is raised again once cleaned up. Set only now: the
	 * program inherits the disposition. */
	struct sigaction pipe_ign = {.sa_handler = SIG_IGN}, pipe_old;
	sigaction(SIGPIPE, &pipe_ign, &pipe_old);
	int broken = 0;
	if (started) {
		r = tr_open(&s, dir);
		if (r) {
			cli_err("%s", s.err);
			ret = 1;
		} else {
			fflush(stdout);
			ro.no_time = o.no_time;
			r = replay_run(&s, &ro, stdout);
			broken = ferror(stdout);
			if (r < 0)
				cli_err("out of memory while replaying the trace");
			if (r)
				ret = 1;
		}
		tr_close(&s);
	}
	if (o.keep && started) {
		cli_err("the trace is kept in '%s'", dir);
	} else if (cli_rm_tree(dir)) {
		cli_err("cannot remove the temporary session '%s': %s", dir, strerror(errno));
		ret = ret ? ret : 1;
	}
	rec_free(&o);
	sigaction(SIGPIPE, &pipe_old, NULL);
	if (broken)
		raise(SIGPIPE); /* the reader left: end as a pipeline expects */
	return ret;
}
