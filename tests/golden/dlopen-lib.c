// SPDX-License-Identifier: MIT
/* dlopen-lib: the traced library s-dlopen loads (libgolden-dl.so). */
#include "golden.h"

static volatile int lib_sink;

NOINLINE void lib_inner(void)
{
	lib_sink++;
}
NOINLINE int lib_entry(int x)
{
	lib_inner();
	lib_sink += x;
	return lib_sink;
}
