/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the safetensors header parser of liblode-loader (client/loader/safetensors.c,
 * lode_st_parse): the JSON header at the start of a weights file on disk, which anyone who
 * can write a checkpoint controls.
 *
 * Input: [extra u32 LE][the file's first bytes]. The file is the input plus `extra` more
 * bytes (its size as stat would report it); the parser sees the input as the head it read.
 * A header it accepts must describe tensors inside the data, sorted and not overlapping,
 * each as long as its shape and dtype say; -EAGAIN must ask for more than it was given.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "lode/loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	uint64_t extra = fuzz_take(&in, 4);
	size_t len;
	const uint8_t *src = fuzz_bytes(&in, in.left, &len);
	uint8_t *head = malloc(len ? len : 1);
	struct lode_st_header h;
	char err[256];
	size_t need = 0;
	int rc;

	if (!head)
		return 0;
	if (len)
		memcpy(head, src, len);
	rc = lode_st_parse(head, len, (uint64_t)len + extra, &h, &need, err, sizeof(err));
	if (rc == -EAGAIN) {
		FUZZ_ASSERT(need > len && need <= (uint64_t)len + extra);
	} else if (rc == -EBADMSG) {
		FUZZ_ASSERT(memchr(err, '\0', sizeof(err)) && err[0]);
	} else if (rc == 0) {
		uint64_t prev_end = 0;

		FUZZ_ASSERT(h.data_offset <= (uint64_t)len + extra);
		FUZZ_ASSERT(h.data_len == (uint64_t)len + extra - h.data_offset);
		for (unsigned i = 0; i < h.count; i++) {
			const struct lode_st_tensor *t = &h.tensors[i];
			uint64_t n = t->elem_size;

			FUZZ_ASSERT(t->begin <= t->end && t->end <= h.data_len);
			/* sorted by begin; an empty tensor takes no room and overlaps nothing */
			if (t->end > t->begin) {
				FUZZ_ASSERT(t->begin >= prev_end);
				prev_end = t->end;
			}
			FUZZ_ASSERT(t->ndim <= LODE_ST_MAX_DIMS);
			for (unsigned d = 0; d < t->ndim; d++)
				n *= t->shape[d];
			if (t->elem_size)
				FUZZ_ASSERT(t->end - t->begin == n);
			fuzz_touch(t->name, strlen(t->name));
			fuzz_touch(t->dtype, strlen(t->dtype));
		}
		lode_st_header_free(&h);
	} else {
		FUZZ_ASSERT(rc == -ENOMEM);
	}
	free(head);
	return 0;
}
