/* SPDX-License-Identifier: MIT */
/*
 * wordfreq - the README's first example: counts words of a small text with a
 * hash table, sorts them and prints the top three. Run it under
 * `dynftrace live -- build/examples/wordfreq` to see its function graph.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

struct entry {
	char word[32];
	int count;
};

static struct entry table[64];

NOINLINE static unsigned hash(const char *w)
{
	unsigned h = 5381;
	while (*w)
		h = h * 33 + (unsigned char)*w++;
	return h;
}

NOINLINE static struct entry *lookup(const char *w)
{
	unsigned i = hash(w) % 64;
	while (table[i].count && strcmp(table[i].word, w))
		i = (i + 1) % 64;
	return &table[i];
}

NOINLINE static void add_word(const char *w)
{
	struct entry *e = lookup(w);
	if (!e->count)
		snprintf(e->word, sizeof(e->word), "%s", w);
	e->count++;
}

NOINLINE static int next_word(const char **p, char *out, size_t len)
{
	size_t n = 0;
	while (**p && !isalpha((unsigned char)**p))
		(*p)++;
	while (**p && isalpha((unsigned char)**p)) {
		if (n + 1 < len)
			out[n++] = (char)tolower((unsigned char)**p);
		(*p)++;
	}
	out[n] = 0;
	return n > 0;
}

static int by_count(const void *a, const void *b)
{
	return ((const struct entry *)b)->count - ((const struct entry *)a)->count;
}

NOINLINE static void report(void)
{
	qsort(table, 64, sizeof(table[0]), by_count);
	for (int i = 0; i < 3; i++)
		printf("%-6s %d\n", table[i].word, table[i].count);
}

int main(void)
{
	const char *text = "the cat and the dog and the bird";
	char w[32];
	while (next_word(&text, w, sizeof(w)))
		add_word(w);
	report();
	return 0;
}
