/*
 * The analyzer benchmark's peer: a bare SQLite insert of N rows shaped like
 * fence_ops (schemas/timeline.sql) through one prepared statement in one
 * transaction, with the analyzer's build pragmas (64 KiB pages, journal off,
 * synchronous off), into a fresh file; then, for context, an index by (queue, queued_ns) (the analyzer
 * had one until it dropped it: building it cost about as much as the load).
 * Prints the row count, the wall seconds of the load alone and of load +
 * index, and the CPU seconds (user + system) of the same two.
 *   nfb_bare_insert DB_PATH N
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int die(sqlite3 *db, const char *what)
{
	fprintf(stderr, "nfb_bare_insert: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
	return 1;
}

int main(int argc, char **argv)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	double t0, t1, t2, c0, c1, c2;
	long long n;

	if (argc != 3 || (n = atoll(argv[2])) <= 0) {
		fprintf(stderr, "usage: nfb_bare_insert DB_PATH N\n");
		return 2;
	}
	unlink(argv[1]);
	t0 = now_s();
	c0 = cpu_s();
	if (sqlite3_open(argv[1], &db) != SQLITE_OK)
		return die(db, "open");
	if (sqlite3_exec(db,
			 "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
			 "CREATE TABLE fence_ops(id INTEGER PRIMARY KEY, queue INTEGER, adapter INTEGER,"
			 " op TEXT, fence INTEGER, handle INTEGER, value INTEGER, queued_ns INTEGER,"
			 " observed_ns INTEGER, end_ns INTEGER, status TEXT, log_seq INTEGER,"
			 " epoch INTEGER, thread INTEGER); BEGIN",
			 NULL, NULL, NULL) != SQLITE_OK)
		return die(db, "schema");
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO fence_ops VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
			       " ?11, ?12, ?13, ?14)", -1, &st, NULL) != SQLITE_OK)
		return die(db, "prepare");
	for (long long i = 1; i <= n; i++) {
		int w = (int)(i & 1);

		sqlite3_bind_int64(st, 1, i);
		sqlite3_bind_int64(st, 2, 0x40000000 + (i & 3));
		sqlite3_bind_int64(st, 3, 0);
		sqlite3_bind_text(st, 4, w ? "wait" : "signal", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, 0x1000 + (i & 3));
		sqlite3_bind_int64(st, 6, 0x2000 + (i & 3));
		sqlite3_bind_int64(st, 7, i / 8);
		sqlite3_bind_int64(st, 8, i * 400);
		if (w)
			sqlite3_bind_int64(st, 9, i * 400 + 1000);
		else
			sqlite3_bind_null(st, 9);
		sqlite3_bind_int64(st, 10, i * 400 + 3000);
		sqlite3_bind_text(st, 11, "complete", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 12, i / 8);
		sqlite3_bind_int64(st, 13, 1);
		sqlite3_bind_int64(st, 14, 7);
		if (sqlite3_step(st) != SQLITE_DONE)
			return die(db, "insert");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return die(db, "commit");
	t1 = now_s();
	c1 = cpu_s();
	if (sqlite3_exec(db,
			 "CREATE INDEX fence_ops_queue ON fence_ops(queue, queued_ns);",
			 NULL, NULL, NULL) != SQLITE_OK)
		return die(db, "index");
	if (sqlite3_close(db) != SQLITE_OK)
		return die(db, "close");
	t2 = now_s();
	c2 = cpu_s();
	printf("%lld %.6f %.6f %.6f %.6f\n", n, t1 - t0, t2 - t0, c1 - c0, c2 - c0);
	return 0;
}
