/*
 * The pre-scan: before a session whose metadata nftrace wrote (same schema
 * version) is read, by the native reader (fastread.c) or, under
 * NFTRACE_READER=babeltrace2, by babeltrace2's graph, walk every stream file's
 * packets and events with the layout the schema gives (packed little-endian
 * integers, NUL-terminated strings, sequences after their length field) and
 * refuse what does not fit its file, and what babeltrace2 2.0.4 would crash on
 * or allocate without bound for: packet or content sizes
 * of 2^63 bits and more (an assertion in its message iterator), sequence
 * lengths beyond the packet (it sizes a GPtrArray from the length before
 * reading a byte: 2^31 and more is a crash, less is gigabytes), clock values
 * of 2^64-1 (its "not set": an assertion at the packet's end). It also turns
 * truncated and corrupt streams into one message with the file and offset.
 * Sessions written by other tools (other metadata) are not scanned: reader.c
 * lets babeltrace2 read them in a child process first. Nothing is allocated
 * from input values; files are mapped read-only.
 */
#define _GNU_SOURCE /* memmem */
#include "prescan.h"
#include "contract/errors.h"

#include "contract/ctf_meta.h"
#include "nftrace/events.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* packet.header: magic(4) uuid(16) stream_id(4); packet.context: 6 x u64. */
#define NF_PS_MAGIC 0xc1fc1fc1u
#define NF_PS_HDR_SIZE 72u
#define NF_PS_EV_HDR_SIZE 12u     /* id u32, timestamp u64 */

static uint64_t ps_le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/*
 * Is DIR/metadata ours, at this schema version? Not only its header: the
 * whole text must be what the CTF writer generates (core/ctf_meta.c, the one
 * generator both use), where only the UUID, the environment, the clock's
 * frequency and offset and whether the truth stream is there vary.
 * Such a session is opened and read natively, without babeltrace2; anything else (a header kept over a changed layout
 * included) is read by a child first (reader.c).
 */
#define NF_PS_META_MAX (1u << 20)

/* Consumes the literal `lit` at *p. */
static bool ps_lit(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

/* Consumes 1..max decimal digits (a leading '-' when sign). */
static bool ps_digits(const char **p, const char *end, bool sign, int max, bool nonzero)
{
	const char *q = *p, *d;
	bool any_nonzero = false;

	if (sign && q < end && *q == '-')
		q++;
	d = q;
	while (q < end && *q >= '0' && *q <= '9' && q - d < max) {
		any_nonzero |= *q != '0';
		q++;
	}
	if (q == d || (q < end && *q >= '0' && *q <= '9') || (nonzero && !any_nonzero))
		return false;
	*p = q;
	return true;
}

/* A UUID as the writer formats it (8-4-4-4-12 lowercase hex), copied to out. */
static bool ps_uuid(const char **p, const char *end, char out[37])
{
	if (end - *p < 36)
		return false;
	for (int i = 0; i < 36; i++) {
		char c = (*p)[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		out[i] = c;
	}
	out[36] = '\0';
	*p += 36;
	return true;
}

/*
 * One environment line: "\tKEY = INT;\n" or "\tKEY = \"STRING\";\n" (with \"
 * and \\ escapes, no control characters), appended to env.
 */
static bool ps_env_line(const char **p, const char *end, struct nf_prescan_meta *env)
{
	const char *q = *p, *k;
	struct nf_ctf_env_entry *e = &env->env[env->n_env];
	int n = 0;

	if (env->n_env == NF_PRESCAN_ENV_MAX || !ps_lit(&q, end, "\t"))
		return false;
	k = q;
	while (q < end && (*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
			   (n && *q >= '0' && *q <= '9')) && n < 64) {
		q++;
		n++;
	}
	if (!n || !ps_lit(&q, end, " = "))
		return false;
	memcpy(env->keys[env->n_env], k, (size_t)n);
	env->keys[env->n_env][n] = '\0';
	e->key = env->keys[env->n_env];
	if (q < end && *q == '"') {
		char *v = env->vals + env->used;

		for (q++, n = 0; q < end && *q != '"' && n < 65536; q++, n++) {
			unsigned char c = (unsigned char)*q;

			if (c == '\\') {
				if (q + 1 >= end || (q[1] != '"' && q[1] != '\\'))
					return false;
				q++;
			} else if (c < 0x20 || c == 0x7f) {
				return false;
			}
			env->vals[env->used++] = *q;
		}
		if (!ps_lit(&q, end, "\""))
			return false;
		env->vals[env->used++] = '\0';
		e->is_int = false;
		e->sval = v;
	} else {
		const char *d = q;

		if (!ps_digits(&q, end, true, 19, false))
			return false;
		e->is_int = true;
		e->ival = strtoll(d, NULL, 10);
		e->sval = NULL;
	}
	if (!ps_lit(&q, end, ";\n"))
		return false;
	env->n_env++;
	*p = q;
	return true;
}

/* A decimal number of at most 19 digits at *p (checked by ps_digits first). */
static uint64_t ps_u64(const char *p)
{
	return strtoull(p, NULL, 10);
}

/*
 * The metadata's variable parts are read (the UUID, the environment, the
 * clock's frequency and offset), the writer's text is generated from them
 * (core/ctf_meta.c, the writer's own generator), with and without the truth
 * stream, and compared byte for byte with the file. True when it is ours;
 * *mt then holds those parts (its vals allocated; freed by the caller).
 */
static bool ps_meta_text_is_ours(const char *m, size_t len, struct nf_prescan_meta *mt)
{
	static const char trace_uuid[] = "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"";
	const char *end = m + len, *p, *f;
	char uuid[37];
	bool ours = false;

	/* The UUID, then the environment block, then the clock's two numbers. */
	p = memmem(m, len, trace_uuid, sizeof(trace_uuid) - 1);
	if (!p)
		return false;
	p += sizeof(trace_uuid) - 1;
	if (!ps_uuid(&p, end, uuid))
		return false;
	for (int i = 0, j = 0; i < 16; i++, j += 2) {
		unsigned int byte;

		if (uuid[j] == '-')
			j++;
		if (sscanf(uuid + j, "%2x", &byte) != 1)
			return false;
		mt->uuid[i] = (unsigned char)byte;
	}
	p = memmem(p, (size_t)(end - p), "\nenv {\n", 7);
	if (!p)
		return false;
	p += 7;
	mt->n_env = 0;
	mt->used = 0;
	mt->vals = malloc(len + 1); /* the unescaped values are shorter than the text */
	if (!mt->vals)
		return false;
	while (!ps_lit(&p, end, "};\n\n"))
		if (!ps_env_line(&p, end, mt))
			return false;
	f = memmem(p, (size_t)(end - p), "\tfreq = ", 8);
	if (!f)
		return false;
	f += 8;
	p = f;
	if (!ps_digits(&p, end, false, 19, true))
		return false;
	mt->freq = ps_u64(f);
	f = memmem(p, (size_t)(end - p), "\toffset = ", 10);
	if (!f)
		return false;
	f += 10;
	p = f;
	if (!ps_digits(&p, end, false, 19, false))
		return false;
	mt->offset = ps_u64(f);
	for (int truth = 0; truth < 2 && !ours; truth++) {
		char *t = nf_ctf_meta_render(uuid, mt->env, mt->n_env, mt->freq, mt->offset, truth != 0);

		ours = t && strlen(t) == len && memcmp(t, m, len) == 0;
		mt->truth = truth != 0;
		free(t);
	}
	return ours;
}

void nf_prescan_meta_free(struct nf_prescan_meta *mt)
{
	if (!mt)
		return;
	free(mt->vals);
	free(mt);
}

struct nf_prescan_meta *nf_prescan_metadata_load(const char *dir)
{
	struct nf_prescan_meta *mt = calloc(1, sizeof(*mt));
	char path[4200];
	struct stat st;
	char *m = NULL;
	size_t got = 0;
	bool ours = false;
	int fd;

	snprintf(path, sizeof(path), "%s/metadata", dir);
	if (!mt)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		nf_prescan_meta_free(mt);
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size <= NF_PS_META_MAX && (m = malloc((size_t)st.st_size + 1)) != NULL) {
		while (got < (size_t)st.st_size) {
			ssize_t n = read(fd, m + got, (size_t)st.st_size - got);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		m[got] = '\0'; /* the number parsers (strtoll) stop at it at the latest */
		ours = got == (size_t)st.st_size && ps_meta_text_is_ours(m, got, mt);
	}
	free(m);
	close(fd);
	if (!ours) {
		nf_prescan_meta_free(mt);
		return NULL;
	}
	return mt;
}

bool nf_prescan_metadata_is_ours(const char *dir)
{
	struct nf_prescan_meta *mt = nf_prescan_metadata_load(dir);

	nf_prescan_meta_free(mt);
	return mt != NULL;
}

struct ps_file {
	const char *path;
	const unsigned char *uuid; /* the metadata's trace UUID */
	const unsigned char *b;
	uint64_t size;
	uint64_t released;    /* bytes before this were handed back to the kernel */
	struct nf_error *err;
};

/*
 * Drops the pages before `upto` from our resident set every few MiB: the scan
 * reads each byte once, and a mapped file counts in RSS, so without this the
 * peak would grow with the session.
 */
#define NF_PS_RELEASE_STEP (1u << 20)
static void ps_release(struct ps_file *f, uint64_t upto)
{
	uint64_t page, end;

	if (upto < f->released + NF_PS_RELEASE_STEP)
		return;
	page = (uint64_t)sysconf(_SC_PAGESIZE);
	end = upto / page * page;
	if (end <= f->released)
		return;
	madvise((void *)(uintptr_t)(f->b + f->released), (size_t)(end - f->released), MADV_DONTNEED);
	f->released = end;
}

/*
 * Per event id, the size of its payload when every field is a fixed-width
 * integer (most events: the queued operations), else 0. Such an event is
 * checked in one comparison; one that does not fit goes through the
 * field-by-field walk, which names the field cut short.
 */
static uint32_t ps_fixed[NF_EV_COUNT];
static pthread_once_t ps_fixed_once = PTHREAD_ONCE_INIT;

static void ps_fixed_init(void)
{
	for (uint32_t id = 0; id < NF_EV_COUNT; id++) {
		const struct nf_event_desc *d = nf_event_desc(id);
		uint32_t size = 0;

		for (uint32_t i = 0; d && i < d->n_fields; i++) {
			static const uint32_t width[] = { [NF_FT_U8] = 1, [NF_FT_U16] = 2, [NF_FT_U32] = 4,
							  [NF_FT_U64] = 8 };

			if (d->fields[i].type > NF_FT_U64) {
				size = 0;
				break;
			}
			size += width[d->fields[i].type];
		}
		ps_fixed[id] = size;
	}
}

/* Walks the events of one packet's content [pos, end). */
static int ps_events(struct ps_file *f, uint64_t pkt, uint64_t pos, uint64_t end,
			uint32_t stream_id)
{
	while (pos < end) {
		const struct nf_event_desc *d;
		uint64_t ev_at = pos, prev = 0;
		uint32_t id;

		if (end - pos < NF_PS_EV_HDR_SIZE)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": event at offset %" PRIu64
					    " cut short (%" PRIu64 " bytes left in the packet's content)",
					    f->path, pkt, ev_at, end - pos);
		ps_release(f, pos);
		id = (uint32_t)ps_le(f->b + pos, 4);
		if (ps_le(f->b + pos + 4, 8) == UINT64_MAX)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": event at offset %" PRIu64
					    " has timestamp 2^64-1 (corrupt)", f->path, pkt, ev_at);
		d = nf_event_desc(id);
		if (!d || (uint32_t)d->stream != stream_id)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": event at offset %" PRIu64
					    " has id %" PRIu32 ", not an event of stream %" PRIu32 " (corrupt)",
					    f->path, pkt, ev_at, id, stream_id);
		pos += NF_PS_EV_HDR_SIZE;
		if (ps_fixed[id] && ps_fixed[id] <= end - pos) {
			pos += ps_fixed[id];
			continue;
		}
		for (uint32_t i = 0; i < d->n_fields; i++) {
			uint64_t need, left = end - pos;
			const unsigned char *z;

			switch (d->fields[i].type) {
			case NF_FT_U8: need = 1; break;
			case NF_FT_U16: need = 2; break;
			case NF_FT_U32: need = 4; break;
			case NF_FT_U64: need = 8; break;
			case NF_FT_STR:
				z = memchr(f->b + pos, '\0', (size_t)left);
				if (!z)
					return nf_error_set(f->err, NF_EFORMAT,
							    "%s: packet at offset %" PRIu64 ": event %s at offset %" PRIu64
							    ": string '%s' runs past the packet's content",
							    f->path, pkt, d->name, ev_at, d->fields[i].name);
				need = (uint64_t)(z - (f->b + pos)) + 1;
				break;
			case NF_FT_U32SEQ:
			case NF_FT_ENTRIES:
				/* prev < 2^64 elements; compare without multiplying. */
				{
					uint64_t el = d->fields[i].type == NF_FT_U32SEQ ? 4 : NF_LOG_ENTRY_SIZE;

					if (prev > left / el)
						return nf_error_set(f->err, NF_EFORMAT,
								    "%s: packet at offset %" PRIu64 ": event %s at offset %" PRIu64
								    ": '%s' claims %" PRIu64 " elements but the packet has room for %" PRIu64,
								    f->path, pkt, d->name, ev_at, d->fields[i].name,
								    prev, left / el);
					need = prev * el;
				}
				break;
			default:
				need = UINT64_MAX;
				break;
			}
			if (need > left)
				return nf_error_set(f->err, NF_EFORMAT,
						    "%s: packet at offset %" PRIu64 ": event %s at offset %" PRIu64
						    ": field '%s' cut short (corrupt or truncated)",
						    f->path, pkt, d->name, ev_at, d->fields[i].name);
			if (need <= 8 && d->fields[i].type <= NF_FT_U64)
				prev = ps_le(f->b + pos, (unsigned)need);
			pos += need;
		}
	}
	return 0;
}

/* Walks the packets of one stream file. */
static int ps_packets(struct ps_file *f)
{
	uint64_t off = 0;

	if (f->size == 0)
		return nf_error_set(f->err, NF_EFORMAT,
				    "%s: empty stream file (cut before its first packet)", f->path);
	while (off < f->size) {
		const unsigned char *h = f->b + off;
		uint64_t left = f->size - off, content, packet;
		uint32_t stream_id;
		int rc;

		if (left < NF_PS_HDR_SIZE)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": header cut short (%" PRIu64
					    " of %u bytes; truncated file)", f->path, off, left, NF_PS_HDR_SIZE);
		if (ps_le(h, 4) != NF_PS_MAGIC)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": bad magic 0x%08" PRIx64 " (corrupt)",
					    f->path, off, ps_le(h, 4));
		if (memcmp(h + 4, f->uuid, 16) != 0)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": belongs to another recording (its UUID is not the metadata's)",
					    f->path, off);
		stream_id = (uint32_t)ps_le(h + 20, 4);
		content = ps_le(h + 40, 8);
		packet = ps_le(h + 48, 8);
		if (stream_id >= NF_STREAM_COUNT)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": stream id %" PRIu32 " is not in the metadata (corrupt)",
					    f->path, off, stream_id);
		if (packet % 8 || content % 8 || content > packet || content < NF_PS_HDR_SIZE * 8u)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": content size %" PRIu64
					    " bits and packet size %" PRIu64 " bits do not fit together (corrupt)",
					    f->path, off, content, packet);
		/* babeltrace2 2.0.4 takes a clock value of 2^64-1 for "not set" and
		 * asserts when a packet's end is one (msg-iter.c). */
		if (ps_le(h + 24, 8) == UINT64_MAX || ps_le(h + 32, 8) == UINT64_MAX)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 ": timestamp_begin or timestamp_end is 2^64-1 (corrupt)",
					    f->path, off);
		if (packet / 8 > left)
			return nf_error_set(f->err, NF_EFORMAT,
					    "%s: packet at offset %" PRIu64 " claims %" PRIu64
					    " bytes but the file has %" PRIu64 " left (truncated or corrupt)",
					    f->path, off, packet / 8, left);
		rc = ps_events(f, off, off + NF_PS_HDR_SIZE, off + content / 8, stream_id);
		if (rc)
			return rc;
		off += packet / 8;
	}
	return 0;
}

static int ps_file(const char *path, const unsigned char *uuid, struct nf_error *err)
{
	struct ps_file f = { .path = path, .uuid = uuid, .err = err };
	struct stat st;
	void *m = NULL;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = 0; /* not a stream file; the reader's own checks refuse it */
		goto out_close;
	}
	f.size = (uint64_t)st.st_size;
	if (f.size) {
		m = mmap(NULL, (size_t)f.size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			rc = nf_error_set(err, NF_EIO, "%s: cannot map: %s", path, strerror(errno));
			goto out_close;
		}
		f.b = m;
	}
	rc = ps_packets(&f);
	if (m)
		munmap(m, (size_t)f.size);
out_close:
	close(fd);
	return rc;
}

int nf_prescan_session(const char *dir, struct nf_error *err)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	struct nf_prescan_meta *mt = nf_prescan_metadata_load(dir);

	if (!mt)
		return 0;
	pthread_once(&ps_fixed_once, ps_fixed_init);
	d = opendir(dir);
	if (!d) {
		nf_prescan_meta_free(mt);
		return nf_error_set(err, NF_ENOENT, "%s: %s", dir, strerror(errno));
	}
	while (!rc && (de = readdir(d)) != NULL) {
		char path[4200];

		/* babeltrace2 reads every visible file but the metadata. */
		if (de->d_name[0] == '.' || strcmp(de->d_name, "metadata") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rc = ps_file(path, mt->uuid, err);
	}
	closedir(d);
	nf_prescan_meta_free(mt);
	return rc;
}

void nf_prescan_completeness(const char *dir, const struct nf_prescan_meta *mt, char *out,
			     size_t len)
{
	static const char *const names[] = { "events", "truth", "kernel" };
	bool ended = false;

	out[0] = '\0';
	for (size_t i = 0; i < mt->n_env; i++) {
		const struct nf_ctf_env_entry *e = &mt->env[i];
		char path[4200];
		struct stat st;

		if (!e->is_int || strncmp(e->key, "recorded_", 9) != 0)
			continue;
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
			size_t n = strlen(names[k]);

			if (strncmp(e->key + 9, names[k], n) != 0 || strcmp(e->key + 9 + n, "_bytes") != 0)
				continue;
			if (k == 0)
				ended = true;
			snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
			uint64_t have = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
			if (e->ival > 0 && have < (uint64_t)e->ival && !out[0])
				snprintf(out, len, "%s has %" PRIu64 " of the %" PRId64 " bytes recorded",
					 names[k], have, e->ival);
		}
	}
	if (!ended)
		snprintf(out, len, "no end of recording (the recorder did not close the session: killed, or the program exited without destroying its runtime)");
}
