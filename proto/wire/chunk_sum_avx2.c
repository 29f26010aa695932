/* SPDX-License-Identifier: MIT */
/*
 * xxh3-64 of one whole chunk, built with -mavx2 (this file alone: proto/meson.build).
 * xxHash's header, inlined here, then takes its AVX2 code path, about twice the speed of
 * the SSE2 one that Debian's libxxhash is built with. The function is the same bit for
 * bit; lode_chunk_sum() (codec.c) calls this only on a CPU that has AVX2.
 */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "codec.h"

uint64_t lode_chunk_sum_avx2(const void *chunk)
{
	return XXH3_64bits(chunk, LODE_CHUNK_SIZE);
}
