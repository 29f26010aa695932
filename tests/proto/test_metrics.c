/* SPDX-License-Identifier: MIT */
/*
 * proto/daemon/metrics: the Prometheus text the registry renders (label escaping, cumulative
 * histogram buckets whose +Inf equals _count, collectors in order) and the HTTP endpoint
 * (addresses it refuses, the port it reports and writes, /metrics served, anything else 404,
 * a method other than GET or HEAD 405), over real loopback sockets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics.h"

static void test_labels_escape_backslash_quote_and_newline(void **state)
{
	const char *kv[4] = {"a", "x\\y\"z\nw", "b", "plain"};
	char out[128];

	(void)state;
	lode_metrics_labels(out, sizeof(out), 2, kv);
	assert_string_equal(out, "a=\"x\\\\y\\\"z\\nw\",b=\"plain\"");
}

static void test_labels_cut_a_long_value_but_close_its_quote(void **state)
{
	const char *kv[4] = {"k", "0123456789abcdef", "second", "gone"};
	char out[12];

	(void)state;
	lode_metrics_labels(out, sizeof(out), 2, kv);
	assert_string_equal(out, "k=\"0123456\"");
	/* no room for a pair at all: nothing, never half a pair */
	lode_metrics_labels(out, 4, 1, kv);
	assert_string_equal(out, "");
}

static void collect_hist(void *arg, struct lode_metrics_buf *b)
{
	static const double bounds[3] = {0.5, 1, 2.5};
	static const uint64_t counts[4] = {1, 0, 3, 2};

	(void)arg;
	lode_metrics_family(b, "t_seconds", "histogram", "a test histogram");
	lode_metrics_histogram(b, "t_seconds", "op=\"x\"", bounds, 3, counts, 7.25);
	lode_metrics_histogram(b, "t_seconds", NULL, bounds, 3, counts, 1);
}

static void collect_plain(void *arg, struct lode_metrics_buf *b)
{
	(void)arg;
	lode_metrics_family(b, "t_total", "counter", "a test counter");
	lode_metrics_sample_u64(b, "t_total", NULL, 18446744073709551615ull);
	lode_metrics_sample(b, "t_total", "k=\"v\"", 0.125);
}

static void test_histogram_buckets_are_cumulative_and_inf_equals_count(void **state)
{
	struct lode_metrics *m;
	size_t len;
	char *text;

	(void)state;
	assert_int_equal(lode_metrics_create(&m), 0);
	assert_int_equal(lode_metrics_add(m, collect_hist, NULL), 0);
	assert_int_equal(lode_metrics_add(m, collect_plain, NULL), 0);
	text = lode_metrics_render(m, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_string_equal(text, "# HELP t_seconds a test histogram\n"
				  "# TYPE t_seconds histogram\n"
				  "t_seconds_bucket{op=\"x\",le=\"0.5\"} 1\n"
				  "t_seconds_bucket{op=\"x\",le=\"1\"} 1\n"
				  "t_seconds_bucket{op=\"x\",le=\"2.5\"} 4\n"
				  "t_seconds_bucket{op=\"x\",le=\"+Inf\"} 6\n"
				  "t_seconds_sum{op=\"x\"} 7.25\n"
				  "t_seconds_count{op=\"x\"} 6\n"
				  "t_seconds_bucket{le=\"0.5\"} 1\n"
				  "t_seconds_bucket{le=\"1\"} 1\n"
				  "t_seconds_bucket{le=\"2.5\"} 4\n"
				  "t_seconds_bucket{le=\"+Inf\"} 6\n"
				  "t_seconds_sum 1\n"
				  "t_seconds_count 6\n"
				  "# HELP t_total a test counter\n"
				  "# TYPE t_total counter\n"
				  "t_total 18446744073709551615\n"
				  "t_total{k=\"v\"} 0.125\n");
	free(text);
	lode_metrics_destroy(m);
}

static void collect_big(void *arg, struct lode_metrics_buf *b)
{
	char name[64];

	(void)arg;
	for (unsigned i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "t_many_%u", i);
		lode_metrics_sample_u64(b, name, NULL, i);
	}
}

static void test_render_grows_past_its_first_buffer(void **state)
{
	struct lode_metrics *m;
	size_t len;
	char *text;

	(void)state;
	assert_int_equal(lode_metrics_create(&m), 0);
	assert_int_equal(lode_metrics_add(m, collect_big, NULL), 0);
	text = lode_metrics_render(m, &len);
	assert_non_null(text);
	assert_true(len > 16384);
	assert_non_null(strstr(text, "t_many_0 0\n"));
	assert_non_null(strstr(text, "\nt_many_4999 4999\n"));
	free(text);
	lode_metrics_destroy(m);
}

static void test_registry_holds_at_most_sixteen_collectors(void **state)
{
	struct lode_metrics *m;

	(void)state;
	assert_int_equal(lode_metrics_create(&m), 0);
	for (unsigned i = 0; i < 16; i++)
		assert_int_equal(lode_metrics_add(m, collect_plain, NULL), 0);
	assert_int_equal(lode_metrics_add(m, collect_plain, NULL), -ENOSPC);
	assert_int_equal(lode_metrics_add(m, NULL, NULL), -EINVAL);
	lode_metrics_destroy(m);
	lode_metrics_destroy(NULL);
}

static void test_http_open_refuses_malformed_addresses(void **state)
{
	static const char *const bad[] = {
	    "nonsense", "127.0.0.1", "127.0.0.1:",	":9100",	"::1:9100",
	    "[::1]",	"[::1]9100", "127.0.0.1:65536", "127.0.0.1:9x", "127.0.0.1:-1"};
	struct lode_metrics_http *h = NULL;
	char bound[64], why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(lode_metrics_http_open(&h, bad[i], NULL, bound, sizeof(bound), why,
							sizeof(why)),
				 -EINVAL);
		assert_null(h);
		assert_non_null(strstr(why, "HOST:PORT"));
	}
}

/* One HTTP/1.0 request on a fresh connection; returns the whole response (malloc'd). */
static char *http(const char *bound, const char *request)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	const char *colon = strrchr(bound, ':');
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	assert_non_null(buf);
	assert_true(fd >= 0);
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	while ((n = read(fd, buf + len, cap - len - 1)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	return buf;
}

static void test_http_serves_metrics_only_where_told(void **state)
{
	struct lode_metrics_http *h = NULL;
	struct lode_metrics *m;
	char bound[64], why[256], file[64], line[64];
	char *r;
	FILE *f;

	(void)state;
	snprintf(file, sizeof(file), "/tmp/lode-test-metrics.%d", (int)getpid());
	assert_int_equal(lode_metrics_create(&m), 0);
	assert_int_equal(lode_metrics_add(m, collect_plain, NULL), 0);
	assert_int_equal(
	    lode_metrics_http_open(&h, "127.0.0.1:0", file, bound, sizeof(bound), why, sizeof(why)),
	    0);
	assert_int_equal(strncmp(bound, "127.0.0.1:", 10), 0);
	assert_true(atoi(bound + 10) > 0);
	f = fopen(file, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	unlink(file);
	line[strcspn(line, "\n")] = '\0';
	assert_string_equal(line, bound);
	assert_int_equal(lode_metrics_http_start(h, m), 0);

	r = http(bound, "GET /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(r, "HTTP/1.0 200") ? r : strstr(r, "HTTP/1.1 200"));
	assert_non_null(strstr(r, "text/plain; version=0.0.4"));
	assert_non_null(strstr(r, "\r\n\r\n# HELP t_total a test counter\n"));
	free(r);
	r = http(bound, "GET /other HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(r, " 404 "));
	assert_null(strstr(r, "t_total"));
	free(r);
	r = http(bound, "DELETE /metrics HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(r, " 405 "));
	free(r);

	/* the same address again: busy, with a reason */
	{
		struct lode_metrics_http *h2 = NULL;
		char b2[64];

		assert_int_equal(
		    lode_metrics_http_open(&h2, bound, NULL, b2, sizeof(b2), why, sizeof(why)),
		    -EADDRINUSE);
		assert_null(h2);
		assert_non_null(strstr(why, "cannot listen"));
	}
	lode_metrics_http_close(h);
	lode_metrics_http_close(NULL);
	lode_metrics_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_labels_escape_backslash_quote_and_newline),
	    cmocka_unit_test(test_labels_cut_a_long_value_but_close_its_quote),
	    cmocka_unit_test(test_histogram_buckets_are_cumulative_and_inf_equals_count),
	    cmocka_unit_test(test_render_grows_past_its_first_buffer),
	    cmocka_unit_test(test_registry_holds_at_most_sixteen_collectors),
	    cmocka_unit_test(test_http_open_refuses_malformed_addresses),
	    cmocka_unit_test(test_http_serves_metrics_only_where_told),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
