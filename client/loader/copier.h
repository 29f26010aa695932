/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader: a copier moves verified bytes from pinned host buffers to the loader's
 * memory, asynchronously, on numbered streams (copies on one stream run in order). The
 * loader marks a buffer's slot after its last copy and waits for the mark before reusing
 * the buffer. Two copiers sit behind this interface: CUDA's (copier_cuda.c: cudaMemcpyAsync
 * on CUDA streams, events as marks) and a host stand-in (copier_staged.c: a copy thread
 * per stream), which runs the same pipeline where there is no GPU.
 */
#ifndef LODE_LOADER_COPIER_H
#define LODE_LOADER_COPIER_H

#include <stddef.h>

struct copier {
	const struct copier_ops *ops;
	void *priv;
	char error[160]; /* the last failure, in words */
};

struct copier_ops {
	const char *name;
	/* device: the GPU's number (ignored by the stand-in); streams and slots: how many */
	int (*open)(struct copier *cp, int device, unsigned streams, unsigned slots);
	void (*close)(struct copier *cp);
	/* the destination memory */
	int (*alloc)(struct copier *cp, size_t len, void **out);
	void (*release)(struct copier *cp, void *p);
	/* host memory the copier reads from fastest (pinned) */
	int (*pinned_alloc)(struct copier *cp, size_t len, void **out);
	void (*pinned_release)(struct copier *cp, void *p);
	/* starts copying len bytes from pinned src to dst; in order on its stream */
	int (*copy)(struct copier *cp, unsigned stream, void *dst, const void *src, size_t len);
	/* slot is done when every copy started on stream so far is */
	int (*mark)(struct copier *cp, unsigned stream, unsigned slot);
	/* waits until slot's mark is done; returns the first copy failure */
	int (*wait)(struct copier *cp, unsigned slot);
	/* copies len bytes of destination memory to host memory, synchronously */
	int (*to_host)(struct copier *cp, void *dst, const void *src, size_t len);
};

extern const struct copier_ops lode_copier_staged;
#ifdef LODE_HAVE_CUDA
extern const struct copier_ops lode_copier_cuda;
#endif

#endif
