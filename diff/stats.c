/*
 * The statistics of `nftrace diff` over sorted samples: the sort itself (a
 * radix sort: ten million samples in a fraction of qsort's time), ClickHouse's
 * percentile, the distribution-free interval of a percentile, the
 * Mann-Whitney U test; and the names of metrics and scopes, and the string map
 * that pools scopes by name.
 */
#include "diff_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "contract/capbuf.h"
#include "contract/util_hash.h"

const char *const dd_metric_names[DM_N] = {
	[DM_STALL] = "stall",       [DM_LATENCY] = "latency", [DM_Q2E] = "queued_to_end",
	[DM_CPU_WAIT] = "cpu_wait", [DM_JOB] = "job",         [DM_FRAME] = "frame",
	[DM_BUSY] = "busy",         [DM_LOST] = "lost",       [DM_ANOMALIES] = "anomalies",
	[DM_FINDINGS] = "findings",
};

const char *const dd_scope_names[DS_N] = {
	[DS_ALL] = "all",   [DS_QUEUE] = "queue",     [DS_THREAD] = "thread",
	[DS_RING] = "ring", [DS_PROCESS] = "process", [DS_KIND] = "kind",
};

static int find_name(const char *const *names, int n, const char *text, size_t len)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], text, len))
			return i;
	return -1;
}

int dd_metric_find(const char *text, size_t len)
{
	return find_name(dd_metric_names, DM_N, text, len);
}

int dd_scope_find(const char *text, size_t len)
{
	return find_name(dd_scope_names, DS_N, text, len);
}

/* ---- string map ---------------------------------------------------------------- */

/* Names come from sessions (untrusted): the hash is seeded per process, so names
 * crafted to collide cannot make every lookup walk the whole table. */
static uint64_t hash_seed(void)
{
	static _Atomic uint64_t seed;
	uint64_t v = seed;

	if (!v) {
		if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
			struct timespec t;

			clock_gettime(CLOCK_MONOTONIC, &t);
			v = nf_mix64((uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 32 ^ (uint64_t)getpid());
		}
		v |= 1;
		seed = v;
	}
	return v;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull ^ hash_seed(); /* FNV-1a, seeded, then mixed */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return nf_mix64(h);
}

int dd_names_find(const struct dd_names *m, const char *key)
{
	if (!m->n_slots)
		return -1;
	for (size_t i = str_hash(key) & (m->n_slots - 1);; i = (i + 1) & (m->n_slots - 1)) {
		int32_t k = m->slots[i];

		if (!k)
			return -1;
		if (!strcmp(m->keys[k - 1], key))
			return k - 1;
	}
}

static int names_rehash(struct dd_names *m, size_t n_slots)
{
	int32_t *s = calloc(n_slots, sizeof(*s));

	if (!s)
		return NF_ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		size_t i = str_hash(m->keys[k]) & (n_slots - 1);

		while (s[i])
			i = (i + 1) & (n_slots - 1);
		s[i] = (int32_t)(k + 1);
	}
	free(m->slots);
	m->slots = s;
	m->n_slots = n_slots;
	return 0;
}

int dd_names_get(struct dd_names *m, const char *key)
{
	int k = dd_names_find(m, key);
	char *copy;

	if (k >= 0)
		return k;
	if (m->n >= INT32_MAX - 1)
		return NF_ENOMEM;
	if ((m->n + 1) * 2 > m->n_slots && names_rehash(m, m->n_slots ? m->n_slots * 2 : 64))
		return NF_ENOMEM;
	if (nf_array_reserve((void **)&m->keys, &m->cap, m->n + 1, sizeof(*m->keys), 16, 0))
		return NF_ENOMEM;
	if (!(copy = strdup(key)))
		return NF_ENOMEM;
	m->keys[m->n] = copy;
	size_t i = str_hash(key) & (m->n_slots - 1);

	while (m->slots[i])
		i = (i + 1) & (m->n_slots - 1);
	m->slots[i] = (int32_t)(m->n + 1);
	return (int)m->n++;
}

void dd_names_free(struct dd_names *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

int dd_series_push(struct dd_series *s, int64_t x)
{
	if (s->n == s->cap && nf_array_reserve((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v), 256, 0))
		return NF_ENOMEM;
	s->v[s->n++] = x;
	return 0;
}

/* ---- sorting ------------------------------------------------------------------------ */

/* LSD radix sort on the sign-flipped 64-bit keys, 16 bits per pass; a pass
 * whose digit is the same for every key is skipped (times in a session share
 * their high bits). */
int dd_sort(int64_t *v, size_t n)
{
	uint64_t *a = (uint64_t *)v, *b, *src, *dst;
	size_t *count;

	if (n < 2)
		return 0;
	if (n < 256) { /* insertion sort: no buffers for small series */
		for (size_t i = 1; i < n; i++) {
			int64_t x = v[i];
			size_t j = i;

			for (; j > 0 && v[j - 1] > x; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
		return 0;
	}
	b = malloc(n * sizeof(*b));
	count = malloc(65536 * sizeof(*count));
	if (!b || !count) {
		free(b);
		free(count);
		return NF_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		a[i] ^= 1ull << 63;
	src = a;
	dst = b;
	for (int shift = 0; shift < 64; shift += 16) {
		size_t sum = 0;

		memset(count, 0, 65536 * sizeof(*count));
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 0xffff]++;
		if (count[(src[0] >> shift) & 0xffff] == n)
			continue; /* every key has this digit */
		for (size_t d = 0; d < 65536; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 0xffff]++] = src[i];
		uint64_t *t = src;

		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	for (size_t i = 0; i < n; i++)
		a[i] ^= 1ull << 63;
	free(b);
	free(count);
	return 0;
}

/* ---- percentiles and their intervals ------------------------------------------------ */

size_t dd_quantile_index(size_t n, double level)
{
	/* ClickHouse's QuantileExact: level * size truncated, for level < 1 */
	size_t i = level < 1 ? (size_t)(level * (double)n) : n - 1;

	return i < n ? i : n - 1;
}

double dd_z_two_sided(double alpha)
{
	/* Phi(z) = 1 - alpha/2  <=>  erfc(z / sqrt 2) = alpha: bisection */
	double lo = 0, hi = 40;

	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (erfc(mid / M_SQRT2) > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

void dd_quantile_interval(const int64_t *v, size_t n, double level, double z, int64_t *lo, int64_t *hi)
{
	/* B ~ Bin(n, level) samples fall at or below the true percentile; with
	 * j = floor(n q - z s) and k = ceil(n q + z s) + 1 (1-based, s the
	 * binomial's deviation), P(X(j) <= xi <= X(k)) >= 1 - alpha (normal
	 * approximation). Outside 1..n the interval is unbounded on that side. */
	double q = level < 1 ? level : 1.0, nq = (double)n * q, s = sqrt((double)n * q * (1 - q));
	double j = floor(nq - z * s), k = ceil(nq + z * s) + 1;

	*lo = j >= 1 ? v[(size_t)j - 1] : INT64_MIN;
	*hi = k <= (double)n ? v[(size_t)k - 1] : INT64_MAX;
	if (level >= 1) /* the max has no interval */
		*hi = INT64_MAX;
}

void dd_mann_whitney(const int64_t *a, size_t na, const int64_t *b, size_t nb, double *z, double *p,
		     double *p_greater)
{
	size_t i = 0, j = 0;
	double rank_b = 0, ties = 0, below = 0; /* ranks of b; sum of t^3 - t; samples so far */
	double N = (double)na + (double)nb;

	while (i < na || j < nb) {
		int64_t x = i < na && (j >= nb || a[i] <= b[j]) ? a[i] : b[j];
		size_t ca = 0, cb = 0;

		while (i < na && a[i] == x)
			i++, ca++;
		while (j < nb && b[j] == x)
			j++, cb++;
		double t = (double)ca + (double)cb;

		rank_b += (double)cb * (below + (t + 1) / 2); /* midrank of the tied run */
		ties += t * t * t - t;
		below += t;
	}
	double u_b = rank_b - (double)nb * ((double)nb + 1) / 2;
	double mean = (double)na * (double)nb / 2;
	double var = (double)na * (double)nb / 12 * ((N + 1) - ties / (N * (N - 1)));

	*p_greater = u_b / ((double)na * (double)nb);
	if (!(var > 0)) { /* every sample equal: nothing to tell apart */
		*z = 0;
		*p = 1;
		return;
	}
	double d = u_b - mean;
	double c = fabs(d) > 0.5 ? fabs(d) - 0.5 : 0; /* continuity correction */

	*z = (d < 0 ? -c : c) / sqrt(var);
	*p = erfc(fabs(*z) / M_SQRT2);
}

bool dd_beyond(const struct nf_diff_options *o, int64_t a, int64_t b)
{
	double d = fabs((double)b - (double)a);

	if (d < (double)o->min_effect_ns || d == 0)
		return false;
	if (a == 0)
		return true;
	return d / fabs((double)a) >= o->min_effect;
}

void dd_fmt_ns(char *buf, size_t len, int64_t ns)
{
	static const struct {
		double div;
		const char *unit;
	} u[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" } };
	double a = fabs((double)ns);

	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		if (a >= u[i].div) {
			double v = (double)ns / u[i].div, av = fabs(v);

			snprintf(buf, len, av < 10 ? "%.3f%s" : av < 100 ? "%.2f%s" : "%.1f%s", v, u[i].unit);
			return;
		}
	snprintf(buf, len, "%" PRId64 "ns", ns);
}
