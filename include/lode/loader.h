/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader: weights from Lode into memory, on the host or on a GPU, at the rate the
 * data path delivers, with every byte verified against its checksums on the way.
 *
 * - To the host, a range is read with lode_read_stream straight into its final place.
 * - To a device ("cuda:N"), pieces land, verified, in a pool of pinned host buffers
 *   registered once; as soon as a run of them is complete it is copied to the device with
 *   an asynchronous copy on one of several streams, while the next pieces are read. A
 *   buffer is reused only once its copies are done.
 * - "staged" runs that device pipeline with host memory behind it (a copy thread per
 *   stream stands in for the GPU's copy engines): the same logic, testable without a GPU.
 *
 * The safetensors part parses and checks a file's header (every tensor inside the data,
 * sizes matching dtype and shape, no two tensors overlapping) so that a loader can place
 * every tensor in one allocation per file.
 *
 * Conventions are lode.h's: 0 or a byte count on success, -errno on failure.
 */
#ifndef LODE_LOADER_H
#define LODE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lode/lode.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lode_loader;

/* Options of lode_loader_new(); zero means "default" for every field. */
struct lode_loader_opts {
	const char *to;	      /* "host" (default), "staged", or "cuda:N" */
	size_t chunk_bytes;   /* pinned buffer size (device, staged); default 64 MiB */
	unsigned buffers;     /* pinned buffers; default 4 */
	unsigned streams;     /* copy streams; default 2 */
	size_t copy_min;      /* bytes gathered before a copy starts; default 16 MiB */
	uint64_t reserved[8]; /* zero */
};

/* A loader for client c (used, not owned) into the memory o->to names. Returns 0 and *out,
 * -EINVAL (a name it does not know), -ENODEV (no such GPU, or no CUDA in this build),
 * -ENOMEM. */
LODE_API int lode_loader_new(struct lode_client *c, const struct lode_loader_opts *o,
			     struct lode_loader **out);
/* Frees the loader and its pinned buffers (not what lode_loader_alloc gave). NULL is
 * accepted. */
LODE_API void lode_loader_free(struct lode_loader *l);
/* "host", "staged" or "cuda:N". */
LODE_API const char *lode_loader_target(const struct lode_loader *l);
/* true when the loader's memory is not the host's (a GPU's). */
LODE_API bool lode_loader_on_device(const struct lode_loader *l);

/* len bytes of the loader's memory (page aligned on the host). Returns 0 and *out, or
 * -ENOMEM. */
LODE_API int lode_loader_alloc(struct lode_loader *l, size_t len, void **out);
/* Gives back what lode_loader_alloc gave. NULL is accepted. */
LODE_API void lode_loader_release(struct lode_loader *l, void *p);

/* Reads [off, off + len) of f into dst, the loader's memory (lode_loader_alloc's, or any
 * memory of that kind: a device pointer for cuda). Returns the bytes read (short only at
 * end of file) or -errno; on error dst holds part of the range. */
LODE_API ssize_t lode_loader_read(struct lode_loader *l, struct lode_file *f, void *dst, size_t len,
				  uint64_t off);
/* Copies len bytes of the loader's memory at src to host memory at dst (to check what was
 * loaded). Returns 0 or -errno. */
LODE_API int lode_loader_to_host(struct lode_loader *l, void *dst, const void *src, size_t len);
/* The last device failure in words ("" if none): what -EIO or -ENODEV meant. */
LODE_API const char *lode_loader_error(const struct lode_loader *l);
/* Bytes copied to the loader's memory through pinned buffers, and copies issued, since
 * the loader was made (both 0 for "host"). */
LODE_API void lode_loader_counters(const struct lode_loader *l, uint64_t *bytes, uint64_t *copies);

/* ---- safetensors ---- */

#define LODE_ST_MAX_DIMS 8
/* Largest header accepted (the format's reference reader takes 100 MB). */
#define LODE_ST_HEADER_MAX (100u << 20)

struct lode_st_tensor {
	const char *name;
	const char *dtype; /* "F32", "BF16", ... */
	unsigned elem_size;
	unsigned ndim;
	uint64_t shape[LODE_ST_MAX_DIMS];
	uint64_t begin, end; /* bytes, within the data that follows the header */
};

struct lode_st_header {
	uint64_t data_offset; /* where the data starts in the file: 8 + the header length */
	uint64_t data_len;    /* file size - data_offset */
	unsigned count;	      /* tensors, sorted by begin */
	struct lode_st_tensor *tensors;
};

/* Parses a safetensors header. head: the first head_len bytes of a file of file_size bytes
 * (at least 8; all of the header to succeed). Returns 0 and fills *out (free it with
 * lode_st_header_free); -EAGAIN with *need set when head_len is too short for the header
 * (read *need bytes and call again); -EBADMSG with a one-line reason in err (a header
 * length past the end of the file, bad JSON, an unknown dtype, a size that does not match
 * the shape, offsets past the data, two tensors overlapping); -ENOMEM. */
LODE_API int lode_st_parse(const void *head, size_t head_len, uint64_t file_size,
			   struct lode_st_header *out, size_t *need, char *err, size_t err_len);
LODE_API void lode_st_header_free(struct lode_st_header *h);

#ifdef __cplusplus
}
#endif

#endif
