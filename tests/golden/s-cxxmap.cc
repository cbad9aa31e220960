// SPDX-License-Identifier: MIT
/* s-cxxmap: C++ names as replay shows them by default (simple: no template
 * arguments, no parameters): one std::map insert, a lambda, an operator. */
#include <map>
#include <string>

#include "golden.h"

GOLDEN_SINK;

struct Point {
	int x, y;
	NOINLINE bool operator<(const Point &o) const
	{
		sink++;
		return x < o.x || (x == o.x && y < o.y);
	}
};

NOINLINE void insert_one(std::map<std::string, int> &m)
{
	m.insert(std::make_pair(std::string("one"), 1));
	sink++;
}

template <typename T> NOINLINE T twice(T v)
{
	sink++;
	return v + v;
}

int main()
{
	std::map<std::string, int> m;
	insert_one(m);
	Point a{1, 2}, b{2, 1};
	auto cmp = [](const Point &p, const Point &q) { return p < q; };
	sink += cmp(a, b);
	sink += twice<long>(3);
	return m.size() == 1 ? 0 : 1;
}
