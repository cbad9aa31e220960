/* SPDX-License-Identifier: MIT */
/*
 * Functions whose arguments and results live in vector and x87 registers,
 * and variadic ones (al counts the vector arguments), called in a loop.
 * The output must be the same traced (graph shortcut: only general
 * registers saved; slow path: all of them) and untraced. With ROUTES=1 it
 * also prints the route of each function's site (public introspection).
 */
#include <dynftrace/dynftrace.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct two {
	double a, b;
};

static volatile int sink;

__attribute__((noinline)) double fmix(double a, float b, double c, double d, double e, double f,
				      double g, double h)
{
	sink++;
	return a * 1.5 + b - c * d + e / f + g * h;
}

__attribute__((noinline)) double vsum(int n, ...)
{
	va_list ap;
	double s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double) * (i + 1);
	va_end(ap);
	sink++;
	return s;
}

__attribute__((noinline)) long double ldbl(long double x, double y)
{
	sink++;
	return x * 3 + y;
}

__attribute__((noinline)) struct two pair(double x, double y)
{
	sink++;
	struct two t = {x + y, x - y};
	return t;
}

__attribute__((noinline)) long imix(long a, long b, long c, long d, long e, long f, long g)
{
	sink++;
	return a - b * c + d * e - f + g;
}

__attribute__((noinline)) float fchain(float x)
{
	sink++;
	return x < 1.0f ? x : fchain(x / 2.0f) + 0.25f;
}

static int print_route(const struct dynftrace_site_info *si, void *data)
{
	static const char *const names[] = {"fmix", "vsum", "ldbl", "pair", "imix", "fchain"};
	(void)data;
	for (size_t i = 0; si->func && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(si->func, names[i]))
			fprintf(stderr, "route %s %s\n", si->func, si->route);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	double acc = 0;
	long double lacc = 0;
	long iacc = 0;
	for (int i = 0; i < n; i++) {
		double x = i * 0.37;
		acc += fmix(x, (float)i / 3, x + 1, 0.5, x * x, x + 2, -x, 1.25);
		acc += vsum(5, x, 1.0 / (i + 1), 2.5, -x, 0.125);
		lacc += ldbl((long double)x / 7, x);
		struct two t = pair(x, 0.75);
		acc += t.a * t.b;
		iacc += imix(i, 3, 5, i * 2, 7, 11, -i);
		acc += fchain((float)(i % 97) + 0.5f);
	}
	printf("acc %.17g lacc %.20Lg iacc %ld\n", acc, lacc, iacc);
	if (getenv("ROUTES"))
		dynftrace_for_each_site_info(print_route, NULL);
	return 0;
}
