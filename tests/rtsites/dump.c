/* Linked into tests/sites/prog (compiled WITHOUT site flags): at exit, print
 * what the runtime discovered as "OBJECT LINKADDR NAME", link-time addresses
 * so they compare with `dynftrace sites -v`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dynftrace/dynftrace.h>

static int print_site(unsigned long ip, const char *fn, const char *obj, int en, int ref, void *d)
{
	Dl_info info;
	unsigned long link = ip;
	(void)en;
	(void)ref;
	if (dladdr((void *)ip, &info) && info.dli_fbase &&
	    ((const Elf64_Ehdr *)info.dli_fbase)->e_type == ET_DYN)
		link = ip - (unsigned long)info.dli_fbase;
	const char *base = strrchr(obj, '/');
	fprintf(d, "%s %lx %s\n", base ? base + 1 : obj, link, fn ? fn : "?");
	return 0;
}

__attribute__((destructor)) static void dump(void)
{
	const char *path = getenv("RTSITES_OUT");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (!f)
		return;
	dynftrace_for_each_site(print_site, f);
	fclose(f);
}
