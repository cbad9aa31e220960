// SPDX-License-Identifier: MIT
/*
 * check.c - the demangler (lib/core/demangle.c) over symbols on stdin, one
 * a line; prints "FULL<TAB>SIMPLE" per symbol, "!" for a style it refuses.
 * Built by tests/sh/demangle.sh with the demangler's source.
 */
#include <stdio.h>
#include <string.h>

#include "demangle.h"

int main(void)
{
	static char line[1 << 16], full[1 << 16], simple[1 << 16];

	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		int f = dft_demangle(line, DM_FULL, full, sizeof(full));
		int s = dft_demangle(line, DM_SIMPLE, simple, sizeof(simple));
		printf("%s\t%s\n", f >= 0 ? full : "!", s >= 0 ? simple : "!");
	}
	return 0;
}
