/*
 * CPU runs as blocks (see runs.h and the cpu_run_blocks table of
 * schemas/timeline.sql): each thread has one open block, a JSON array text
 * "[[cpu,start,end,state],...]" whose times are offsets from the block's
 * base_ns (its first known time), written as one row when it holds
 * NF_RUNS_BLOCK runs, when all open blocks together pass NF_RUNS_MAX_BYTES,
 * or at finish.
 */
#include "runs.h"
#include "contract/errors.h"

#include <stdlib.h>
#include <string.h>

#define NF_RUNS_MAX_THREADS (1u << 22)

struct runs_block {
	int64_t tid;
	char *buf;           /* elements, comma-separated, without the outer brackets */
	size_t len, cap;
	uint32_t n;          /* runs in buf */
	int64_t base, first, last;
	bool has_first;      /* first/last hold a known time */
};

struct nf_runs {
	sqlite3 *db;
	sqlite3_stmt *ins;
	struct runs_block *blocks;
	size_t n_blocks, cap_blocks;
	uint32_t *slot;      /* open addressing: index + 1 into blocks, 0 empty */
	size_t cap_slot;
	size_t bytes;        /* text held by all open blocks */
};

static int runs_sql_err(struct nf_runs *r, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "timeline: cpu runs: %s: %s", what, sqlite3_errmsg(r->db));
}

void nf_runs_destroy(struct nf_runs *r)
{
	if (!r)
		return;
	sqlite3_finalize(r->ins);
	for (size_t i = 0; i < r->n_blocks; i++)
		free(r->blocks[i].buf);
	free(r->blocks);
	free(r->slot);
	free(r);
}

struct nf_runs *nf_runs_create(sqlite3 *db, struct nf_error *err)
{
	struct nf_runs *r = calloc(1, sizeof(*r));

	if (!r) {
		nf_error_set(err, NF_ENOMEM, "timeline: out of memory");
		return NULL;
	}
	r->db = db;
	/*
	 * The index is kept as the blocks go in (a few thousand rows) rather than
	 * built at the end: that read every block back, and they are most of the
	 * database (the pages had long left SQLite's cache: 176 MB of reads at gpu-x100).
	 */
	if (sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS cpu_run_blocks_thread ON cpu_run_blocks(thread, first_ns)",
			 NULL, NULL, NULL) != SQLITE_OK) {
		runs_sql_err(r, err, "indexing the blocks");
		nf_runs_destroy(r);
		return NULL;
	}
	if (sqlite3_prepare_v2(db, "INSERT INTO cpu_run_blocks(thread, first_ns, last_ns, n, base_ns, runs) "
			       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)", -1, &r->ins, NULL) != SQLITE_OK) {
		runs_sql_err(r, err, "preparing the block insert");
		nf_runs_destroy(r);
		return NULL;
	}
	return r;
}

static size_t runs_hash(int64_t tid, size_t cap)
{
	return (size_t)(((uint64_t)tid * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

/* The open block of tid, made when missing; NULL when out of memory. */
static struct runs_block *runs_block_of(struct nf_runs *r, int64_t tid)
{
	size_t i;

	if (r->cap_slot) {
		for (i = runs_hash(tid, r->cap_slot); r->slot[i]; i = (i + 1) & (r->cap_slot - 1))
			if (r->blocks[r->slot[i] - 1].tid == tid)
				return &r->blocks[r->slot[i] - 1];
	}
	if (r->n_blocks >= NF_RUNS_MAX_THREADS)
		return NULL;
	if ((r->n_blocks + 1) * 2 > r->cap_slot) {
		size_t ncap = r->cap_slot ? r->cap_slot * 2 : 256;
		uint32_t *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return NULL;
		for (size_t b = 0; b < r->n_blocks; b++) {
			for (i = runs_hash(r->blocks[b].tid, ncap); ns[i]; i = (i + 1) & (ncap - 1))
				;
			ns[i] = (uint32_t)b + 1;
		}
		free(r->slot);
		r->slot = ns;
		r->cap_slot = ncap;
	}
	if (r->n_blocks == r->cap_blocks) {
		size_t ncap = r->cap_blocks ? r->cap_blocks * 2 : 64;
		struct runs_block *nb = realloc(r->blocks, ncap * sizeof(*nb));

		if (!nb)
			return NULL;
		r->blocks = nb;
		r->cap_blocks = ncap;
	}
	for (i = runs_hash(tid, r->cap_slot); r->slot[i]; i = (i + 1) & (r->cap_slot - 1))
		;
	r->slot[i] = (uint32_t)r->n_blocks + 1;
	r->blocks[r->n_blocks] = (struct runs_block){ .tid = tid };
	return &r->blocks[r->n_blocks++];
}

/*
 * Writes b as one row (nothing when empty) and empties it. Its buffer is kept
 * for the thread's next block when keep and the open blocks hold at most half
 * of NF_RUNS_MAX_BYTES (a full block's text was grown by realloc from 4 KiB
 * again for each block), else freed.
 */
static int runs_write(struct nf_runs *r, struct runs_block *b, bool keep, struct nf_error *err)
{
	sqlite3_stmt *s = r->ins;
	int rc;

	if (!b->n) {
		if (!keep && b->buf) {
			r->bytes -= b->cap;
			free(b->buf);
			*b = (struct runs_block){ .tid = b->tid };
		}
		return 0;
	}
	/* The elements were written after a '[' kept at buf[0]; close the array. */
	b->buf[b->len] = ']';
	sqlite3_bind_int64(s, 1, b->tid);
	if (b->has_first) {
		sqlite3_bind_int64(s, 2, b->first);
		sqlite3_bind_int64(s, 3, b->last);
	} else {
		sqlite3_bind_null(s, 2);
		sqlite3_bind_null(s, 3);
	}
	sqlite3_bind_int64(s, 4, b->n);
	sqlite3_bind_int64(s, 5, b->base);
	sqlite3_bind_text(s, 6, b->buf, (int)b->len + 1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (keep && r->bytes <= NF_RUNS_MAX_BYTES / 2) {
		*b = (struct runs_block){ .tid = b->tid, .buf = b->buf, .cap = b->cap };
	} else {
		r->bytes -= b->cap;
		free(b->buf);
		*b = (struct runs_block){ .tid = b->tid };
	}
	return rc == SQLITE_DONE ? 0 : runs_sql_err(r, err, "writing a block");
}

static const char runs_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				     "8081828384858687888990919293949596979899";

/* The 4 digits of x < 10000 at d (two independent pairs). */
static inline void runs_4(char *d, uint32_t x)
{
	uint32_t hi = x / 100, lo = x % 100;

	memcpy(d, runs_pairs + 2 * hi, 2);
	memcpy(d + 2, runs_pairs + 2 * lo, 2);
}

/*
 * Decimal text of v at p; returns the length (at most 20). The length comes
 * from the bit length (log10 2 ~ 1233 / 4096) and one comparison; the digits
 * are written from the end in groups of 8 and 4 (independent halves) and then
 * pairs from a table: the runs' text is most of a block's cost, and a loop of
 * one division by 100 after another was a chain of dependent multiplies.
 */
static size_t runs_itoa(char *p, int64_t v)
{
	static const uint64_t pow10[20] = { 1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
					    10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
					    100000000000ull, 1000000000000ull, 10000000000000ull,
					    100000000000000ull, 1000000000000000ull, 10000000000000000ull,
					    100000000000000000ull, 1000000000000000000ull,
					    10000000000000000000ull };
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t n = 1, sign = v < 0;
	uint32_t x;
	char *e;

	if (u) {
		/* At most 2^63 here: t <= 19. */
		size_t t = (size_t)(64 - __builtin_clzll(u)) * 1233 >> 12;

		n = t + (u >= pow10[t]);
	}
	if (sign)
		*p++ = '-';
	e = p + n;
	while (u >= 100000000) {
		uint32_t r = (uint32_t)(u % 100000000);

		u /= 100000000;
		runs_4(e - 4, r % 10000);
		runs_4(e - 8, r / 10000);
		e -= 8;
	}
	x = (uint32_t)u;
	if (x >= 10000) {
		runs_4(e - 4, x % 10000);
		x /= 10000;
		e -= 4;
	}
	while (x >= 100) {
		uint32_t i = x % 100 * 2;

		x /= 100;
		*--e = runs_pairs[i + 1];
		*--e = runs_pairs[i];
	}
	if (x >= 10) {
		*--e = runs_pairs[x * 2 + 1];
		*--e = runs_pairs[x * 2];
	} else {
		*--e = (char)('0' + x);
	}
	return n + sign;
}

static size_t runs_opt(char *p, bool has, int64_t v)
{
	if (!has) {
		memcpy(p, "null", 4);
		return 4;
	}
	return runs_itoa(p, v);
}

int nf_runs_add(struct nf_runs *r, int64_t tid, int64_t cpu, bool has_start, int64_t start_ns, bool has_end,
		int64_t end_ns, bool has_state, int64_t state, struct nf_error *err)
{
	struct runs_block *b = runs_block_of(r, tid);
	char *p;
	int rc;

	if (!b)
		return nf_error_set(err, NF_ENOMEM, "timeline: out of memory for cpu runs");
	/* An element is at most 4 numbers of 20 characters, 3 commas, brackets and the
	 * separating comma; the buffer keeps room for the closing ']'. */
	if (b->cap - b->len < 96) {
		size_t ncap = b->cap ? b->cap * 2 : 4096;
		char *nb = realloc(b->buf, ncap);

		if (!nb)
			return nf_error_set(err, NF_ENOMEM, "timeline: out of memory for cpu runs");
		r->bytes += ncap - b->cap;
		b->buf = nb;
		b->cap = ncap;
	}
	if (!b->n) {
		b->base = has_start ? start_ns : has_end ? end_ns : 0;
		b->buf[0] = '[';
		b->len = 1;
	} else {
		b->buf[b->len++] = ',';
	}
	for (int k = 0; k < 2; k++) {
		bool has = k == 0 ? has_start : has_end;
		int64_t t = k == 0 ? start_ns : end_ns;

		if (!has)
			continue;
		if (!b->has_first || t < b->first)
			b->first = t;
		if (!b->has_first || t > b->last)
			b->last = t;
		b->has_first = true;
	}
	p = b->buf + b->len;
	*p++ = '[';
	p += runs_itoa(p, cpu);
	*p++ = ',';
	p += runs_opt(p, has_start, start_ns - b->base);
	*p++ = ',';
	p += runs_opt(p, has_end, end_ns - b->base);
	*p++ = ',';
	p += runs_opt(p, has_state, state);
	*p++ = ']';
	b->len = (size_t)(p - b->buf);
	b->n++;
	if (b->n == NF_RUNS_BLOCK)
		return runs_write(r, b, true, err);
	if (r->bytes > NF_RUNS_MAX_BYTES)
		for (size_t i = 0; i < r->n_blocks; i++)
			if ((rc = runs_write(r, &r->blocks[i], false, err)))
				return rc;
	return 0;
}

int nf_runs_finish(struct nf_runs *r, struct nf_error *err)
{
	int rc;

	for (size_t i = 0; i < r->n_blocks; i++)
		if ((rc = runs_write(r, &r->blocks[i], false, err)))
			return rc;
	if (sqlite3_exec(r->db, "CREATE INDEX IF NOT EXISTS cpu_run_blocks_thread ON cpu_run_blocks(thread, first_ns)",
			 NULL, NULL, NULL) != SQLITE_OK)
		return runs_sql_err(r, err, "indexing the blocks");
	return 0;
}
