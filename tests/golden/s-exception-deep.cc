// SPDX-License-Identifier: MIT
/*
 * s-exception-deep: C++ exceptions through traced frames that keep their
 * return address away from their entry (a local array sits between), a
 * destructor run by the unwinding, a rethrow, and callers that go on and
 * return normally after each catch, twice over.
 */
#include "golden.h"

GOLDEN_SINK;

NOINLINE void cleanup()
{
	sink++;
}
NOINLINE void leaf()
{
	sink++;
}

struct guard {
	NOINLINE ~guard()
	{
		cleanup();
		sink++;
	}
};

NOINLINE void thrower(int x)
{
	sink++;
	if (x)
		throw x;
	sink++;
}

NOINLINE void deep(int n)
{
	volatile char buf[200];
	buf[n % 200] = (char)n;
	if (n == 0)
		thrower(1);
	else
		deep(n - 1);
	sink += buf[n % 200];
}

NOINLINE void guarded(int n)
{
	guard g;
	deep(n);
	sink++;
}

NOINLINE void rethrower(int n)
{
	try {
		guarded(n);
	} catch (int) {
		leaf();
		throw;
	}
	sink++;
}

NOINLINE int catcher(int n)
{
	try {
		rethrower(n);
	} catch (int e) {
		leaf();
		return e;
	}
	return 0;
}

NOINLINE int outer(int n)
{
	int r = catcher(n);
	leaf();
	r += catcher(n);
	leaf();
	return r;
}

int main()
{
	int r = outer(3);

	leaf();
	return r == 2 ? 0 : 1;
}
