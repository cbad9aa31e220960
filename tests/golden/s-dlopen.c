// SPDX-License-Identifier: MIT
/* s-dlopen: calls into a traced library loaded with dlopen after start. */
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void before_dlopen(void)
{
	sink++;
}
NOINLINE int call_lib(int (*fn)(int))
{
	int r = fn(2);

	sink++;
	return r;
}

int main(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	void *h;
	int (*fn)(int);

	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "libgolden-dl.so");
	before_dlopen();
	h = dlopen(path, RTLD_NOW);
	if (!h)
		return 1;
	fn = (int (*)(int))dlsym(h, "lib_entry");
	if (!fn)
		return 1;
	call_lib(fn);
	return 0;
}
