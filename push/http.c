/* push/: small growing buffers and one HTTP connection to ClickHouse (push_int.h). */
#include "push_int.h"
#include "contract/escape.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- small buffers ---- */

int nf_push_buf_reserve(struct buf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->n + more)
		cap *= 2;
	unsigned char *p = realloc(b->p, cap);
	if (!p)
		return NF_ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int nf_push_buf_put(struct buf *b, const void *d, size_t n)
{
	if (!n)
		return 0; /* d may be NULL then (an empty answer) */
	if (nf_push_buf_reserve(b, n))
		return NF_ENOMEM;
	memcpy(b->p + b->n, d, n);
	b->n += n;
	return 0;
}

int nf_push_buf_u8(struct buf *b, unsigned v)
{
	unsigned char c = (unsigned char)v;
	return nf_push_buf_put(b, &c, 1);
}

int nf_push_buf_le(struct buf *b, uint64_t v, int bytes)
{
	unsigned char c[8];
	for (int i = 0; i < bytes; i++)
		c[i] = (unsigned char)(v >> (8 * i));
	return nf_push_buf_put(b, c, (size_t)bytes);
}

/* LEB128, as Native and RowBinary write string lengths and array sizes. */
int nf_push_buf_varint(struct buf *b, uint64_t v)
{
	do {
		unsigned c = (unsigned)(v & 0x7f);
		v >>= 7;
		if (nf_push_buf_u8(b, c | (v ? 0x80u : 0)))
			return NF_ENOMEM;
	} while (v);
	return 0;
}

/* A String value: LEB128 length, then the bytes. */
int nf_push_buf_str(struct buf *b, const void *s, size_t n)
{
	return nf_push_buf_varint(b, n) ? NF_ENOMEM : nf_push_buf_put(b, s, n);
}


/* ---- HTTP ---- */

/* Writes the answer to c->out as text for a terminal: what is not printable
 * UTF-8 (ESC and OSC sequences, CR, BS, C1 controls a pushed name held)
 * becomes '?'. A character cut by the chunk's end waits for the next chunk
 * (at = NULL, n = 0: the end of the answer). Returns 0, or -1 (write error). */
static int out_text(struct ch *c, const char *at, size_t n)
{
	const unsigned char *p = (const unsigned char *)at;
	size_t keep = 0;

	/* complete the character the last chunk cut */
	while (c->ncarry && n && c->ncarry < 4 && !nf_utf8_decode(c->carry, c->ncarry, NULL) &&
	       (*p & 0xC0) == 0x80) {
		c->carry[c->ncarry++] = *p++;
		n--;
	}
	if (c->ncarry && (nf_utf8_decode(c->carry, c->ncarry, NULL) || n || !at)) {
		if (nf_esc_text((const char *)c->carry, c->ncarry, NF_ESC_KEEP_NL, nf_esc_file_write, c->out))
			return -1;
		c->ncarry = 0;
	}
	/* a lead byte in the last three whose character does not end here */
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char b = p[n - k];
		size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;

		if ((b & 0xC0) != 0x80) {
			if (need > k)
				keep = k;
			break;
		}
	}
	if (nf_esc_text((const char *)p, n - keep, NF_ESC_KEEP_NL, nf_esc_file_write, c->out))
		return -1;
	if (keep) { /* at the end p is NULL (n = 0): no memcpy from it, even of 0 bytes */
		memcpy(c->carry + c->ncarry, p + n - keep, keep);
		c->ncarry += keep;
	}
	return 0;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct ch *c = ud;
	size_t len = sz * n;
	long code = 0;

	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code == 200 && c->out) {
		if (c->out_text ? out_text(c, p, len) != 0 : fwrite(p, 1, len, c->out) != len) {
			c->out_failed = 1;
			return 0;
		}
		return len;
	}
	if (c->errbody.n < PUSH_ERRBODY_MAX) {
		size_t take = len < PUSH_ERRBODY_MAX - c->errbody.n ? len : PUSH_ERRBODY_MAX - c->errbody.n;
		if (nf_push_buf_put(&c->errbody, p, take))
			return 0;
	}
	return len;
}

/* The URL for messages: up to its query string (?password=...), and the
 * password of http://user:password@host replaced by ***. */
static void shown_url(char *dst, size_t len, const char *url)
{
	size_t l = strcspn(url, "?#");
	const char *host = strstr(url, "://");
	const char *at = NULL;

	if (l > 200)
		l = 200;
	if (host && (size_t)(host - url) < l) {
		host += 3;
		for (const char *q = host; q < url + l && *q != '/'; q++)
			if (*q == '@')
				at = q;
	}
	if (!at) {
		snprintf(dst, len, "%.*s", (int)l, url);
		return;
	}
	const char *colon = memchr(host, ':', (size_t)(at - host));

	snprintf(dst, len, "%.*s%s%.*s", (int)((colon ? colon : at) - url), url, colon ? ":***" : "",
		 (int)(url + l - at), at);
}

static int valid_db_name(const char *s)
{
	if (!*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

int nf_push_ch_open(struct ch *c, const struct nf_push_options *o, const char *url, struct nf_error *err)
{
	size_t l;

	memset(c, 0, sizeof(*c));
	c->db = o->database ? o->database : "nftrace";
	c->sfx = o->cluster ? "_local" : "";
	c->timeout_s = o->timeout_s > 0 ? o->timeout_s : 600;
	shown_url(c->shown, sizeof(c->shown), url ? url : "(none)");
	if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
		return nf_error_set(err, NF_EINVAL, "%s: not an http:// or https:// URL", c->shown);
	l = strcspn(url, "?#");
	if (!valid_db_name(c->db))
		return nf_error_set(err, NF_EINVAL, "database '%.64s': use letters, digits and '_' only", c->db);
	if (o->cluster && !valid_db_name(o->cluster))
		return nf_error_set(err, NF_EINVAL, "cluster '%.64s': use letters, digits and '_' only", o->cluster);
	c->base = malloc(strlen(url) + 4);
	c->curl = curl_easy_init();
	/* no "Expect: 100-continue" round trip before a streamed body */
	c->hdrs = curl_slist_append(NULL, "Expect:");
	if (!c->base || !c->curl || !c->hdrs)
		return nf_error_set(err, NF_ENOMEM, "push: out of memory");
	strcpy(c->base, url);
	if (strchr(url, '?'))
		strcat(c->base, "&");
	else if (l && url[l - 1] == '/')
		strcat(c->base, "?");
	else
		strcat(c->base, "/?");
	return 0;
}

void nf_push_ch_close(struct ch *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->hdrs);
	free(c->base);
	free(c->errbody.p);
}

/*
 * POSTs to the server. With data: sql goes in the URL (an INSERT ... FORMAT
 * RowBinary) and data is the body; without: sql is the body. use_db: add the
 * database parameter (not for CREATE DATABASE).
 */
int nf_push_ch_post(struct ch *c, const char *sql, const void *data, size_t n, int use_db,
		   struct nf_error *err)
{
	char *esc = NULL, *url = NULL;
	long code = 0;
	CURLcode cc;
	int rc = 0;

	c->errbody.n = 0;
	c->out_failed = 0;
	if (data || c->reader) {
		esc = curl_easy_escape(c->curl, sql, 0);
		if (!esc)
			return nf_error_set(err, NF_ENOMEM, "push: out of memory");
	}
	size_t ul = strlen(c->base) + 64 + strlen(c->db) + (esc ? strlen(esc) : 0);
	url = malloc(ul);
	if (!url) {
		curl_free(esc);
		return nf_error_set(err, NF_ENOMEM, "push: out of memory");
	}
	snprintf(url, ul, "%s%s%s%s%s", c->base, use_db ? "database=" : "", use_db ? c->db : "",
		 esc ? (use_db ? "&query=" : "query=") : "", esc ? esc : "");
	curl_free(esc);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->hdrs);
	if (c->reader) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
		curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, c->reader);
		curl_easy_setopt(c->curl, CURLOPT_READDATA, c->reader_ud);
		/* fewer, larger reads and socket writes (curl's default is 64 KiB) */
		curl_easy_setopt(c->curl, CURLOPT_UPLOAD_BUFFERSIZE, (long)PUSH_UPLOAD_BUF);
	} else {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, data ? data : (const void *)sql);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(data ? n : strlen(sql)));
	}
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	c->ncarry = 0;
	cc = curl_easy_perform(c->curl);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	free(url);
	/* a character the answer's end cut is shown as '?' */
	if (c->out && c->out_text && code == 200 && !c->out_failed && out_text(c, NULL, 0))
		c->out_failed = 1;
	if (c->out_failed)
		return nf_error_set(err, NF_EIO, "writing the answer failed");
	if (cc != CURLE_OK && !(code && code != 200 && cc == CURLE_WRITE_ERROR)) {
		return nf_error_set(err, NF_EIO, "%s: %s", c->shown, curl_easy_strerror(cc));
	}
	if (code != 200) {
		/* ClickHouse's error: "Code: N, e.displayText() = DB::Exception: ...": first line */
		char line[300];
		size_t k = 0;

		for (size_t i = 0; i < c->errbody.n && k + 1 < sizeof(line); i++) {
			unsigned char ch = c->errbody.p[i];
			if (ch == '\n' || ch == '\r')
				break;
			line[k++] = (char)(ch < 0x20 || ch == 0x7f ? '?' : ch);
		}
		line[k] = '\0';
		rc = nf_error_set(err, NF_ESQL, "%s: HTTP %ld: %s", c->shown, code, k ? line : "(no message)");
	}
	return rc;
}

/* Runs sql and copies the first line of its answer to ans. */
int nf_push_ch_scalar(struct ch *c, const char *sql, char *ans, size_t len, struct nf_error *err)
{
	int rc = nf_push_ch_post(c, sql, NULL, 0, 0, err); /* no database: it may not exist yet */
	size_t k = 0;

	while (!rc && k + 1 < len && k < c->errbody.n && c->errbody.p[k] != '\n') {
		ans[k] = (char)c->errbody.p[k];
		k++;
	}
	ans[k] = '\0';
	return rc;
}

/* The URLs a push talks to: the shards of a cluster, in shard order, or the one server. */
const char *const *nf_push_push_urls(const struct nf_push_options *o, size_t *n)
{
	if (o->cluster && o->n_shards) {
		*n = o->n_shards;
		return o->shards;
	}
	*n = 1;
	return &o->url;
}
