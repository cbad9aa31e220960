// SPDX-License-Identifier: MIT
/*
 * fuzz_trace.c - libFuzzer harness for the trace reader (cli/trace_session.c,
 * trace_stream.c, trace_merge.c) and the views built on it (replay, report,
 * dump --chrome, --perfetto, --flame-graph, --svg, --ctf, graph, info).
 *
 *   clang -fsanitize=fuzzer,address,undefined -Iinclude -iquote lib/core \
 *	-iquote lib/ring -iquote lib/trace -iquote cli \
 *	tests/fuzz/fuzz_trace.c cli/trace_session.c cli/trace_stream.c \
 *	cli/trace_merge.c cli/util.c cli/cmd_replay.c cli/cmd_report.c \
 *	cli/cmd_dump.c cli/cmd_info.c cli/read_opts.c cli/calltree.c \
 *	cli/strtab.c cli/dump_flame.c cli/dump_perfetto.c cli/dump_ctf.c cli/cmd_graph.c \
 *	cli/args_fmt.c \
 *	lib/trace/argspec.c lib/core/elf.c \
 *	lib/arch/x86_64/elf_site.c -ldl -o fuzz_trace
 *
 * A session directory is made once in $TMPDIR: info, ctf/metadata (the uuid
 * of tests/golden/mkstream.c, so its streams are valid seeds), sites-100.txt
 * with ids 0-7 and a maps file. Each input becomes ctf/stream-100-100 and
 * the whole session is opened and printed to /dev/null, twice for replay
 * (once with filters); dump --ctf writes into DIR/ctf-out, emptied after.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trace_read.h"
#include "views.h"

static char dir[256], stream[300];
static FILE *devnull;

/* The command's main.c is not linked: its two helpers. */
void cli_err(const char *fmt, ...)
{
	(void)fmt; /* damage is the normal case here: stay quiet */
}

int cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static void put(const char *name, const char *text)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

static void rm_session(void)
{
	char path[400];
	const char *files[] = {"info", "sites-100.txt", "maps-100.txt", "ctf/metadata",
			       "ctf/stream-100-100"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/ctf", dir);
	rmdir(path);
	rmdir(dir);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[400];

	snprintf(dir, sizeof(dir), "%s/fuzz_trace.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	atexit(rm_session);
	snprintf(path, sizeof(path), "%s/ctf", dir);
	if (mkdir(path, 0755))
		abort();
	put("info", "version: 1\ncommand: ./fuzz\ntracer: function_graph\nstart_ns: 1000\n"
		    "pid: 100\nlost: 100 100 3\nexit: 100 status 0\nend_ns: 99999999\n");
	put("ctf/metadata",
	    "/* CTF 1.8 */\ntrace {\n\tuuid = \"6d6b7374-7265-616d-2d75-7569642d3031\";\n"
	    "};\n");
	put("sites-100.txt", "0 401000 32 main /nonexistent/prog\n"
			     "1 401020 16 foo /nonexistent/prog\n"
			     "2 401030 16 bar /nonexistent/prog\n"
			     "3 401040 16 _ZN2ns3Cls6methodEi /nonexistent/prog\n"
			     "4 401050 16 baz /nonexistent/prog\n"
			     "5 401060 16 qux /nonexistent/prog\n"
			     "6 401070 16 quux /nonexistent/prog\n"
			     "7 7f0000001000 64 lib_fn /nonexistent/libx.so\n");
	put("maps-100.txt", "400000 402000 0 /nonexistent/prog\n");
	snprintf(stream, sizeof(stream), "%s/ctf/stream-100-100", dir);
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay_opts ro = {0};
	/* a range over the first microseconds, one thread, a focus */
	struct cli_select sel = {.has_range = 1, .from_ns = 500, .to_ns = 20000};
	struct cli_globs focus = {0};
	struct tr_session s;
	size_t done = 0;
	int fd;

	if (!devnull)
		setup();
	if (cli_glob_add(&focus, "foo"))
		abort();
	fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	close(fd);

	if (tr_open(&s, dir) == 0) {
		replay_run(&s, &ro, devnull);
		if (cli_glob_add(&ro.filter, "foo") || cli_glob_add(&ro.notrace, "bar"))
			abort();
		ro.depth = 2;
		ro.time_ns = 100;
		replay_run(&s, &ro, devnull);
		cli_glob_free(&ro.filter);
		cli_glob_free(&ro.notrace);
		report_run(&s, SORT_SELF, devnull);
		dump_chrome_run(&s, &sel, devnull);
		dump_perfetto_run(&s, NULL, devnull);
		dump_folded_run(&s, NULL, devnull);
		dump_svg_run(&s, &sel, devnull);
		char out[300], f[340];
		snprintf(out, sizeof(out), "%s/ctf-out", dir);
		dump_ctf_run(&s, NULL, out);
		snprintf(f, sizeof(f), "%s/metadata", out);
		unlink(f);
		snprintf(f, sizeof(f), "%s/stream-100-100", out);
		unlink(f);
		graph_run(&s, &sel, &focus, devnull);
		info_run(&s, devnull);
	}
	tr_close(&s);
	cli_glob_free(&focus);
	return 0;
}
