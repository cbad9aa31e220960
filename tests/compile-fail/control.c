/* control: every accepted form of static_call_update compiles. */
#include "common.h"

static int other(int x)
{
	return x + 1;
}

int main(void)
{
	int (*fp)(int) = other;
	int r = static_call_update(sc, other);
	r |= static_call_update(sc, &other);
	r |= static_call_update(sc, fp);
	r |= static_call_update(sc, NULL);
	r |= static_call_update(sc, good);
	return r + static_call(sc)(0) + (static_call_query(sc) == good ? 0 : 1);
}
