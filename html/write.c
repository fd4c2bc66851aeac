/*
 * The page's data is one JSON object written as it is read: these put values
 * into it (integers exactly, times relative to the window's start, strings
 * and JSON texts escaped so that nothing in them can end the <script>).
 */
#include "html_int.h"
#include "contract/errors.h"
#include "contract/escape.h"
#include "contract/sattime.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void put(struct html *h, const char *s)
{
	fputs(s, h->f);
}

void put_i64(struct html *h, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	*--p = 0;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	fputs(p, h->f);
}

/* A value JavaScript holds exactly as a number, else as a decimal string. */
void put_big(struct html *h, int64_t v)
{
	if (v > ((int64_t)1 << 53) || v < -((int64_t)1 << 53)) {
		fputc('"', h->f);
		put_i64(h, v);
		fputc('"', h->f);
	} else {
		put_i64(h, v);
	}
}

/* A column: its integer, or null. */
void put_col(struct html *h, sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		put(h, "null");
	else
		put_big(h, sqlite3_column_int64(st, col));
}

/* A time column relative to the window start, or null. */
void put_time(struct html *h, sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		put(h, "null");
	else
		put_i64(h, nf_time_sub(sqlite3_column_int64(st, col), h->t0));
}

/* A JSON string, safe inside <script> ('<', '>', '&' escaped: no "</script>"
 * or "<!--" appears), every control and what is not UTF-8 escaped. */
void put_str(struct html *h, const char *s)
{
	s = s ? s : "";
	nf_esc_json(s, strlen(s), NF_ESC_SCRIPT, nf_esc_file_write, h->f);
}

/* A path as one shell word (nf_esc_shell; "./" before a leading '-', so it is
 * no option), as a JSON string. */
void put_shell_word(struct html *h, const char *path)
{
	char word[4 * 4096 + 16];
	struct nf_esc_buf b = { word, sizeof(word), 0, false };

	word[0] = '\0';
	if (path[0] == '-')
		nf_esc_buf_write(&b, "./", 2);
	nf_esc_shell(path, strlen(path), nf_esc_buf_write, &b);
	put_str(h, b.cut ? "DIR" : word);
}

/*
 * A JSON text from the timeline (an item's detail, made by SQLite's
 * json_object from capture strings) as a value, safe inside <script>
 * (nf_esc_json_text). NULL: null.
 */
void put_json(struct html *h, const char *json)
{
	if (!json)
		put(h, "null");
	else
		nf_esc_json_text(json, strlen(json), NF_ESC_SCRIPT, nf_esc_file_write, h->f);
}
