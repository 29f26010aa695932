/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader: copies to a GPU with the CUDA runtime. Pinned buffers come from
 * cudaHostAlloc (the copy engines read them directly, at the link's rate; pageable memory
 * is staged by the driver at a fraction of it), copies are cudaMemcpyAsync on the
 * loader's CUDA streams, and a slot's mark is a CUDA event recorded on its stream.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "copier.h"

struct cuda {
	int device;
	unsigned nstreams, nslots;
	cudaStream_t *streams;
	cudaEvent_t *events;
};

/* Records what CUDA said; every CUDA failure is -EIO to the caller, or -ENOMEM. */
static int failed(struct copier *cp, const char *what, cudaError_t e)
{
	snprintf(cp->error, sizeof(cp->error), "%s: %s", what, cudaGetErrorString(e));
	return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

static void cuda_close(struct copier *cp)
{
	struct cuda *cu = cp->priv;

	if (!cu)
		return;
	cudaSetDevice(cu->device);
	for (unsigned i = 0; i < cu->nstreams; i++)
		cudaStreamDestroy(cu->streams[i]);
	for (unsigned i = 0; i < cu->nslots; i++)
		cudaEventDestroy(cu->events[i]);
	free(cu->streams);
	free(cu->events);
	free(cu);
	cp->priv = NULL;
}

static int cuda_open(struct copier *cp, int device, unsigned streams, unsigned slots)
{
	struct cuda *cu;
	int count = 0;
	cudaError_t e;

	e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || device >= count) {
		snprintf(cp->error, sizeof(cp->error), "no CUDA device %d (%s)", device,
			 e != cudaSuccess ? cudaGetErrorString(e) : "too few devices");
		return -ENODEV;
	}
	e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return failed(cp, "cudaSetDevice", e);
	cu = calloc(1, sizeof(*cu));
	if (!cu)
		return -ENOMEM;
	cp->priv = cu;
	cu->device = device;
	cu->streams = calloc(streams, sizeof(*cu->streams));
	cu->events = calloc(slots, sizeof(*cu->events));
	if (!cu->streams || !cu->events) {
		cuda_close(cp);
		return -ENOMEM;
	}
	for (; cu->nstreams < streams; cu->nstreams++) {
		e = cudaStreamCreateWithFlags(&cu->streams[cu->nstreams], cudaStreamNonBlocking);
		if (e != cudaSuccess) {
			int rc = failed(cp, "cudaStreamCreate", e);

			cuda_close(cp);
			return rc;
		}
	}
	for (; cu->nslots < slots; cu->nslots++) {
		e = cudaEventCreateWithFlags(&cu->events[cu->nslots], cudaEventDisableTiming);
		if (e != cudaSuccess) {
			int rc = failed(cp, "cudaEventCreate", e);

			cuda_close(cp);
			return rc;
		}
	}
	return 0;
}

static int cuda_alloc(struct copier *cp, size_t len, void **out)
{
	cudaError_t e = cudaMalloc(out, len ? len : 1);

	return e == cudaSuccess ? 0 : failed(cp, "cudaMalloc", e);
}

static void cuda_release(struct copier *cp, void *p)
{
	(void)cp;
	if (p)
		cudaFree(p);
}

static int cuda_pinned_alloc(struct copier *cp, size_t len, void **out)
{
	cudaError_t e = cudaHostAlloc(out, len, cudaHostAllocPortable);

	return e == cudaSuccess ? 0 : failed(cp, "cudaHostAlloc", e);
}

static void cuda_pinned_release(struct copier *cp, void *p)
{
	(void)cp;
	if (p)
		cudaFreeHost(p);
}

static int cuda_copy(struct copier *cp, unsigned stream, void *dst, const void *src, size_t len)
{
	struct cuda *cu = cp->priv;
	cudaError_t e = cudaMemcpyAsync(dst, src, len, cudaMemcpyHostToDevice,
					cu->streams[stream % cu->nstreams]);

	return e == cudaSuccess ? 0 : failed(cp, "cudaMemcpyAsync", e);
}

static int cuda_mark(struct copier *cp, unsigned stream, unsigned slot)
{
	struct cuda *cu = cp->priv;
	cudaError_t e =
	    cudaEventRecord(cu->events[slot % cu->nslots], cu->streams[stream % cu->nstreams]);

	return e == cudaSuccess ? 0 : failed(cp, "cudaEventRecord", e);
}

static int cuda_wait(struct copier *cp, unsigned slot)
{
	struct cuda *cu = cp->priv;
	cudaError_t e = cudaEventSynchronize(cu->events[slot % cu->nslots]);

	return e == cudaSuccess ? 0 : failed(cp, "cudaEventSynchronize", e);
}

static int cuda_to_host(struct copier *cp, void *dst, const void *src, size_t len)
{
	cudaError_t e = cudaMemcpy(dst, src, len, cudaMemcpyDeviceToHost);

	return e == cudaSuccess ? 0 : failed(cp, "cudaMemcpy to the host", e);
}

const struct copier_ops lode_copier_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .pinned_alloc = cuda_pinned_alloc,
    .pinned_release = cuda_pinned_release,
    .copy = cuda_copy,
    .mark = cuda_mark,
    .wait = cuda_wait,
    .to_host = cuda_to_host,
};
