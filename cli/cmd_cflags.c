// SPDX-License-Identifier: MIT
/*
 * cmd_cflags.c - `dynftrace cflags`: the flags that give code entry sites.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The site flags of the architecture this command was built for (its
 * runtime's: lib/arch/<arch>/elf_site.c reads what they leave). */
#if defined(__aarch64__)
#define ARCH_NAME     "aarch64"
#define FLAGS_DEFAULT "-fpatchable-function-entry=2"
#define FLAGS_CALLOPS "-fpatchable-function-entry=4,2 -falign-functions=8"
#define FLAGS_FENTRY  NULL /* no -mfentry: -pg calls _mcount after the prologue */
#define HELP_DEFAULT                                                                               \
	"  (default)    -fpatchable-function-entry=2 (gcc and clang): two NOPs at\n"               \
	"               each function entry (mov x9, x30; bl when traced).\n"                      \
	"  --fentry     not available on aarch64 (no -mfentry).\n"                                 \
	"  --call-ops   -fpatchable-function-entry=4,2 -falign-functions=8:\n"                     \
	"               also reserves an aligned 8-byte literal before each entry.\n"
#elif defined(__riscv) && __riscv_xlen == 64
#define ARCH_NAME "riscv64"
/* 8 bytes at the entry for `auipc t0; jalr t0` (the kernel's riscv
 * ftrace): four c.nop with RVC, two NOPs without; entries 4-byte aligned
 * so that the patched word is one aligned store (8 with CALL_OPS, for the
 * literal before the entry). */
#if defined(__riscv_compressed)
#define FLAGS_DEFAULT "-fpatchable-function-entry=4 -falign-functions=4"
#define FLAGS_CALLOPS "-fpatchable-function-entry=8,4 -falign-functions=8"
#define NOPS_TEXT     "four c.nop"
#else
#define FLAGS_DEFAULT "-fpatchable-function-entry=2 -falign-functions=4"
#define FLAGS_CALLOPS "-fpatchable-function-entry=4,2 -falign-functions=8"
#define NOPS_TEXT     "two NOPs"
#endif
#define FLAGS_FENTRY NULL /* no -mfentry: -pg calls _mcount after the prologue */
#define HELP_DEFAULT                                                                               \
	"  (default)    " FLAGS_DEFAULT " (gcc and clang):\n"                                      \
	"               " NOPS_TEXT " at each function entry (auipc t0;\n"                         \
	"               jalr t0 when traced).\n"                                                   \
	"  --fentry     not available on riscv64 (no -mfentry).\n"                                 \
	"  --call-ops   " FLAGS_CALLOPS ":\n"                                                      \
	"               also reserves an aligned 8-byte literal before each entry.\n"
#else
#define ARCH_NAME     "x86-64"
#define FLAGS_DEFAULT "-fpatchable-function-entry=5"
#define FLAGS_CALLOPS "-fpatchable-function-entry=13,8 -falign-functions=16"
#define FLAGS_FENTRY  "-pg -mfentry -mrecord-mcount -mnop-mcount"
#define HELP_DEFAULT                                                                               \
	"  (default)    -fpatchable-function-entry=5 (gcc and clang): five bytes\n"                \
	"               of NOPs at each function entry.\n"                                         \
	"  --fentry     -pg -mfentry -mrecord-mcount -mnop-mcount: gcc only.\n"                    \
	"               -mnop-mcount needs non-PIE code: also pass -fno-pie to the\n"              \
	"               compiler and -no-pie to the linker. Link WITHOUT -pg (glibc\n"             \
	"               defines __fentry__; -pg at link time adds gmon profiling).\n"              \
	"  --call-ops   -fpatchable-function-entry=13,8 -falign-functions=16:\n"                   \
	"               also reserves an 8-byte literal before each function entry.\n"
#endif

static const char usage_text[] =
    "usage: dynftrace cflags [--fentry | --call-ops] [--ldflags]\n"
    "\n"
    "Print the compiler flags that build traceable code: every function gets\n"
    "an entry site that libdynftrace.so patches at run time.\n"
    "\n"
    "(for " ARCH_NAME ", the architecture this command was built for)\n"
    "\n" HELP_DEFAULT "  --ldflags    print the flags that link with the runtime instead\n"
    "               (-L<dir> -ldynftrace -Wl,-rpath,<dir>, dir being the\n"
    "               runtime's: this binary's own in a build tree, the\n"
    "               library directory once installed; or use pkg-config\n"
    "               dynftrace). Given with --fentry or --call-ops, both are\n"
    "               printed on one line.\n"
    "  -h, --help   show this help.\n";

int cmd_cflags(int argc, char **argv)
{
	const char *mode = NULL, *flags = FLAGS_DEFAULT;
	int ldflags = 0;
	char dir[PATH_MAX];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (cli_is_help(a)) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "--fentry") || !strcmp(a, "--call-ops")) {
			if (mode && strcmp(mode, a)) {
				cli_err("cflags: --fentry and --call-ops cannot be combined");
				return 2;
			}
			mode = a;
		} else if (!strcmp(a, "--ldflags")) {
			ldflags = 1;
		} else {
			cli_err("cflags: unknown option '%s'; see 'dynftrace cflags --help'", a);
			return 2;
		}
	}
	if (mode && !strcmp(mode, "--fentry"))
		flags = FLAGS_FENTRY;
	else if (mode)
		flags = FLAGS_CALLOPS;
	if (!flags) {
		cli_err("cflags: --fentry is not available on " ARCH_NAME
			" (no -mfentry); use the default flags");
		return 2;
	}
	if (!ldflags) {
		printf("%s\n", flags);
		return 0;
	}
	if (cli_runtime(dir, NULL, NULL, sizeof(dir))) {
		cli_err("cflags: cannot find the runtime libdynftrace.so (next to the dynftrace "
			"command, or installed with it)");
		return 1;
	}
	if (mode)
		printf("%s ", flags);
	printf("-L%s -ldynftrace -Wl,-rpath,%s\n", dir, dir);
	return 0;
}
