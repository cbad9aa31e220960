/* A function whose parameter type differs. */
// expect: differs from the static call|invalid conversion|cannot initialize|cannot convert
#include "common.h"

static int wrong(long x)
{
	return (int)x;
}

int main(void)
{
	return static_call_update(sc, wrong);
}
