// SPDX-License-Identifier: MIT
/* s-basic: nesting and leaves. */
#include "golden.h"

GOLDEN_SINK;

NOINLINE void leaf1(void)
{
	sink++;
}
NOINLINE void leaf2(void)
{
	sink += 2;
}
NOINLINE void inner(void)
{
	leaf1();
	leaf2();
	sink++;
}
NOINLINE void outer(void)
{
	inner();
	leaf1();
	sink++;
}

int main(void)
{
	outer();
	leaf2();
	return sink == 0;
}
