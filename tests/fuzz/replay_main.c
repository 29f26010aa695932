/* SPDX-License-Identifier: MIT */
/*
 * Replays inputs through a fuzz harness without libFuzzer: the build with gcc (and the
 * meson tests in suite 'fuzz') link each harness with this main, which runs every file
 * named on the command line, or every file in a directory named there (in name order;
 * missing directories are skipped: a harness may have no crash reproducers yet). A crash
 * or sanitizer report fails the test; otherwise it prints how many inputs ran.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	return 0;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto err;
	/* an exact-size copy, so that the sanitizers see a read past the input's end */
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
		goto err;
	fclose(f);
	fprintf(stderr, "replay %s (%ld bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
err:
	fprintf(stderr, "%s: cannot read\n", path);
	free(buf);
	fclose(f);
	return -1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	unsigned ran = 0;
	int failed = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct dirent **ents;
		struct stat sb;
		int n;

		if (stat(argv[i], &sb)) {
			if (errno == ENOENT)
				continue;
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (!S_ISDIR(sb.st_mode)) {
			failed |= run_file(argv[i]);
			ran++;
			continue;
		}
		n = scandir(argv[i], &ents, skip_dot, by_name);
		if (n < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		for (int j = 0; j < n; j++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", argv[i], ents[j]->d_name);
			if (!stat(path, &sb) && S_ISREG(sb.st_mode)) {
				failed |= run_file(path);
				ran++;
			}
			free(ents[j]);
		}
		free(ents);
	}
	printf("%u inputs replayed\n", ran);
	return failed ? 1 : 0;
}
