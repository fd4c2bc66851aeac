/*
 * The timeline's read side: opening a timeline database as every reader does
 * (read-only, one snapshot). What a reader selects of it is select.c's.
 */
#include "contract/timeline.h"
#include "contract/errors.h"

#include <errno.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

int nf_timeline_open_read(const char *path, sqlite3 **db, struct nf_error *err)
{
	struct stat sb;
	sqlite3_stmt *st;
	int ok, rc;

	*db = NULL;
	if (stat(path, &sb) != 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path,
				    strerror(errno));
	if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: cannot open: %s", path,
				  *db ? sqlite3_errmsg(*db) : "out of memory");
		goto out_close;
	}
	/* A file that is not a timeline gets a clear message instead of an SQL error. */
	if (sqlite3_prepare_v2(*db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
				    "name IN ('meta','queues','fence_ops','deps','anomalies',"
				    "'cpu_waits','cpu_signals','adapters','fences','fence_handles')",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_EFORMAT, "%s: not a timeline database: %s", path,
				  sqlite3_errmsg(*db));
		goto out_close;
	}
	ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 10;
	sqlite3_finalize(st);
	if (!ok) {
		rc = nf_error_set(err, NF_EFORMAT,
				  "%s: not a timeline database (tables of schemas/timeline.sql missing)",
				  path);
		goto out_close;
	}
	if (sqlite3_exec(*db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", path, sqlite3_errmsg(*db));
		goto out_close;
	}
	return 0;
out_close:
	sqlite3_close(*db);
	*db = NULL;
	return rc;
}
