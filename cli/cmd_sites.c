// SPDX-License-Identifier: MIT
/*
 * cmd_sites.c - `dynftrace sites`: the traceable functions of a program and
 * of the libraries it loads, found in the files without running the program
 * (the counterpart of the kernel's available_filter_functions).
 *
 * The libraries come from the dynamic loader's list mode, `ld.so --list
 * PROG`, which resolves them exactly as a real start would (LD_LIBRARY_PATH,
 * RUNPATH, ...) but runs nothing of the program. The loader is only asked
 * about objects that have DT_NEEDED entries: it crashes on static programs.
 */
#include <elf.h> /* the system's: PF_X */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch.h" /* ARCH_SITE_SIZE */
#include "elf.h"
#include "cli.h"
#include "dwarf_args.h"
#include "pattern.h"

#define SYSTEM_LOADER "/lib64/ld-linux-x86-64.so.2"

static const char usage_text[] =
    "usage: dynftrace sites [-a] [-v] PROG|LIB...\n"
    "       dynftrace sites --args[=PATTERN] [-v] PROG|LIB...\n"
    "\n"
    "List the traceable functions of each PROG (or shared library LIB) and of\n"
    "the libraries it loads, one per line, sorted by object then address:\n"
    "\n"
    "  name              a function of the program\n"
    "  name [libfoo.so]  a function of a library\n"
    "  0x1234            a site whose function has no symbol (stripped file)\n"
    "\n"
    "The files are read, not run. Libraries are found by the dynamic loader's\n"
    "--list mode. Objects without sites are left out; build code with the\n"
    "flags of 'dynftrace cflags' to give it sites.\n"
    "\n"
    "  -v, --verbose  print 'ADDRESS LEN KIND name [object]' per site: the\n"
    "                 link-time address of the site, the bytes it owns (5 or\n"
    "                 6) and its kind: patchable (-fpatchable-function-entry)\n"
    "                 or fentry (-pg -mfentry -mrecord-mcount).\n"
    "  -a, --all      list every function entry instead, sites or not, as\n"
    "                 'name [object]<TAB>VERDICT'. Entries come from .symtab,\n"
    "                 else .dynsym, and from the .eh_frame FDEs no symbol\n"
    "                 covers (named sub_ADDRESS@object). VERDICT is 'site'\n"
    "                 (compiled with a site), 'entry' (traceable once its\n"
    "                 first instructions are relocated) or 'refused: REASON'.\n"
    "                 With -v: 'ADDRESS SIZE SOURCE name [object]<TAB>VERDICT',\n"
    "                 SIZE in bytes (0: unknown), SOURCE symtab, dynsym or fde.\n"
    "  --args=PATTERN, --args\n"
    "                 print the argument and return-value specs of the\n"
    "                 functions defined in each file (not its libraries),\n"
    "                 read from its DWARF (-g, or its separate debug file),\n"
    "                 in the syntax of record's -A and -R: 'func@arg1/i32,\n"
    "                 arg2/s,fparg1/f64' and 'func@retval/u64'. What cannot\n"
    "                 be described (a struct passed by value, ...) is said\n"
    "                 in a line '# func: why'. PATTERN (a glob or regex as\n"
    "                 -F takes them) selects functions by name. With -v,\n"
    "                 the enums the specs name follow, one line per value:\n"
    "                 '# enum NAME VALUE LABEL'.\n"
    "  -h, --help     show this help.\n"
    "\n"
    "Exit status: 0 when sites (with -a: entries) were listed, 1 when a file\n"
    "cannot be read, is not a valid x86-64 ELF object or has no sites (with\n"
    "-a: no entries; with --args: has no DWARF), 2 on a usage error.\n";

struct objlist {
	char **paths;
	size_t n;
};

static int objlist_add(struct objlist *l, const char *path)
{
	char **p;

	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->paths[i], path))
			return 0;
	p = realloc(l->paths, (l->n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	l->paths = p;
	l->paths[l->n] = strdup(path);
	if (!l->paths[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static void objlist_free(struct objlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->paths[i]);
	free(l->paths);
	l->paths = NULL;
	l->n = 0;
}

/*
 * One line of `ld.so --list`: "\tlibfoo.so => /path/libfoo.so (0x...)",
 * "\t/lib64/ld-linux-x86-64.so.2 (0x...)", "\tlinux-vdso.so.1 (0x...)" or
 * "\tlibbar.so => not found". Adds the path, if any, to L.
 */
static int parse_list_line(struct objlist *l, char *line)
{
	char *p = strstr(line, "=> "), *end;

	if (p)
		p += 3;
	else
		for (p = line; *p == ' ' || *p == '\t'; p++)
			;
	if (*p != '/')
		return 0; /* the vDSO, or "not found" (reported by the start) */
	end = strstr(p, " (0x");
	if (!end)
		end = p + strcspn(p, "\n");
	*end = 0;
	return objlist_add(l, p);
}

/* Append the libraries PATH loads to L, asking LOADER; quiet on failure:
 * the object is then listed alone. */
static int list_libraries(struct objlist *l, const char *loader, const char *path)
{
	int fds[2], status, err = 0;
	char *arg, line[4096];
	pid_t pid;
	FILE *f;

	/* The loader searches the library path for a name without a slash. */
	if (asprintf(&arg, "%s%s", strchr(path, '/') ? "" : "./", path) < 0)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(arg);
		return 0;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(fds[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		execl(loader, loader, "--list", arg, (char *)NULL);
		_exit(127);
	}
	free(arg);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return 0;
	}
	f = fdopen(fds[0], "r");
	if (!f) {
		close(fds[0]);
		waitpid(pid, &status, 0);
		return 0;
	}
	while (fgets(line, sizeof(line), f))
		if (!err)
			err = parse_list_line(l, line);
	fclose(f);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return err;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void print_sites(const struct elf_image *img, int lib, int verbose)
{
	const char *obj = base_name(img->path);

	for (size_t i = 0; i < img->nsites; i++) {
		const struct elf_site *s = &img->sites[i];
		const char *name = elf_func_name(img, s->func);
		char addr[32];

		if (!name) {
			snprintf(addr, sizeof(addr), "sub_%llx",
				 (unsigned long long)(s->addr - s->marker));
			name = addr;
		}
		if (verbose)
			printf("%016llx %u %s ", (unsigned long long)s->addr, s->len,
			       s->kind == SITE_FENTRY ? "fentry" : "patchable");
		if (lib)
			printf("%s [%s]\n", name, obj);
		else
			printf("%s\n", name);
	}
}

/*
 * The relocator's verdict on entry E, CODE holding its first LEN bytes (fewer
 * when the function is shorter): NULL when it can relocate the entry, else
 * why not, in a few words. Weak: it plugs in when the relocator is linked
 * into the command (lib/arch/<arch>/reloc.c in the Makefile's CLI_SHARED);
 * until then every entry not refused by entry_verdict() is listed as `entry`.
 */
const char *dft_reloc_entry_verdict(const struct elf_image *img, const struct elf_entry *e,
				    const unsigned char *code, size_t len) __attribute__((weak));

/* Bytes handed to the relocator: enough for the instructions a 5-byte jump
 * overwrites, with room to decode past them. */
#define VERDICT_CODE 32

/* NULL when E is an entry to relocate, "site", or why it cannot be traced.
 * UNWOUND: elf_entries_mostly_unwound(IMG), counted once by the caller. */
static const char *entry_verdict(const struct elf_image *img, const struct elf_entry *e,
				 int unwound)
{
	unsigned char code[VERDICT_CODE];
	size_t len = e->size && e->size < sizeof(code) ? e->size : sizeof(code);
	int exec = 0;

	if (e->site >= 0)
		return "site";
	for (size_t i = 0; i < img->nsegs; i++)
		if ((img->segs[i].flags & PF_X) && e->addr >= img->segs[i].vaddr &&
		    e->addr - img->segs[i].vaddr < img->segs[i].memsz)
			exec = 1;
	if (!exec)
		return "refused: not in an executable segment";
	if (e->flags & ENTRY_IFUNC)
		return "refused: ifunc resolver, run by the loader before tracing starts";
	/* A .cold part is jumped into: its caller's return address is not on top. */
	if ((e->flags & ENTRY_MIDFRAME) || strstr(elf_entry_name(img, e), ".cold"))
		return "refused: not entered by a call (a .cold part, _start, a trampoline)";
	if (!e->size && e->src == ENTRY_FDE)
		return "refused: no size and no symbol";
	/* the runtime's rule for a glob (an exact name is patched anyway) */
	if (unwound && !(e->flags & ENTRY_HAS_FDE))
		return "refused: no unwind information (hand-written or generated code; "
		       "name it exactly to patch it)";
	if (e->size && e->size < ARCH_SITE_SIZE) { /* the entry's jump */
		static char why[48];
		snprintf(why, sizeof(why), "refused: shorter than %d bytes", ARCH_SITE_SIZE);
		return why;
	}
	if (!dft_reloc_entry_verdict)
		return NULL;
	/* Near a segment's end fewer bytes may be readable. */
	while (len && elf_read_code(img, e->addr, code, len))
		len /= 2;
	if (!len)
		return "refused: its code cannot be read";
	return dft_reloc_entry_verdict(img, e, code, len);
}

static void print_entries(const struct elf_image *img, int lib, int verbose)
{
	const char *obj = base_name(img->path);

	int unwound = elf_entries_mostly_unwound(img);
	for (size_t i = 0; i < img->nentries; i++) {
		const struct elf_entry *e = &img->entries[i];
		const char *v = entry_verdict(img, e, unwound);

		if (verbose)
			printf("%016llx %llu %s ", (unsigned long long)e->addr,
			       (unsigned long long)e->size, elf_entry_src_name(e->src));
		printf("%s", elf_entry_name(img, e));
		if (lib)
			printf(" [%s]", obj);
		printf("\t%s\n", v ? v : "entry");
	}
}

/* Report a failed elf_load() of PATH in one sentence. */
static void load_error(const struct elf_image *img, const char *path, int err)
{
	if (err == -EINVAL && img->err[0])
		cli_err("%s", img->err);
	else if (err == -ENOMEM)
		cli_err("out of memory while reading '%s'", path);
	else
		cli_err("cannot read '%s': %s", path, strerror(-err));
}

/* Load PATH, and its entries for ALL; 0 or -errno, reported. */
static int load(struct elf_image *img, const char *path, int all)
{
	int err = elf_load(img, path, 0, 0);

	if (!err && all)
		err = elf_load_entries(img);
	if (err) {
		load_error(img, path, err);
		elf_free(img);
	}
	return err;
}

/* Print the sites, or with ALL the entries, of IMG; returns how many. */
static size_t print_obj(const struct elf_image *img, int lib, int all, int verbose)
{
	if (all) {
		if (img->err[0])
			cli_err("warning: %s", img->err);
		print_entries(img, lib, verbose);
		return img->nentries;
	}
	if (img->nsites && img->err[0])
		cli_err("warning: %s", img->err);
	print_sites(img, lib, verbose);
	return img->nsites;
}

/* List PATH and its libraries; returns the exit status for this argument. */
static int sites_of(const char *path, int all, int verbose, struct objlist *seen)
{
	struct elf_image img;
	struct objlist libs = {0};
	size_t total = 0;
	int err, ret = 0;

	if (load(&img, path, all))
		return 1;
	if (img.nneeded) {
		const char *loader = SYSTEM_LOADER;

		/* Prefer the system loader over running whatever PT_INTERP
		 * of an unknown file names. */
		if (access(loader, X_OK) && img.interp)
			loader = img.interp;
		err = list_libraries(&libs, loader, path);
		if (err) {
			cli_err("out of memory while listing the libraries of '%s'", path);
			ret = 1;
		}
	}
	total += print_obj(&img, 0, all, verbose);
	objlist_add(seen, path);
	elf_free(&img);

	for (size_t i = 0; i < libs.n; i++) {
		size_t before = seen->n;

		if (objlist_add(seen, libs.paths[i]) || seen->n == before)
			continue; /* already listed for an earlier argument */
		if (load(&img, libs.paths[i], all)) {
			ret = 1;
			continue;
		}
		total += print_obj(&img, 1, all, verbose);
		elf_free(&img);
	}
	objlist_free(&libs);
	if (!total && !ret && all) {
		cli_err("%s has no function entries: no function symbols and no unwind tables",
			path);
		ret = 1;
	} else if (!total && !ret) {
		cli_err(
		    "%s has no traceable sites; rebuild it with the flags of 'dynftrace cflags'",
		    path);
		ret = 1;
	}
	return ret;
}

int cli_sites_count(const char *path, size_t *total, int *is_static, char *err, size_t errlen)
{
	struct elf_image img;
	struct objlist libs = {0};
	int ret;

	*total = 0;
	*is_static = 0;
	ret = elf_load(&img, path, 0, 0);
	if (ret) {
		snprintf(err, errlen, "%s", img.err[0] ? img.err : strerror(-ret));
		elf_free(&img);
		return ret;
	}
	*total = img.nsites;
	*is_static = !img.interp;
	if (img.nneeded && img.interp) {
		const char *loader = SYSTEM_LOADER;

		if (access(loader, X_OK))
			loader = img.interp;
		ret = list_libraries(&libs, loader, path);
	}
	elf_free(&img);
	for (size_t i = 0; !ret && i < libs.n; i++) {
		if (elf_load(&img, libs.paths[i], 0, 0) == 0)
			*total += img.nsites;
		elf_free(&img);
	}
	objlist_free(&libs);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

static int print_spec(void *ctx, const struct dwarf_func_args *f)
{
	(void)ctx;
	if (f->argspec)
		printf("%s@%s\n", f->func, f->argspec);
	if (f->retspec)
		printf("%s@%s\n", f->func, f->retspec);
	if (f->note)
		printf("# %s: %s\n", f->func, f->note);
	return 0;
}

/* `sites --args`: the specs of PATH's functions; the exit status. */
static int args_of(const char *path, const char *pattern, int verbose)
{
	char err[512], *enums = NULL;
	size_t elen = 0;
	FILE *ef = NULL;
	int n;

	if (verbose && !(ef = open_memstream(&enums, &elen))) {
		cli_err("out of memory");
		return 1;
	}
	n = dwarf_auto_args(path, pattern, print_spec, NULL, ef, err, sizeof(err));
	if (ef && fclose(ef))
		n = n < 0 ? n : -ENOMEM;
	if (n >= 0 && enums) {
		for (char *l = enums, *nl; (nl = strchr(l, '\n')); l = nl + 1)
			printf("# enum %.*s\n", (int)(nl - l), l);
	}
	free(enums);
	if (n == -ENOMEM && !err[0])
		snprintf(err, sizeof(err), "out of memory");
	if (n < 0) {
		cli_err("%s", err);
		return 1;
	}
	if (err[0])
		cli_err("warning: %s", err);
	if (n == 0 && pattern)
		cli_err("warning: no function of '%s' with debug information matches '%s'", path,
			pattern);
	else if (n == 0)
		cli_err("warning: '%s' has DWARF but no function defined in it", path);
	return 0;
}

int cmd_sites(int argc, char **argv)
{
	struct objlist seen = {0};
	int verbose = 0, all = 0, nargs = 0, ret = 0, opts = 1, args = 0;
	const char *args_pat = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (opts && cli_is_help(a)) {
			fputs(usage_text, stdout);
			return 0;
		} else if (opts && (!strcmp(a, "-v") || !strcmp(a, "--verbose"))) {
			verbose = 1;
		} else if (opts && (!strcmp(a, "-a") || !strcmp(a, "--all"))) {
			all = 1;
		} else if (opts && !strcmp(a, "--args")) {
			args = 1;
		} else if (opts && !strncmp(a, "--args=", 7)) {
			char why[256];

			args = 1;
			args_pat = a + 7;
			if (!*args_pat) {
				cli_err(
				    "sites: --args= needs a pattern; see 'dynftrace sites --help'");
				return 2;
			}
			if (!pat_valid(args_pat, why, sizeof(why))) {
				cli_err("sites: %s", why);
				return 2;
			}
		} else if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && a[0] == '-' && a[1]) {
			cli_err("sites: unknown option '%s'; see 'dynftrace sites --help'", a);
			return 2;
		} else {
			nargs++;
		}
	}
	if (!nargs) {
		cli_err("sites: no program given; see 'dynftrace sites --help'");
		return 2;
	}
	if (args && all) {
		cli_err("sites: --args and --all cannot be combined");
		return 2;
	}
	if (args && !dwarf_args_available()) {
		cli_err("%s", DWARF_ARGS_NO_LIBDW);
		return 1;
	}
	opts = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (opts && !strcmp(a, "--")) {
			opts = 0;
			continue;
		}
		if (opts && a[0] == '-' && a[1])
			continue;
		if (args ? args_of(a, args_pat, verbose) : sites_of(a, all, verbose, &seen))
			ret = 1;
	}
	objlist_free(&seen);
	if (fflush(stdout) || ferror(stdout)) {
		cli_err("cannot write the list: %s", strerror(errno));
		ret = 1;
	}
	return ret;
}
