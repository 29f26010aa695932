/* SPDX-License-Identifier: MIT */
/* Test fixture: a pattern of bytes that any test can regenerate from (seed, offset). */
#ifndef LODE_TESTS_PATTERN_H
#define LODE_TESTS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Deterministic pseudo-random bytes: the same (seed, offset) always gives the same byte,
 * so tests can regenerate what they wrote instead of keeping it. */
void pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t offset);
/* Returns the offset of the first byte that differs from the pattern, or -1. */
int64_t pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t offset);

#endif
