/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz harness in tests/fuzz/ provides: libFuzzer's entry point (and, if it
 * needs one-time set-up, its initializer). The same harness links either with libFuzzer
 * (clang, -fsanitize=fuzzer) or with replay_main.c, which runs the committed corpus and
 * crash reproducers once (the meson tests in suite 'fuzz').
 *
 * A harness must be deterministic enough to replay a crash, return 0 for every input, and
 * abort() (or trip a sanitizer) only on a real bug: a decoder that accepted something it
 * promised to refuse, a hang, a read out of bounds.
 */
#ifndef LODE_TESTS_FUZZ_H
#define LODE_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property the code under test promises did not hold: report it and crash. */
#define FUZZ_ASSERT(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: fuzz assertion failed: %s\n", __FILE__, __LINE__,  \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A cursor over the fuzz input: takes bytes from the front; past the end reads zeros. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline uint64_t fuzz_take(struct fuzz_in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++) {
		uint64_t b = 0;

		if (in->left) {
			b = *in->p++;
			in->left--;
		}
		v |= b << (8 * i);
	}
	return v;
}

/* Up to n bytes from the front (fewer at the end); *got says how many. */
static inline const uint8_t *fuzz_bytes(struct fuzz_in *in, size_t n, size_t *got)
{
	const uint8_t *p = in->p;

	if (n > in->left)
		n = in->left;
	in->p += n;
	in->left -= n;
	*got = n;
	return p;
}

/* Touches every byte of [p, p + n) so that the sanitizers see a read out of bounds. */
static inline unsigned fuzz_touch(const void *p, size_t n)
{
	const volatile unsigned char *b = p;
	unsigned s = 0;

	for (size_t i = 0; i < n; i++)
		s += b[i];
	return s;
}

#endif
