/* SPDX-License-Identifier: MIT */
/*
 * Progress of put, get and repair on stderr. On a terminal: one bar redrawn in place
 * (bytes done and total, rate, ETA), at most 10 times a second. Elsewhere (a log, a CI
 * job): a plain line every LODECTL_PROGRESS_INTERVAL seconds (default 5), so a short
 * transfer prints none and a long one a few, never a line per block. The command's own
 * summary line at the end says what was done.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lodectl.h"

struct lodectl_progress {
	pthread_mutex_t lock;
	const char *verb;
	const char *unit; /* NULL: bytes; else counted items ("inodes") */
	bool tty;
	double interval; /* between plain lines */
	double t0;
	/* protected by lock */
	uint64_t total, done;
	double last_shown;
	bool drawn; /* a bar is on the screen */
};

static void eta_string(double secs, char *buf, size_t size)
{
	unsigned long s = (unsigned long)(secs + 0.5);

	if (secs < 0 || secs > 360000)
		snprintf(buf, size, "--:--");
	else if (s >= 3600)
		snprintf(buf, size, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, size, "%lu:%02lu", s / 60, s % 60);
}

static int term_width(void)
{
	struct winsize ws;

	if (!ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
		return ws.ws_col;
	return 80;
}

/* Called with p->lock held. */
static void show(struct lodectl_progress *p, double now)
{
	char done[32], total[32], rate[32], eta[32], bar[128];
	double secs = now - p->t0, bps = secs > 0 ? (double)p->done / secs : 0;
	int pct = p->total ? (int)((double)p->done * 100 / (double)p->total) : 0;

	if (pct > 100)
		pct = 100;
	if (p->unit) {
		snprintf(done, sizeof(done), "%llu %s", (unsigned long long)p->done, p->unit);
		snprintf(total, sizeof(total), "%llu", (unsigned long long)p->total);
		snprintf(rate, sizeof(rate), "%.0f", bps);
	} else {
		lodectl_bytes_string(p->done, done, sizeof(done));
		lodectl_bytes_string(p->total, total, sizeof(total));
		lodectl_bytes_string((uint64_t)bps, rate, sizeof(rate));
	}
	eta_string(bps > 0 && p->total >= p->done ? (double)(p->total - p->done) / bps : -1, eta,
		   sizeof(eta));
	if (!p->tty) {
		if (p->total)
			fprintf(stderr, "%s: %s of %s (%d%%), %s/s, ETA %s\n", p->verb, done, total,
				pct, rate, eta);
		else
			fprintf(stderr, "%s: %s, %s/s\n", p->verb, done, rate);
		return;
	}
	if (p->total) {
		int width = term_width() - 60, fill;

		if (width > (int)sizeof(bar) - 1)
			width = (int)sizeof(bar) - 1;
		if (width < 10)
			width = 10;
		fill = width * pct / 100;
		memset(bar, '#', (size_t)fill);
		memset(bar + fill, '.', (size_t)(width - fill));
		bar[width] = 0;
		fprintf(stderr, "\r\033[K%s [%s] %3d%% %s / %s  %s/s  ETA %s", p->verb, bar, pct,
			done, total, rate, eta);
	} else {
		fprintf(stderr, "\r\033[K%s %s  %s/s", p->verb, done, rate);
	}
	p->drawn = true;
}

struct lodectl_progress *lodectl_progress_start(struct lodectl *ctl, const char *verb,
						uint64_t total)
{
	struct lodectl_progress *p;
	const char *env = getenv("LODECTL_PROGRESS_INTERVAL");

	if (ctl->quiet || ctl->json)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL; /* progress is a courtesy: the transfer goes on without it */
	pthread_mutex_init(&p->lock, NULL);
	p->verb = verb;
	p->tty = isatty(STDERR_FILENO);
	p->interval = env ? strtod(env, NULL) : 5.0;
	if (p->interval <= 0)
		p->interval = 5.0;
	p->total = total;
	p->t0 = p->last_shown = lodectl_now();
	return p;
}

struct lodectl_progress *lodectl_progress_start_count(struct lodectl *ctl, const char *verb,
						      const char *unit, uint64_t total)
{
	struct lodectl_progress *p = lodectl_progress_start(ctl, verb, total);

	if (p)
		p->unit = unit;
	return p;
}

void lodectl_progress_add(struct lodectl_progress *p, uint64_t bytes)
{
	double now;

	if (!p)
		return;
	now = lodectl_now();
	pthread_mutex_lock(&p->lock);
	p->done += bytes;
	if (p->done > p->total && p->total)
		p->total = p->done;
	if (now - p->last_shown >= (p->tty ? 0.1 : p->interval)) {
		show(p, now);
		p->last_shown = now;
	}
	pthread_mutex_unlock(&p->lock);
}

void lodectl_progress_total(struct lodectl_progress *p, uint64_t total)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	if (total > p->total)
		p->total = total;
	pthread_mutex_unlock(&p->lock);
}

void lodectl_progress_end(struct lodectl_progress *p)
{
	if (!p)
		return;
	if (p->tty) {
		/* the bar as it ended, left on the screen above the summary line */
		show(p, lodectl_now());
		fputc('\n', stderr);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}
