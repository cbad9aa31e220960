/* A function with one parameter more. */
// expect: differs from the static call|invalid conversion|cannot initialize|cannot convert
#include "common.h"

static int wrong(int x, int y)
{
	return x + y;
}

int main(void)
{
	return static_call_update(sc, wrong);
}
