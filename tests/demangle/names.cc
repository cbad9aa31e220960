// SPDX-License-Identifier: MIT
/*
 * names.cc - C++ the demangler test reads the symbols of (nm): standard
 * containers and strings, templates, lambdas, operators, constructors,
 * destructors, virtual functions (vtables, thunks, typeinfo), nested
 * and anonymous namespaces, function pointers, arrays, variadic packs,
 * static locals (guard variables).
 */
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace outer {
namespace {
struct Hidden {
	int v;
};
} // namespace
namespace inner {
template <typename T, int N> struct Box {
	T items[N];
	T &operator[](int i) { return items[i]; }
	bool operator==(const Box &o) const { return items[0] == o.items[0]; }
	template <typename U> U as() const { return static_cast<U>(items[0]); }
};
} // namespace inner
struct Base {
	virtual ~Base() {}
	virtual int f(int x) { return x; }
};
struct Other {
	virtual ~Other() {}
	virtual int g() { return 1; }
};
struct Derived : Base, Other {
	int f(int x) override { return x + 1; }
	int g() override { return 2; }
	operator bool() const { return true; }
	Derived &operator<<(const std::string &) { return *this; }
};
} // namespace outer

template <typename... Args> int count(Args &&...args) { return sizeof...(args); }
template <typename F> int apply(F f, int (*p)(int), const char (&arr)[4]) { return f(p(arr[0])); }
static int twice(int x) { return 2 * x; }
int counter()
{
	static std::string s = "x";
	return (int)s.size();
}

int main(int argc, char **argv)
{
	std::map<std::string, int> m;
	m.insert({"a", 1});
	m["b"] = 2;
	std::unordered_map<int, std::vector<std::string>> um;
	um[1].push_back(argv[0]);
	std::set<std::pair<int, double>> st;
	st.emplace(1, 2.0);
	std::vector<std::unique_ptr<outer::Base>> v;
	v.emplace_back(new outer::Derived);
	std::function<int(int)> fn = [&](int x) { return x + argc; };
	auto t = std::make_tuple(1, 'c', 2.0);
	outer::inner::Box<long, 3> box{};
	box[0] = 5;
	outer::Hidden h{3};
	outer::Derived d;
	d << std::string("x");
	static const char arr[4] = "abc";
	int r = count(1, 'c', 2.0, std::string("s")) + apply([](int x) { return x; }, twice, arr) +
		box.as<int>() + (box == box) + fn(1) + std::get<0>(t) + h.v + counter() +
		(int)m.size() + (int)um.size() + (int)st.size() + v[0]->f(1) + (bool)d;
	return r == 0;
}
