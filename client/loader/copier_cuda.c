/* SPDX-License-Identifier: MIT */
/*
 * liblode-loader: copies to a GPU with the CUDA runtime. Pinned buffers come from
 * cudaHostAlloc (the copy engines read them directly, at the link's rate; pageable memory
 * is staged by the driver at a fraction of it), copies are cudaMemcpyAsync on the
 * loader's CUDA streams, and a slot's mark is a CUDA event recorded on its stream.
 *
 * The runtime is opened with dlopen when a loader first asks for a GPU, not linked: the
 * library, and lodectl with it, then run on machines without CUDA (an admin node, a test
 * VM), where cuda:N is -ENODEV with the reason.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "copier.h"

/* every runtime function the copier calls, resolved once */
#define CUDA_FNS(X)                                                                                \
	X(cudaGetDeviceCount)                                                                      \
	X(cudaSetDevice)                                                                           \
	X(cudaGetErrorString)                                                                      \
	X(cudaStreamCreateWithFlags)                                                               \
	X(cudaStreamDestroy)                                                                       \
	X(cudaEventCreateWithFlags)                                                                \
	X(cudaEventDestroy)                                                                        \
	X(cudaEventRecord)                                                                         \
	X(cudaEventSynchronize)                                                                    \
	X(cudaMalloc)                                                                              \
	X(cudaFree)                                                                                \
	X(cudaHostAlloc)                                                                           \
	X(cudaFreeHost)                                                                            \
	X(cudaMemcpyAsync)                                                                         \
	X(cudaMemcpy)

static struct {
#define FIELD(f) __typeof__(f) *f;
	CUDA_FNS(FIELD)
#undef FIELD
} rt;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static char rt_error[160]; /* why the runtime could not be opened; "" once it is */

static void rt_open(void)
{
	static const char *const names[] = {
#ifdef LODE_CUDART_DIR
	    LODE_CUDART_DIR "/lib64/libcudart.so",
#endif
	    "libcudart.so",
	    "libcudart.so.13",
	    "libcudart.so.12",
	    "libcudart.so.11.0",
	};
	void *h = NULL;

	for (size_t i = 0; !h && i < sizeof(names) / sizeof(names[0]); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(rt_error, sizeof(rt_error),
			 "no CUDA runtime (libcudart.so) on this machine");
		return;
	}
#define RESOLVE(f)                                                                                 \
	rt.f = (__typeof__(f) *)dlsym(h, #f);                                                      \
	if (!rt.f) {                                                                               \
		snprintf(rt_error, sizeof(rt_error), "the CUDA runtime has no %s", #f);            \
		return;                                                                            \
	}
	CUDA_FNS(RESOLVE)
#undef RESOLVE
	rt_error[0] = 0;
}

struct cuda {
	int device;
	unsigned nstreams, nslots;
	cudaStream_t *streams;
	cudaEvent_t *events;
};

/* Records what CUDA said; every CUDA failure is -EIO to the caller, or -ENOMEM. */
static int failed(struct copier *cp, const char *what, cudaError_t e)
{
	snprintf(cp->error, sizeof(cp->error), "%s: %s", what, rt.cudaGetErrorString(e));
	return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

static void cuda_close(struct copier *cp)
{
	struct cuda *cu = cp->priv;

	if (!cu)
		return;
	rt.cudaSetDevice(cu->device);
	for (unsigned i = 0; i < cu->nstreams; i++)
		rt.cudaStreamDestroy(cu->streams[i]);
	for (unsigned i = 0; i < cu->nslots; i++)
		rt.cudaEventDestroy(cu->events[i]);
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

	pthread_once(&rt_once, rt_open);
	if (rt_error[0]) {
		snprintf(cp->error, sizeof(cp->error), "%s", rt_error);
		return -ENODEV;
	}
	e = rt.cudaGetDeviceCount(&count);
	if (e != cudaSuccess || device >= count) {
		snprintf(cp->error, sizeof(cp->error), "no CUDA device %d (%s)", device,
			 e != cudaSuccess ? rt.cudaGetErrorString(e) : "too few devices");
		return -ENODEV;
	}
	e = rt.cudaSetDevice(device);
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
		e = rt.cudaStreamCreateWithFlags(&cu->streams[cu->nstreams], cudaStreamNonBlocking);
		if (e != cudaSuccess) {
			int rc = failed(cp, "cudaStreamCreate", e);

			cuda_close(cp);
			return rc;
		}
	}
	for (; cu->nslots < slots; cu->nslots++) {
		e = rt.cudaEventCreateWithFlags(&cu->events[cu->nslots], cudaEventDisableTiming);
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
	cudaError_t e = rt.cudaMalloc(out, len ? len : 1);

	return e == cudaSuccess ? 0 : failed(cp, "cudaMalloc", e);
}

static void cuda_release(struct copier *cp, void *p)
{
	(void)cp;
	if (p)
		rt.cudaFree(p);
}

static int cuda_pinned_alloc(struct copier *cp, size_t len, void **out)
{
	cudaError_t e = rt.cudaHostAlloc(out, len, cudaHostAllocPortable);

	return e == cudaSuccess ? 0 : failed(cp, "cudaHostAlloc", e);
}

static void cuda_pinned_release(struct copier *cp, void *p)
{
	(void)cp;
	if (p)
		rt.cudaFreeHost(p);
}

static int cuda_copy(struct copier *cp, unsigned stream, void *dst, const void *src, size_t len)
{
	struct cuda *cu = cp->priv;
	cudaError_t e = rt.cudaMemcpyAsync(dst, src, len, cudaMemcpyHostToDevice,
					   cu->streams[stream % cu->nstreams]);

	return e == cudaSuccess ? 0 : failed(cp, "cudaMemcpyAsync", e);
}

static int cuda_mark(struct copier *cp, unsigned stream, unsigned slot)
{
	struct cuda *cu = cp->priv;
	cudaError_t e =
	    rt.cudaEventRecord(cu->events[slot % cu->nslots], cu->streams[stream % cu->nstreams]);

	return e == cudaSuccess ? 0 : failed(cp, "cudaEventRecord", e);
}

static int cuda_wait(struct copier *cp, unsigned slot)
{
	struct cuda *cu = cp->priv;
	cudaError_t e = rt.cudaEventSynchronize(cu->events[slot % cu->nslots]);

	return e == cudaSuccess ? 0 : failed(cp, "cudaEventSynchronize", e);
}

static int cuda_to_host(struct copier *cp, void *dst, const void *src, size_t len)
{
	cudaError_t e = rt.cudaMemcpy(dst, src, len, cudaMemcpyDeviceToHost);

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
