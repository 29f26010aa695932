/* SPDX-License-Identifier: MIT */
/*
 * gpu_bench: the two baselines of a GPU load, for tools/bench/gpu-load.sh.
 *
 *   gpu_bench ceiling [--size B] [--chunk B] [--device N]
 *       host-to-device copies from pinned memory (cudaMemcpyAsync of CHUNK bytes on two
 *       streams, SIZE in all, default 4 GiB in 64 MiB copies): the most any loader can
 *       reach on this link.
 *   gpu_bench readcopy [--chunk B] [--device N] PATH
 *       what an application does without a loader: read() of the file (through the
 *       mount) into a pinned buffer, then cudaMemcpy of it to the device, chunk by chunk.
 *
 * Prints "bytes=N seconds=S" (and GB/s) on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "gpu_bench: %s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

static unsigned long long size_arg(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'G':
		v <<= 10; /* fall through */
	case 'M':
		v <<= 10; /* fall through */
	case 'K':
		v <<= 10;
		end++;
	}
	if (*end || !v) {
		fprintf(stderr, "gpu_bench: bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

static int ceiling(unsigned long long size, size_t chunk)
{
	cudaStream_t st[2];
	char *host, *dev;
	double t0, t;

	check(cudaHostAlloc((void **)&host, chunk, cudaHostAllocPortable), "cudaHostAlloc");
	check(cudaMalloc((void **)&dev, 2 * chunk), "cudaMalloc");
	memset(host, 1, chunk);
	for (int i = 0; i < 2; i++)
		check(cudaStreamCreate(&st[i]), "cudaStreamCreate");
	/* one copy first: the link and the context warmed up */
	check(cudaMemcpy(dev, host, chunk, cudaMemcpyHostToDevice), "cudaMemcpy");
	t0 = now_s();
	for (unsigned long long done = 0, i = 0; done < size; done += chunk, i++)
		check(cudaMemcpyAsync(dev + (i % 2) * chunk, host, chunk, cudaMemcpyHostToDevice,
				      st[i % 2]),
		      "cudaMemcpyAsync");
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	t = now_s() - t0;
	printf("bytes=%llu seconds=%.6f gbps=%.3f\n", size, t, size / t / 1e9);
	return 0;
}

static int readcopy(const char *path, size_t chunk)
{
	unsigned long long total = 0;
	char *host, *dev;
	double t0, t;
	off_t size;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "gpu_bench: %s: %s\n", path, strerror(errno));
		return 1;
	}
	size = lseek(fd, 0, SEEK_END);
	lseek(fd, 0, SEEK_SET);
	check(cudaHostAlloc((void **)&host, chunk, cudaHostAllocPortable), "cudaHostAlloc");
	check(cudaMalloc((void **)&dev, (size_t)size), "cudaMalloc (the whole file)");
	t0 = now_s();
	for (;;) {
		size_t got = 0;

		while (got < chunk) {
			ssize_t n = read(fd, host + got, chunk - got);

			if (n < 0) {
				fprintf(stderr, "gpu_bench: read %s: %s\n", path, strerror(errno));
				return 1;
			}
			if (n == 0)
				break;
			got += (size_t)n;
		}
		if (!got)
			break;
		check(cudaMemcpy(dev + total, host, got, cudaMemcpyHostToDevice), "cudaMemcpy");
		total += got;
	}
	t = now_s() - t0;
	printf("bytes=%llu seconds=%.6f gbps=%.3f\n", total, t, total / t / 1e9);
	close(fd);
	return total == (unsigned long long)size ? 0 : 1;
}

int main(int argc, char **argv)
{
	unsigned long long size = 4ull << 30;
	size_t chunk = 64u << 20;
	const char *mode, *path = NULL;
	int device = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: gpu_bench ceiling [--size B] [--chunk B] [--device N]\n"
				"       gpu_bench readcopy [--chunk B] [--device N] PATH\n");
		return 2;
	}
	mode = argv[1];
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = size_arg(argv[++i]);
		else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
			chunk = (size_t)size_arg(argv[++i]);
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			device = atoi(argv[++i]);
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else {
			fprintf(stderr, "gpu_bench: bad argument '%s'\n", argv[i]);
			return 2;
		}
	}
	check(cudaSetDevice(device), "cudaSetDevice");
	if (!strcmp(mode, "ceiling"))
		return ceiling(size, chunk);
	if (!strcmp(mode, "readcopy") && path)
		return readcopy(path, chunk);
	fprintf(stderr, "gpu_bench: unknown mode or no PATH\n");
	return 2;
}
