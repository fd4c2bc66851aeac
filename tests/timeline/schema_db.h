/*
 * For the timeline's tests: SQL run on a database (a failure aborts the
 * test), and the schema files run as they are (a timeline made from
 * schemas/timeline.sql and schemas/timeline-views.sql, rows put in between).
 */
#ifndef NF_TESTS_TIMELINE_SCHEMA_DB_H
#define NF_TESTS_TIMELINE_SCHEMA_DB_H

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "nf_test.h"

static inline void exec_sql(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		ck_abort_msg("sql failed: %s: %.80s", msg ? msg : "?", sql);
}

/* Runs the file rel (relative to the source tree) on db. */
static inline void exec_schema_file(sqlite3 *db, const char *rel)
{
	char path[4096];
	FILE *f;
	long n;
	char *buf;

	nf_test_source_path(path, sizeof(path), rel);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	exec_sql(db, buf);
	free(buf);
}

#endif
