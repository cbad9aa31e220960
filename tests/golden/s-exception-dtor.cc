// SPDX-License-Identifier: MIT
/*
 * s-exception-dtor: a destructor run by an exception's unwinding throws
 * and catches an exception of its own. The inner catch happens while the
 * outer unwinding still has traced frames to walk through, which must not
 * find their return addresses hooked when it resumes.
 */
#include "golden.h"

GOLDEN_SINK;

NOINLINE void leaf()
{
	sink++;
}

NOINLINE void thrower(int x)
{
	sink++;
	if (x)
		throw x;
	sink++;
}

NOINLINE void inner()
{
	try {
		thrower(2);
	} catch (int) {
		leaf();
	}
}

struct guard {
	NOINLINE ~guard()
	{
		inner();
		sink++;
	}
};

NOINLINE void deep(int n)
{
	guard g;
	volatile char buf[64];
	buf[n % 64] = (char)n;
	if (n == 0)
		thrower(1);
	else
		deep(n - 1);
	sink += buf[n % 64];
}

NOINLINE int catcher(int n)
{
	try {
		deep(n);
	} catch (int e) {
		leaf();
		return e;
	}
	return 0;
}

int main()
{
	int r = catcher(2);

	leaf();
	return r == 1 ? 0 : 1;
}
