/* A function pointer variable of another type. */
// expect: differs from the static call|invalid conversion|cannot initialize|cannot convert
#include "common.h"

static unsigned wrong(unsigned x)
{
	return x;
}

int main(void)
{
	unsigned (*fp)(unsigned) = wrong;
	return static_call_update(sc, fp);
}
