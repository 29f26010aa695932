/* SPDX-License-Identifier: MIT */
/*
 * posix_diff DIR: runs every POSIX call a file system answers, with its edge and error
 * cases, inside DIR (which must be empty), and prints one normalized line per call:
 *
 *   call args-relative-to-DIR = return-value ERRNO-NAME [| path: metadata ...]
 *
 * Metadata is what two correct file systems must agree on: type, mode, nlink, size (not
 * for directories), uid, gid; never inode numbers, st_blocks or st_dev, and times only
 * as relations ("mtime changed") or when the call set them explicitly. The harness runs
 * this on tmpfs and on a lode-fuse mount, as root and as an unprivileged user, and
 * requires identical transcripts: every line is a claim that Lode behaves as Linux does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define GiB (1ll << 30)

static const char *ename(int e)
{
	const char *n = e ? strerrorname_np(e) : "OK";

	return n ? n : "E?";
}

/* A name as one token: bytes outside printable ASCII, and the backslash, as \\xx. */
static void putname(const char *n)
{
	for (const unsigned char *p = (const unsigned char *)n; *p; p++)
		if (*p > 0x20 && *p < 0x7f && *p != '\\')
			putchar(*p);
		else
			printf("\\%02x", *p);
}

static void meta(const char *path)
{
	struct stat st;
	const char *t;

	fputs(" | ", stdout);
	putname(path);
	if (lstat(path, &st)) {
		printf(": %s", ename(errno));
		return;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		t = "reg";
		break;
	case S_IFDIR:
		t = "dir";
		break;
	case S_IFLNK:
		t = "lnk";
		break;
	case S_IFIFO:
		t = "fifo";
		break;
	default:
		t = "other";
		break;
	}
	printf(": %s %04o n%lu", t, (unsigned)(st.st_mode & 07777), (unsigned long)st.st_nlink);
	if (!S_ISDIR(st.st_mode))
		printf(" s%lld", (long long)st.st_size);
	printf(" u%u g%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
}

static void fmeta(int fd)
{
	struct stat st;

	if (fstat(fd, &st)) {
		printf(" | fd: %s", ename(errno));
		return;
	}
	printf(" | fd: %04o n%lu s%lld u%u g%u", (unsigned)(st.st_mode & 07777),
	       (unsigned long)st.st_nlink, (long long)st.st_size, (unsigned)st.st_uid,
	       (unsigned)st.st_gid);
}

/* Prints "call = ret ERRNO" and the metadata of up to two paths (NULL: none). */
static void out(const char *call, long ret, int err, const char *p1, const char *p2)
{
	printf("%s = %ld %s", call, ret < 0 ? -1 : ret, ret < 0 ? ename(err) : "OK");
	if (p1)
		meta(p1);
	if (p2)
		meta(p2);
	putchar('\n');
	fflush(stdout);
}

/* T(expr, p1, p2, "fmt", ...): runs expr, reports it under the formatted name. */
#define T(expr, p1, p2, ...)                                                                       \
	({                                                                                         \
		char _c[512];                                                                      \
		long _r;                                                                           \
		int _e;                                                                            \
		snprintf(_c, sizeof(_c), __VA_ARGS__);                                             \
		errno = 0;                                                                         \
		_r = (long)(expr);                                                                 \
		_e = errno;                                                                        \
		out(_c, _r, _e, p1, p2);                                                           \
		errno = _e;                                                                        \
		_r;                                                                                \
	})

/* An fd-returning call: the number itself is not compared, only whether it is one. */
#define OPEN(fdvar, expr, p1, ...)                                                                 \
	do {                                                                                       \
		char _c[512];                                                                      \
		int _e;                                                                            \
		snprintf(_c, sizeof(_c), __VA_ARGS__);                                             \
		errno = 0;                                                                         \
		fdvar = (expr);                                                                    \
		_e = errno;                                                                        \
		out(_c, fdvar >= 0 ? 0 : -1, _e, p1, NULL);                                        \
	} while (0)

static void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void closefd(int *fd)
{
	if (*fd >= 0)
		T(close(*fd), NULL, NULL, "close");
	*fd = -1;
}

/* Bytes as text: printable ones as themselves, others as \xx; long runs summarized. */
static void show(const char *what, const unsigned char *b, long n)
{
	printf("%s [%ld]: ", what, n);
	for (long i = 0; i < n;) {
		long j = i;

		while (j < n && b[j] == b[i])
			j++;
		if (j - i > 4) {
			printf("{%ld x %02x}", j - i, b[i]);
			i = j;
			continue;
		}
		if (b[i] >= 0x21 && b[i] < 0x7f && b[i] != '\\' && b[i] != '{')
			putchar(b[i]);
		else
			printf("\\%02x", b[i]);
		i++;
	}
	putchar('\n');
	fflush(stdout);
}

static void read_show(int fd, size_t len, off_t off, const char *what)
{
	unsigned char *b = calloc(1, len + 1);
	long r = T(pread(fd, b, len, off), NULL, NULL, "pread %s len=%zu off=%lld", what, len,
		   (long long)off);

	if (r > 0)
		show(what, b, r);
	free(b);
}

static void file_show(const char *path)
{
	unsigned char b[4096];
	int fd = open(path, O_RDONLY);
	long n;

	if (fd < 0) {
		note("content %s: %s", path, ename(errno));
		return;
	}
	n = read(fd, b, sizeof(b));
	if (n < 0)
		note("content %s: read %s", path, ename(errno));
	else
		show(path, b, n);
	close(fd);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Time relations: before() pins mtime to a known past value and remembers ctime, after a
 * pause so that a ctime update is visible at any clock granularity. */
struct tsnap {
	struct timespec m, c;
};

static void before(const char *path, struct tsnap *s)
{
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	struct timespec pause = {0, 30 * 1000000};
	struct stat st;

	utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW);
	nanosleep(&pause, NULL);
	memset(s, 0, sizeof(*s));
	if (!lstat(path, &st)) {
		s->m = st.st_mtim;
		s->c = st.st_ctim;
	}
	nanosleep(&pause, NULL);
}

static int ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static void after(const char *path, const struct tsnap *s)
{
	struct stat st;

	if (lstat(path, &st)) {
		note("times %s: %s", path, ename(errno));
		return;
	}
	note("times %s: mtime %s, ctime %s", path,
	     ts_eq(st.st_mtim, s->m) ? "unchanged" : "changed",
	     ts_eq(st.st_ctim, s->c) ? "unchanged" : "changed");
}

static void exact_times(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		note("exact times %s: %s", path, ename(errno));
		return;
	}
	note("exact times %s: atime %lld.%09ld mtime %lld.%09ld", path,
	     (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec, (long long)st.st_mtim.tv_sec,
	     st.st_mtim.tv_nsec);
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_dir(const char *path)
{
	char *names[256];
	int n = 0;
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d) {
		note("readdir %s: %s", path, ename(errno));
		return;
	}
	while ((e = readdir(d)) && n < 256)
		names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmpstr);
	printf("readdir %s [%d]:", path, n);
	for (int i = 0; i < n; i++) {
		putchar(' ');
		putname(names[i]);
		free(names[i]);
	}
	putchar('\n');
	fflush(stdout);
}

static void section(const char *name)
{
	printf("## %s\n", name);
	fflush(stdout);
}

static void files(void)
{
	int fd = -1, fd2 = -1;
	char buf[64];
	struct tsnap s;

	section("create, read, write");
	OPEN(fd, open("f", O_CREAT | O_EXCL | O_RDWR, 0666), "f",
	     "open f O_CREAT|O_EXCL|O_RDWR 0666");
	OPEN(fd2, open("f", O_CREAT | O_EXCL | O_RDWR, 0666), "f",
	     "open f O_CREAT|O_EXCL again (EEXIST)");
	T(write(fd, "hello world", 11), "f", NULL, "write f 'hello world'");
	T(write(fd, "", 0), "f", NULL, "write f 0 bytes");
	read_show(fd, 100, 0, "f");
	T(read(fd, buf, sizeof(buf)), NULL, NULL, "read f at EOF");
	T(lseek(fd, 0, SEEK_END), NULL, NULL, "lseek f 0 SEEK_END");
	T(lseek(fd, 3, SEEK_SET), NULL, NULL, "lseek f 3 SEEK_SET");
	T(read(fd, buf, 4), NULL, NULL, "read f 4 bytes at 3");
	show("read", (unsigned char *)buf, 4);
	T(lseek(fd, -1, SEEK_SET), NULL, NULL, "lseek f -1 (EINVAL)");

	section("sparse writes and reads beyond EOF");
	T(pwrite(fd, "X", 1, 100), "f", NULL, "pwrite f 'X' at 100 (hole 11..99)");
	read_show(fd, 200, 0, "f");
	T(pread(fd, buf, 10, 1000), NULL, NULL, "pread f at 1000 beyond EOF");
	before("f", &s);
	T(pwrite(fd, "Y5GiB", 5, 5 * GiB), "f", NULL, "pwrite f 'Y5GiB' at 5 GiB");
	after("f", &s);
	read_show(fd, 16, 5 * GiB - 8, "f near 5 GiB");
	read_show(fd, 16, 3 * GiB, "f in the hole at 3 GiB");
	T(pread(fd, buf, 10, 6 * GiB), NULL, NULL, "pread f at 6 GiB beyond EOF");

	section("ftruncate");
	before("f", &s);
	T(ftruncate(fd, 50), "f", NULL, "ftruncate f 50");
	after("f", &s);
	read_show(fd, 100, 0, "f");
	T(ftruncate(fd, 200), "f", NULL, "ftruncate f 200 (the X at 100 must not come back)");
	read_show(fd, 300, 0, "f");
	T(ftruncate(fd, -1), "f", NULL, "ftruncate f -1 (EINVAL)");
	T(fsync(fd), NULL, NULL, "fsync f");
	T(fdatasync(fd), NULL, NULL, "fdatasync f");
	T(fstat(fd, &(struct stat){0}), NULL, NULL, "fstat f");
	printf("fstat f");
	fmeta(fd);
	putchar('\n');
	closefd(&fd);
	T(truncate("f", 7), "f", NULL, "truncate f 7");
	T(truncate("nope", 7), NULL, NULL, "truncate nope (ENOENT)");
	T(truncate(".", 7), NULL, NULL, "truncate . (EISDIR)");

	section("O_TRUNC, O_APPEND, access modes");
	OPEN(fd, open("f", O_WRONLY | O_TRUNC), "f", "open f O_WRONLY|O_TRUNC");
	T(write(fd, "0123456789", 10), "f", NULL, "write f '0123456789'");
	OPEN(fd2, open("f", O_WRONLY | O_APPEND), "f", "open f O_WRONLY|O_APPEND");
	T(write(fd2, "abc", 3), "f", NULL, "write f 'abc' O_APPEND");
	T(pwrite(fd, "LONGERTEXT--", 12, 10), "f", NULL, "pwrite f other fd 12 bytes at 10");
	T(write(fd2, "def", 3), "f", NULL, "write f 'def' O_APPEND after the file grew");
	T(lseek(fd2, 0, SEEK_CUR), NULL, NULL, "lseek f O_APPEND fd SEEK_CUR");
	T(read(fd2, buf, 4), NULL, NULL, "read f from O_WRONLY fd (EBADF)");
	closefd(&fd2);
	closefd(&fd);
	file_show("f");
	OPEN(fd, open("f", O_RDONLY), "f", "open f O_RDONLY");
	T(write(fd, "x", 1), "f", NULL, "write f to O_RDONLY fd (EBADF)");
	T(ftruncate(fd, 0), "f", NULL, "ftruncate O_RDONLY fd (EINVAL)");
	closefd(&fd);
	OPEN(fd, open("f", O_RDONLY | O_TRUNC | O_CREAT, 0644), "f",
	     "open f O_RDONLY|O_TRUNC|O_CREAT existing");
	closefd(&fd);
	if (truncate("f", 0)) /* whatever that did, the calls below start from an empty f */
		note("truncate f 0 failed: %s", ename(errno));
	OPEN(fd, open("g", O_WRONLY | O_CREAT | O_TRUNC, 0751), "g",
	     "open g O_CREAT 0751 (umask 022)");
	closefd(&fd);

	section("O_DIRECT");
	{
		void *a, *b;

		if (posix_memalign(&a, 4096, 8192) || posix_memalign(&b, 4096, 8192))
			abort();
		memset(a, 'D', 8192);
		memset(b, 0, 8192);
		OPEN(fd, open("direct", O_RDWR | O_CREAT | O_DIRECT, 0644), "direct",
		     "open direct O_RDWR|O_CREAT|O_DIRECT");
		if (fd >= 0) {
			T(pwrite(fd, a, 8192, 4096), "direct", NULL, "pwrite direct 8192 at 4096");
			T(pread(fd, b, 8192, 4096), NULL, NULL, "pread direct 8192 at 4096");
			note("direct read matches written: %s", memcmp(a, b, 8192) ? "no" : "yes");
			T(pread(fd, b, 4096, 0), NULL, NULL, "pread direct 4096 at 0");
			note("direct hole reads zeros: %s",
			     memcmp(b, (char[4096]){0}, 4096) ? "no" : "yes");
			closefd(&fd);
		}
		file_show("direct");
		free(a);
		free(b);
	}

	section("opening the wrong things");
	OPEN(fd, open(".", O_WRONLY), NULL, "open . O_WRONLY (EISDIR)");
	OPEN(fd, open("nope", O_RDONLY), NULL, "open nope (ENOENT)");
	OPEN(fd, open("f/x", O_RDONLY), NULL, "open f/x (ENOTDIR)");
	OPEN(fd, open("f/x", O_CREAT | O_WRONLY, 0644), NULL, "open f/x O_CREAT (ENOTDIR)");
	OPEN(fd, open("nodir/x", O_CREAT | O_WRONLY, 0644), NULL, "open nodir/x O_CREAT (ENOENT)");
	OPEN(fd, open("f", O_RDONLY | O_DIRECTORY), NULL, "open f O_DIRECTORY (ENOTDIR)");
	OPEN(fd, open("newdir", O_CREAT | O_EXCL | O_DIRECTORY | O_RDWR, 0755), NULL,
	     "open newdir O_CREAT|O_DIRECTORY (EINVAL)");
	if (fd >= 0)
		closefd(&fd);

	section("unlink while open");
	write_file("open-unlinked", "still here");
	OPEN(fd, open("open-unlinked", O_RDWR), NULL, "open open-unlinked");
	T(unlink("open-unlinked"), "open-unlinked", NULL, "unlink open-unlinked");
	printf("fstat open-unlinked");
	fmeta(fd);
	putchar('\n');
	read_show(fd, 100, 0, "open-unlinked after unlink");
	T(pwrite(fd, "!", 1, 10), NULL, NULL, "pwrite open-unlinked after unlink");
	read_show(fd, 100, 0, "open-unlinked after unlink");
	closefd(&fd);
}

static void attrs(void)
{
	struct tsnap s;
	int fd;

	section("stat, chmod, chown");
	T(stat("f", &(struct stat){0}), "f", NULL, "stat f");
	T(stat("nope", &(struct stat){0}), NULL, NULL, "stat nope (ENOENT)");
	T(stat("f/x", &(struct stat){0}), NULL, NULL, "stat f/x (ENOTDIR)");
	T(stat("", &(struct stat){0}), NULL, NULL, "stat '' (ENOENT)");
	before("f", &s);
	T(chmod("f", 0600), "f", NULL, "chmod f 0600");
	after("f", &s);
	T(chmod("f", 04755), "f", NULL, "chmod f 04755");
	T(chmod("f", 02755), "f", NULL, "chmod f 02755");
	T(chmod("f", 01777), "f", NULL, "chmod f 01777");
	before("f", &s);
	T(chown("f", 1000, 1000), "f", NULL, "chown f 1000 1000");
	after("f", &s);
	T(chmod("f", 06755), "f", NULL, "chmod f 06755");
	T(chown("f", (uid_t)-1, (gid_t)-1), "f", NULL, "chown f -1 -1");
	T(chown("f", 0, (gid_t)-1), "f", NULL, "chown f 0 -1 (clears set-id bits)");
	T(chown("f", (uid_t)-1, 0), "f", NULL, "chown f -1 0");
	T(chown("nope", 0, 0), NULL, NULL, "chown nope (ENOENT)");
	T(chmod("nope", 0644), NULL, NULL, "chmod nope (ENOENT)");
	T(chmod("f", 0644), "f", NULL, "chmod f 0644");
	OPEN(fd, open("f", O_RDWR), "f", "open f O_RDWR");
	T(fchmod(fd, 0640), "f", NULL, "fchmod f 0640");
	T(fchown(fd, (uid_t)-1, 1000), "f", NULL, "fchown f -1 1000");
	closefd(&fd);

	section("permissions");
	write_file("ro", "read only");
	T(chmod("ro", 0444), "ro", NULL, "chmod ro 0444");
	OPEN(fd, open("ro", O_WRONLY), NULL, "open ro O_WRONLY (EACCES unless root)");
	if (fd >= 0)
		closefd(&fd);
	T(chmod("ro", 0), "ro", NULL, "chmod ro 0");
	OPEN(fd, open("ro", O_RDONLY), NULL, "open ro mode 0 O_RDONLY (EACCES unless root)");
	if (fd >= 0)
		closefd(&fd);
	T(access("ro", R_OK), NULL, NULL, "access ro R_OK");
	T(access("ro", F_OK), NULL, NULL, "access ro F_OK");
	T(mkdir("locked", 0755), "locked", NULL, "mkdir locked 0755");
	write_file("locked/in", "x");
	T(chmod("locked", 0555), "locked", NULL, "chmod locked 0555");
	OPEN(fd, open("locked/new", O_CREAT | O_WRONLY, 0644), NULL,
	     "create in locked dir (EACCES unless root)");
	if (fd >= 0)
		closefd(&fd);
	T(unlink("locked/in"), NULL, NULL, "unlink in locked dir (EACCES unless root)");
	T(chmod("locked", 0311), "locked", NULL, "chmod locked 0311");
	list_dir("locked");
	T(chmod("locked", 0755), "locked", NULL, "chmod locked 0755");
	T(chmod("ro", 0644), "ro", NULL, "chmod ro 0644");

	section("utimensat");
	{
		struct timespec t[2] = {{1000000000, 123456789}, {1100000000, 5}};

		T(utimensat(AT_FDCWD, "f", t, 0), "f", NULL, "utimensat f explicit");
		exact_times("f");
		t[0].tv_nsec = UTIME_OMIT;
		t[1].tv_nsec = UTIME_NOW;
		before("f", &s);
		t[0].tv_sec = 0;
		T(utimensat(AT_FDCWD, "f", t, 0), "f", NULL, "utimensat f atime OMIT mtime NOW");
		after("f", &s);
		t[0] = (struct timespec){1200000000, 7};
		t[1].tv_nsec = UTIME_OMIT;
		T(utimensat(AT_FDCWD, "f", t, 0), "f", NULL,
		  "utimensat f atime explicit mtime OMIT");
		{
			struct stat st;

			lstat("f", &st);
			note("atime now %lld.%09ld, mtime still NOW-ish: %s",
			     (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
			     st.st_mtim.tv_sec > 1500000000 ? "yes" : "no");
		}
		t[0].tv_nsec = UTIME_OMIT;
		t[1].tv_nsec = UTIME_OMIT;
		before("f", &s);
		T(utimensat(AT_FDCWD, "f", t, 0), "f", NULL, "utimensat f both OMIT");
		after("f", &s);
		T(utimensat(AT_FDCWD, "f", NULL, 0), "f", NULL, "utimensat f NULL (both now)");
		T(utimensat(AT_FDCWD, "nope", NULL, 0), NULL, NULL, "utimensat nope (ENOENT)");
		t[0] = (struct timespec){1000000000, 1000000000};
		T(utimensat(AT_FDCWD, "f", t, 0), NULL, NULL, "utimensat f nsec 1e9 (EINVAL)");
	}
}

static void dirs(void)
{
	struct tsnap s;

	section("mkdir, rmdir, unlink");
	before(".", &s);
	T(mkdir("d", 0777), "d", ".", "mkdir d 0777 (umask 022)");
	after(".", &s);
	T(mkdir("d", 0755), NULL, NULL, "mkdir d again (EEXIST)");
	T(mkdir("f", 0755), NULL, NULL, "mkdir f over a file (EEXIST)");
	T(mkdir("d/sub", 0700), "d/sub", "d", "mkdir d/sub 0700");
	T(mkdir("nope/x", 0755), NULL, NULL, "mkdir nope/x (ENOENT)");
	T(mkdir("f/x", 0755), NULL, NULL, "mkdir f/x (ENOTDIR)");
	T(rmdir("d"), "d", NULL, "rmdir d (ENOTEMPTY)");
	T(rmdir("f"), NULL, NULL, "rmdir f (ENOTDIR)");
	T(rmdir("nope"), NULL, NULL, "rmdir nope (ENOENT)");
	T(rmdir("d/sub/."), NULL, NULL, "rmdir d/sub/. (EINVAL)");
	T(unlink("d"), "d", NULL, "unlink d (EISDIR)");
	T(unlink("nope"), NULL, NULL, "unlink nope (ENOENT)");
	T(unlink("f/x"), NULL, NULL, "unlink f/x (ENOTDIR)");
	T(mkdir("d/sub2", 02755), "d/sub2", "d", "mkdir d/sub2 02755");
	T(chmod("d", 02775), "d", NULL, "chmod d 02775 (setgid dir)");
	T(mkdir("d/sgid-child", 0755), "d/sgid-child", NULL,
	  "mkdir d/sgid-child (inherits setgid and gid)");
	T(write_file("d/sgid-file", "x"), "d/sgid-file", NULL, "create d/sgid-file in setgid dir");
	T(unlink("d/sgid-file"), NULL, NULL, "unlink d/sgid-file");
	T(rmdir("d/sgid-child"), NULL, NULL, "rmdir d/sgid-child");
	T(chmod("d", 0755), "d", NULL, "chmod d 0755");
	T(rmdir("d/sub2"), NULL, "d", "rmdir d/sub2");
	before("d", &s);
	T(rmdir("d/sub"), "d/sub", "d", "rmdir d/sub");
	after("d", &s);
	T(rmdir("d"), "d", ".", "rmdir d");
	T(rmdir("."), NULL, NULL, "rmdir . (EINVAL)");

	section("readdir");
	T(mkdir("list", 0755), "list", NULL, "mkdir list");
	for (int i = 0; i < 40; i++) {
		char n[32];

		snprintf(n, sizeof(n), "list/entry-%02d", i);
		if (i % 3 == 0)
			mkdir(n, 0755);
		else
			write_file(n, n);
	}
	symlink("entry-00", "list/zz-link");
	list_dir("list");
	meta("list");
	putchar('\n');
	unlink("list/entry-05");
	rmdir("list/entry-06");
	rename("list/entry-07", "list/moved");
	list_dir("list");
	T(opendir("f") ? 0 : -1, NULL, NULL, "opendir f (ENOTDIR)");
	T(opendir("nope") ? 0 : -1, NULL, NULL, "opendir nope (ENOENT)");
}

static int renameat2_(const char *a, const char *b, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static void renames(void)
{
	struct tsnap s;

	section("rename");
	T(mkdir("r", 0755), NULL, NULL, "mkdir r");
	write_file("r/a", "content of a");
	write_file("r/b", "content of b, longer");
	before("r", &s);
	T(rename("r/a", "r/b"), "r/a", "r/b", "rename r/a r/b (replaces a file)");
	after("r", &s);
	file_show("r/b");
	T(rename("r/b", "r/b"), "r/b", NULL, "rename r/b r/b (same: no-op)");
	T(rename("r/nope", "r/x"), NULL, NULL, "rename r/nope (ENOENT)");
	T(rename("r/b", "r/nodir/x"), NULL, NULL, "rename into missing dir (ENOENT)");
	T(rename("r/b", "r/b/x"), NULL, NULL, "rename r/b r/b/x (ENOTDIR)");
	T(mkdir("r/d1", 0755), NULL, NULL, "mkdir r/d1");
	T(mkdir("r/d2", 0700), NULL, NULL, "mkdir r/d2");
	write_file("r/d1/inside", "in d1");
	T(rename("r/d1", "r/d2"), "r/d1", "r/d2", "rename r/d1 r/d2 (replaces an empty dir)");
	list_dir("r/d2");
	T(mkdir("r/d3", 0755), NULL, NULL, "mkdir r/d3");
	T(rename("r/d3", "r/d2"), "r/d3", "r/d2", "rename r/d3 r/d2 (ENOTEMPTY)");
	T(rename("r/b", "r/d3"), "r/b", "r/d3", "rename file over dir (EISDIR)");
	T(rename("r/d3", "r/b"), "r/d3", "r/b", "rename dir over file (ENOTDIR)");
	T(rename("r/d2", "r/d2/inner"), NULL, NULL, "rename r/d2 r/d2/inner (EINVAL)");
	T(mkdir("r/d2/deep", 0755), NULL, NULL, "mkdir r/d2/deep");
	T(rename("r/d2", "r/d2/deep/x"), NULL, NULL, "rename r/d2 into its own subtree (EINVAL)");
	T(rename("r/d2/deep", "r/deep"), "r/deep", "r/d2", "rename r/d2/deep r/deep (nlinks move)");
	T(rename("r/d3", "r/d2/d3"), "r/d2/d3", "r", "rename r/d3 r/d2/d3 (dir to other parent)");
	T(rename(".", "r/x"), NULL, NULL, "rename . (EBUSY or EINVAL)");
	write_file("r/c", "c");
	T(renameat2_("r/c", "r/b", RENAME_NOREPLACE), "r/c", "r/b",
	  "renameat2 r/c r/b NOREPLACE (EEXIST)");
	T(renameat2_("r/c", "r/c2", RENAME_NOREPLACE), "r/c", "r/c2",
	  "renameat2 r/c r/c2 NOREPLACE (new name)");
	T(renameat2_("r/c2", "r/d2", RENAME_EXCHANGE), "r/c2", "r/d2",
	  "renameat2 r/c2 r/d2 EXCHANGE (file <-> dir)");
	list_dir("r/c2");
	file_show("r/d2");
	T(renameat2_("r/c2", "r/d2", RENAME_EXCHANGE), "r/c2", "r/d2", "renameat2 EXCHANGE back");
	T(renameat2_("r/b", "r/nope", RENAME_EXCHANGE), "r/b", NULL,
	  "renameat2 EXCHANGE with missing (ENOENT)");
	T(renameat2_("r/b", "r/c2", RENAME_EXCHANGE | RENAME_NOREPLACE), NULL, NULL,
	  "renameat2 EXCHANGE|NOREPLACE (EINVAL)");
	write_file("r/e1", "e1");
	write_file("r/d2/e2", "e2 in d2");
	T(renameat2_("r/e1", "r/d2/e2", RENAME_EXCHANGE), "r/e1", "r/d2/e2",
	  "renameat2 EXCHANGE across dirs");
	file_show("r/e1");
	file_show("r/d2/e2");
	symlink("b", "r/lnk");
	T(rename("r/lnk", "r/lnk2"), "r/lnk2", NULL, "rename a symlink");
	T(readlink("r/lnk2", (char[64]){0}, 64), NULL, NULL, "readlink r/lnk2");
	list_dir("r");
}

static void links(void)
{
	char buf[64];
	struct tsnap s;

	section("link");
	write_file("h", "linked");
	before("h", &s);
	T(link("h", "h2"), "h", "h2", "link h h2");
	after("h", &s);
	T(link("h", "h2"), NULL, NULL, "link h h2 again (EEXIST)");
	T(link("h", "h3"), "h", NULL, "link h h3");
	T(link(".", "dirlink"), NULL, NULL, "link . dirlink (EPERM)");
	T(link("nope", "x"), NULL, NULL, "link nope (ENOENT)");
	T(link("h", "nodir/x"), NULL, NULL, "link into missing dir (ENOENT)");
	T(chmod("h2", 0600), "h", "h3", "chmod h2 0600 (shows on every name)");
	T(unlink("h"), "h2", NULL, "unlink h");
	file_show("h3");
	T(rename("h2", "h3"), "h2", "h3", "rename h2 h3 (same inode: no-op)");
	T(unlink("h2"), "h3", NULL, "unlink h2");

	section("symlink, readlink");
	T(symlink("target-missing", "s"), "s", NULL, "symlink target-missing s");
	T(readlink("s", buf, sizeof(buf)), NULL, NULL, "readlink s");
	show("readlink s", (unsigned char *)buf, 14);
	T(readlink("s", buf, 3), NULL, NULL, "readlink s into 3 bytes (truncates)");
	T(stat("s", &(struct stat){0}), NULL, NULL, "stat dangling s (ENOENT)");
	T(symlink("h3", "s2"), "s2", NULL, "symlink h3 s2");
	T(stat("s2", &(struct stat){0}), NULL, NULL, "stat s2 follows");
	file_show("s2");
	T(symlink("x", "s2"), NULL, NULL, "symlink over existing (EEXIST)");
	T(readlink("h3", buf, sizeof(buf)), NULL, NULL, "readlink of a file (EINVAL)");
	T(readlink("nope", buf, sizeof(buf)), NULL, NULL, "readlink nope (ENOENT)");
	T(symlink("", "s3"), NULL, NULL, "symlink with empty target (ENOENT)");
	{
		char longt[1100];

		memset(longt, 'a', sizeof(longt) - 1);
		longt[sizeof(longt) - 1] = 0;
		for (int i = 200; i < 1090; i += 200)
			longt[i] = '/';
		T(symlink(longt, "slong"), "slong", NULL, "symlink with a 1099-byte target");
		T(readlink("slong", longt, sizeof(longt)), NULL, NULL, "readlink slong");
	}
	T(symlink("d-real", "sdir"), NULL, NULL, "symlink d-real sdir");
	T(mkdir("d-real", 0755), NULL, NULL, "mkdir d-real");
	T(write_file("sdir/through", "via link"), "d-real/through", NULL,
	  "create through a dir symlink");
	T(rmdir("sdir"), NULL, NULL, "rmdir a symlink to a dir (ENOTDIR)");
	T(unlink("sdir"), "sdir", "d-real", "unlink the symlink");
	T(lchown("s", (uid_t)-1, (gid_t)-1), "s", NULL, "lchown s -1 -1");
	T(open("s", O_RDONLY | O_NOFOLLOW), NULL, NULL, "open s O_NOFOLLOW (ELOOP)");
	T(symlink("loop2", "loop1"), NULL, NULL, "symlink loop2 loop1");
	T(symlink("loop1", "loop2"), NULL, NULL, "symlink loop1 loop2");
	T(stat("loop1", &(struct stat){0}), NULL, NULL, "stat loop1 (ELOOP)");
}

static void names(void)
{
	char n[300];

	section("name lengths");
	memset(n, 'n', 255);
	n[255] = 0;
	T(write_file(n, "255"), NULL, NULL, "create a 255-byte name");
	T(stat(n, &(struct stat){0}), NULL, NULL, "stat the 255-byte name");
	T(mkdir("n255", 0755), NULL, NULL, "mkdir n255");
	T(rename(n, "n255/x"), NULL, NULL, "rename the 255-byte name away");
	T(rename("n255/x", n), NULL, NULL, "and back");
	T(unlink(n), NULL, NULL, "unlink the 255-byte name");
	n[255] = 'n';
	n[256] = 0;
	T(open(n, O_CREAT | O_WRONLY, 0644), NULL, NULL, "create a 256-byte name (ENAMETOOLONG)");
	T(mkdir(n, 0755), NULL, NULL, "mkdir a 256-byte name (ENAMETOOLONG)");
	T(stat(n, &(struct stat){0}), NULL, NULL, "stat a 256-byte name (ENAMETOOLONG)");
	T(symlink("x", n), NULL, NULL, "symlink a 256-byte name (ENAMETOOLONG)");
	T(rename("n255", n), NULL, NULL, "rename to a 256-byte name (ENAMETOOLONG)");
	T(rmdir("n255"), NULL, NULL, "rmdir n255");
	T(write_file("sp ace\tand\nnewline", "odd"), "sp ace\tand\nnewline", NULL,
	  "create a name with space, tab, newline");
	T(write_file("utf8-\xc3\xa9\xe2\x82\xac", "utf8"), NULL, NULL, "create a UTF-8 name");
	T(write_file("bad-\xff\xfe", "latin"), NULL, NULL, "create a non-UTF-8 name");
	list_dir(".");
}

static void xattrs(void)
{
	char buf[64];
	struct tsnap s;

	section("xattrs");
	write_file("x", "xattr holder");
	T(getxattr("x", "user.none", buf, sizeof(buf)), NULL, NULL, "getxattr user.none (ENODATA)");
	before("x", &s);
	T(setxattr("x", "user.a", "v1", 2, 0), NULL, NULL, "setxattr user.a v1");
	after("x", &s);
	T(getxattr("x", "user.a", NULL, 0), NULL, NULL, "getxattr user.a size query");
	T(getxattr("x", "user.a", buf, 1), NULL, NULL, "getxattr user.a into 1 byte (ERANGE)");
	T(getxattr("x", "user.a", buf, sizeof(buf)), NULL, NULL, "getxattr user.a");
	show("user.a", (unsigned char *)buf, 2);
	T(setxattr("x", "user.a", "v2", 2, XATTR_CREATE), NULL, NULL,
	  "setxattr user.a XATTR_CREATE (EEXIST)");
	T(setxattr("x", "user.b", "v2", 2, XATTR_REPLACE), NULL, NULL,
	  "setxattr user.b XATTR_REPLACE (ENODATA)");
	T(setxattr("x", "user.a", "longer value", 12, XATTR_REPLACE), NULL, NULL,
	  "setxattr user.a XATTR_REPLACE");
	T(setxattr("x", "user.b", "", 0, XATTR_CREATE), NULL, NULL, "setxattr user.b empty value");
	T(getxattr("x", "user.b", buf, sizeof(buf)), NULL, NULL, "getxattr user.b (empty)");
	{
		unsigned char v[4000];

		for (int i = 0; i < 4000; i++)
			v[i] = (unsigned char)(i * 7);
		T(setxattr("x", "user.big", v, sizeof(v), 0), NULL, NULL,
		  "setxattr user.big 4000 B");
		memset(v, 0, sizeof(v));
		T(getxattr("x", "user.big", v, sizeof(v)), NULL, NULL, "getxattr user.big");
		note("user.big intact: %s",
		     v[3999] == (unsigned char)(3999 * 7) && v[1] == 7 ? "yes" : "no");
	}
	T(listxattr("x", NULL, 0), NULL, NULL, "listxattr size query");
	T(listxattr("x", buf, 1), NULL, NULL, "listxattr into 1 byte (ERANGE)");
	{
		char list[256], *names_[16];
		long n = listxattr("x", list, sizeof(list));
		int k = 0;

		for (long i = 0; i < n && k < 16; i += (long)strlen(list + i) + 1)
			names_[k++] = list + i;
		qsort(names_, k, sizeof(names_[0]), cmpstr);
		printf("listxattr x:");
		for (int i = 0; i < k; i++)
			printf(" %s", names_[i]);
		putchar('\n');
	}
	T(removexattr("x", "user.a"), NULL, NULL, "removexattr user.a");
	T(removexattr("x", "user.a"), NULL, NULL, "removexattr user.a again (ENODATA)");
	T(getxattr("nope", "user.a", buf, sizeof(buf)), NULL, NULL, "getxattr nope (ENOENT)");
	T(setxattr("x", "bogus.a", "v", 1, 0), NULL, NULL, "setxattr bogus.a (EOPNOTSUPP)");
	T(setxattr("x", "user.", "v", 1, 0), NULL, NULL, "setxattr 'user.' (EINVAL)");
	T(mkdir("xd", 0755), NULL, NULL, "mkdir xd");
	T(setxattr("xd", "user.d", "dir", 3, 0), NULL, NULL, "setxattr on a dir");
	T(getxattr("xd", "user.d", buf, sizeof(buf)), NULL, NULL, "getxattr on a dir");
	T(chmod("x", 0444), NULL, NULL, "chmod x 0444");
	T(setxattr("x", "user.c", "v", 1, 0), NULL, NULL,
	  "setxattr on a 0444 file (EACCES unless root)");
	T(chmod("x", 0644), NULL, NULL, "chmod x 0644");
	T(unlink("x"), NULL, NULL, "unlink x");
}

static void statfs_(void)
{
	struct statfs sf;

	section("statfs");
	if (T(statfs(".", &sf), NULL, NULL, "statfs .") == 0)
		note("statfs: bsize>0 %s, blocks>=bfree %s, bfree>=bavail %s, files>=ffree %s, "
		     "namelen %ld",
		     sf.f_bsize > 0 ? "yes" : "no", sf.f_blocks >= sf.f_bfree ? "yes" : "no",
		     sf.f_bfree >= sf.f_bavail ? "yes" : "no",
		     sf.f_files >= sf.f_ffree ? "yes" : "no", (long)sf.f_namelen);
	T(statfs("nope", &sf), NULL, NULL, "statfs nope (ENOENT)");
}

static void mmaps(void)
{
	unsigned char data[3 * 4096 + 100];
	unsigned char *m;
	int fd;

	section("mmap");
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 13 + 5);
	fd = open("m", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (write(fd, data, sizeof(data)) != (ssize_t)sizeof(data))
		note("write m failed");
	close(fd);
	OPEN(fd, open("m", O_RDONLY), "m", "open m O_RDONLY");
	T((m = mmap(NULL, sizeof(data), PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED ? -1 : 0, NULL,
	  NULL, "mmap m PROT_READ MAP_SHARED");
	if (m != MAP_FAILED) {
		note("mmap read matches: %s; tail past EOF in the last page is zero: %s",
		     memcmp(m, data, sizeof(data)) ? "no" : "yes",
		     m[sizeof(data)] == 0 && m[4 * 4096 - 1] == 0 ? "yes" : "no");
		T(munmap(m, sizeof(data)), NULL, NULL, "munmap");
	}
	T((m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED ? -1 : 0,
	  NULL, NULL, "mmap O_RDONLY fd PROT_WRITE MAP_SHARED (EACCES)");
	if (m != MAP_FAILED)
		munmap(m, 4096);
	T((m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)) == MAP_FAILED ? -1 : 0,
	  NULL, NULL, "mmap O_RDONLY fd PROT_WRITE MAP_PRIVATE");
	if (m != MAP_FAILED) {
		m[0] = 'P';
		munmap(m, 4096);
	}
	T((m = mmap(NULL, 0, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED ? -1 : 0, NULL, NULL,
	  "mmap length 0 (EINVAL)");
	closefd(&fd);
	OPEN(fd, open("m", O_RDWR), "m", "open m O_RDWR");
	T((m = mmap(NULL, sizeof(data), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED
	      ? -1
	      : 0,
	  NULL, NULL, "mmap m PROT_READ|PROT_WRITE MAP_SHARED");
	if (m != MAP_FAILED) {
		memcpy(m + 4090, "MAPPED-WRITE", 12);
		memcpy(m + sizeof(data) - 3, "END", 3);
		memcpy(data + 4090, "MAPPED-WRITE", 12);
		memcpy(data + sizeof(data) - 3, "END", 3);
		T(msync(m, sizeof(data), MS_SYNC), NULL, NULL, "msync MS_SYNC");
		T(munmap(m, sizeof(data)), "m", NULL, "munmap");
	}
	closefd(&fd);
	{
		unsigned char back[sizeof(data)];

		fd = open("m", O_RDONLY);
		note("read after MAP_SHARED write matches: %s",
		     read(fd, back, sizeof(back)) == (ssize_t)sizeof(back) &&
			     !memcmp(back, data, sizeof(data))
			 ? "yes"
			 : "no");
		close(fd);
	}
	OPEN(fd, open("m", O_RDWR), "m", "open m O_RDWR");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED) {
		m[1] = '#';
		T(ftruncate(fd, 10), "m", NULL, "ftruncate m 10 while mapped");
		note("mapped byte still there: %s", m[1] == '#' ? "yes" : "no");
		munmap(m, 4096);
	}
	closefd(&fd);
	file_show("m");
	fd = open(".", O_RDONLY | O_DIRECTORY);
	T((m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED ? -1 : 0, NULL, NULL,
	  "mmap a directory (ENODEV)");
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: posix_diff DIR\n");
		return 2;
	}
	if (chdir(argv[1])) {
		perror(argv[1]);
		return 2;
	}
	umask(022);
	note("running as %s", getuid() == 0 ? "root" : "an unprivileged user");
	files();
	attrs();
	dirs();
	renames();
	links();
	names();
	xattrs();
	statfs_();
	mmaps();
	section("final tree");
	list_dir(".");
	return 0;
}
