// SPDX-License-Identifier: MIT
// The C++ functions of tests/sh/dwarf-args.sh: specs named by their
// symbols (linkage names), a member function's this, references, a class
// with a destructor passed by value (by invisible reference).
#include <string>

namespace geo {
struct Point {
	int x, y;
	__attribute__((noinline)) int dot(const Point &o) const;
};
int Point::dot(const Point &o) const
{
	return x * o.x + y * o.y;
}
} // namespace geo

__attribute__((noinline)) double scale(double f, int n)
{
	return f * n;
}

__attribute__((noinline)) size_t length(std::string s, int extra)
{
	return s.size() + (size_t)extra;
}

int main(int argc, char **argv)
{
	geo::Point a{argc, argc}, b{argc, 1};
	return a.dot(b) + (int)scale(argc, argc) + (int)length(argv[0], argc);
}
