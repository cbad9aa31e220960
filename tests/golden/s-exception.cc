// SPDX-License-Identifier: MIT
/* s-exception: a C++ exception thrown through traced frames. */
#include "golden.h"

GOLDEN_SINK;

NOINLINE void thrower(int x)
{
	sink++;
	if (x)
		throw x;
	sink++;
}
NOINLINE void through(int x)
{
	thrower(x);
	sink++;
}
NOINLINE void after_catch() { sink++; }
NOINLINE int catcher(int x)
{
	try {
		through(x);
	} catch (int e) {
		after_catch();
		return e;
	}
	return 0;
}

int main()
{
	int r = catcher(7);

	after_catch();
	return r == 7 ? 0 : 1;
}
