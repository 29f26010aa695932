/* SPDX-License-Identifier: MIT */
/*
 * Test fixture: deterministic pseudo-random bytes addressed by (seed, offset), so that a test
 * regenerates what it wrote instead of keeping it.
 */
#include <string.h>

#include "pattern.h"

/* splitmix64 of (seed, 8-byte word index): random access into an endless stream */
static uint64_t word_at(uint64_t seed, uint64_t idx)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + idx * 0xbf58476d1ce4e5b9ull + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t offset)
{
	unsigned char *p = buf;
	size_t i = 0;

	while (i < len && (offset + i) % 8) {
		uint64_t w = word_at(seed, (offset + i) / 8);

		p[i] = (unsigned char)(w >> (8 * ((offset + i) % 8)));
		i++;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w = word_at(seed, (offset + i) / 8);

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++) {
		uint64_t w = word_at(seed, (offset + i) / 8);

		p[i] = (unsigned char)(w >> (8 * ((offset + i) % 8)));
	}
}

int64_t pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t offset)
{
	unsigned char tmp[65536];
	const unsigned char *p = buf;

	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);

		pattern_fill(tmp, n, seed, offset + done);
		if (memcmp(tmp, p + done, n)) {
			for (size_t i = 0; i < n; i++)
				if (tmp[i] != p[done + i])
					return (int64_t)(done + i);
		}
		done += n;
	}
	return -1;
}
