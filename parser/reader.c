/*
 * The session reader's dispatch (nf_parser_open / run / destroy): checks a
 * session directory, sends our own sessions to the native reader and any
 * other trace to libbabeltrace2's graph, and feeds every event to the caller
 * and to the log replay. The other two parts: reader_bt.c (the graph) and
 * reader_child.c (the crash containment); reader_int.h is what they share.
 *
 * For a session whose metadata nftrace generated at this schema version, no
 * graph runs at all: the environment, clock and stream classes come from the
 * metadata text (prescan.c parses it), and nf_parser_run reads the streams
 * with the native reader (fastread.c), feeding the same callbacks and log
 * replay. NFTRACE_READER=babeltrace2 keeps the graph.
 *
 * babeltrace2 2.0.4 aborts or crashes on some crafted traces. Any trace the
 * graph will read (every trace but our own, or all with the variable set) is
 * first read whole by a child process (nf_bt_contained, reader_child.c); only
 * when the child finished does the graph run in this process. A child killed
 * by a signal, or still reading after a bound proportional to the trace's
 * size, is one NF_EFORMAT error.
 */
#include "reader_int.h"
#include "contract/errors.h"

#include "prescan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char nf_empty[] = "";

/* The replay's callbacks: the caller's, with the packet filled in. */
static int pass_entry_cb(void *ctx, const struct nf_decoded_entry *e)
{
	const struct nf_pass *ps = ctx;

	return ps->cb->entry(ps->cb->ctx, e);
}

static int pass_finding_cb(void *ctx, const struct nf_finding *f)
{
	const struct nf_pass *ps = ctx;
	struct nf_finding g = *f;

	g.packet = ps->cur_packet;
	return ps->cb->finding(ps->cb->ctx, &g);
}

/* The log replay's turn for an event the caller has seen. */
int nf_pass_replay(struct nf_pass *ps, const struct nf_event *ev, const char *stream,
			  uint64_t packet, uint64_t index)
{
	struct nf_parser *p = ps->p;
	int rc;

	ps->cur_packet = packet;
	rc = nf_logreplay_feed(ps->replay, ev, stream, index, ps->err);
	/* A bound the session hit (too many logs or fences): name where. */
	if (rc == NF_ENOMEM)
		nf_error_prefix(ps->err, "%s/%s: event #%" PRIu64, p->dir, stream, index);
	return rc;
}

/* ---- public API ----------------------------------------------------------- */

/*
 * babeltrace2 opens every visible file of a trace directory. A session holds
 * plain files only: a symbolic link planted in it (to /etc/passwd, another
 * session, /dev/zero) is not followed, and a FIFO, device or directory (which
 * babeltrace2 would block on or skip silently) is refused.
 */
static int check_plain_files(const char *dir, struct nf_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return nf_error_set(err, NF_ENOENT, "%s: %s", dir, strerror(errno));
	while (!rc && (de = readdir(d)) != NULL) {
		struct stat st;
		char *path;

		if (de->d_name[0] == '.')
			continue;
		size_t n = strlen(dir) + strlen(de->d_name) + 2;
		if (!(path = malloc(n))) {
			rc = nf_error_set(err, NF_ENOMEM, "out of memory");
			break;
		}
		snprintf(path, n, "%s/%s", dir, de->d_name);
		if (lstat(path, &st) != 0)
			rc = nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
		else if (S_ISLNK(st.st_mode))
			rc = nf_error_set(err, NF_EFORMAT,
					  "%s: is a symbolic link; a session holds plain files only (not following it)",
					  path);
		else if (!S_ISREG(st.st_mode))
			rc = nf_error_set(err, NF_EFORMAT,
					  "%s: is not a regular file (directory, FIFO or device); a session holds plain files only",
					  path);
		free(path);
	}
	closedir(d);
	return rc;
}

/* NFTRACE_READER=babeltrace2 forces the graph for every session. */
static bool reader_forced_bt(void)
{
	const char *v = getenv("NFTRACE_READER");

	return v && strcmp(v, "babeltrace2") == 0;
}

/* Does dir hold stream data: a non-empty regular file next to the metadata? */
static bool has_stream_data(const char *dir)
{
	struct dirent *de;
	bool any = false;
	DIR *d = opendir(dir);

	while (d && !any && (de = readdir(d)) != NULL) {
		struct stat st;

		any = de->d_name[0] != '.' && strcmp(de->d_name, "metadata") != 0 &&
		      fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		      S_ISREG(st.st_mode) && st.st_size > 0;
	}
	if (d)
		closedir(d);
	return any;
}

/*
 * The session info and the native reader's trace facts of one of our own
 * sessions, from its metadata's parts (prescan.c): what the babeltrace2 probe
 * reads from the trace environment and clock class, the same way.
 */
static int own_session_info(struct nf_parser *p, const struct nf_prescan_meta *mt,
			       struct nf_error *err)
{
	struct nf_session_info *in = &p->info;
	bool have_sv = false, have_freq = false;

	for (size_t i = 0; i < mt->n_env; i++) {
		const struct nf_ctf_env_entry *e = &mt->env[i];
		const char **str = NULL;

		if (e->is_int) {
			uint64_t v = (uint64_t)e->ival;

			if (strcmp(e->key, "schema_version") == 0) {
				in->schema_version = (int64_t)v;
				have_sv = true;
			} else if (strcmp(e->key, "cpu_frequency") == 0) {
				in->cpu_frequency = v;
				have_freq = true;
			} else if (strcmp(e->key, "seed") == 0) {
				in->seed = v;
			} else if (strcmp(e->key, "start_ticks") == 0) {
				in->start_ticks = v;
			} else if (strcmp(e->key, "ground_truth") == 0) {
				in->ground_truth = v != 0;
			}
			continue;
		}
		if (strcmp(e->key, "tool_version") == 0)
			str = &in->tool_version;
		else if (strcmp(e->key, "source") == 0)
			str = &in->source;
		else if (strcmp(e->key, "mode") == 0)
			str = &in->mode;
		else if (strcmp(e->key, "host") == 0)
			str = &in->host;
		else if (strcmp(e->key, "import_note") == 0)
			str = &in->import_note;
		if (str) {
			char *c = strdup(e->sval ? e->sval : "");

			if (!c)
				return nf_error_set(err, NF_ENOMEM, "out of memory for the session environment");
			if (*str != nf_empty)
				free((char *)*str);
			*str = c;
		}
	}
	if (!have_sv || !have_freq || in->cpu_frequency == 0)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: not an nftrace session (no schema_version or cpu_frequency in the trace environment)",
				    p->dir);
	if (!has_stream_data(p->dir))
		return nf_error_set(err, NF_EFORMAT, "%s: no events (no stream data next to the metadata)",
				    p->dir);
	/* The clock's offset as babeltrace2 normalises it: whole seconds and cycles below freq. */
	p->tr.freq = mt->freq;
	p->tr.offset_s = (int64_t)(mt->offset / mt->freq);
	p->tr.offset_cycles = mt->offset % mt->freq;
	p->tr.stream_classes = 0;
	for (int sc = 0; sc < NF_STREAM_COUNT; sc++)
		if (sc != NF_STREAM_TRUTH || mt->truth)
			p->tr.stream_classes |= UINT32_C(1) << sc;
	return 0;
}

int nf_parser_open(const char *dir, struct nf_parser **out, struct nf_error *err)
{
	struct nf_parser *p;
	struct stat st;
	char *meta;
	size_t len;
	int rc;

	*out = NULL;
	if (stat(dir, &st) != 0)
		return nf_error_set(err, NF_ENOENT, "%s: %s", dir,
				    errno == ENOENT ? "no such directory" : strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return nf_error_set(err, NF_ENOENT, "%s: not a directory (a session is a directory)", dir);
	len = strlen(dir);
	meta = malloc(len + sizeof("/metadata"));
	if (!meta)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	memcpy(meta, dir, len);
	memcpy(meta + len, "/metadata", sizeof("/metadata"));
	rc = lstat(meta, &st);
	free(meta);
	if (rc != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
		return nf_error_set(err, NF_EFORMAT, "%s: not an nftrace session (no CTF metadata)", dir);
	rc = check_plain_files(dir, err);
	if (rc)
		return rc;

	/* Our own sessions are checked before babeltrace2 reads them (prescan.c). */
	rc = nf_prescan_session(dir, err);
	if (rc)
		return rc;

	/* Babeltrace must never print: the library reports through err only. */
	bt_logging_set_global_level(BT_LOGGING_LEVEL_NONE);
	bt_current_thread_clear_error();

	p = calloc(1, sizeof(*p));
	if (!p)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	p->info.tool_version = p->info.source = p->info.mode = p->info.host = p->info.import_note = nf_empty;
	p->dir = strdup(dir);
	if (!p->dir) {
		rc = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out_destroy;
	}
	/*
	 * Our own metadata at this schema version: the native reader, and what it
	 * and the session info need (environment, clock, stream classes) comes
	 * from the metadata text itself. No babeltrace2 at all: its source
	 * component would index every packet of every stream just to be probed
	 * (memory growing with the session). Our own sessions also say whether
	 * the recording ended and how long each stream was then (whatever reads
	 * them): read once, for both.
	 */
	{
		struct nf_prescan_meta *mt = nf_prescan_metadata_load(dir);
		char what[512];

		if (mt) {
			nf_prescan_completeness(dir, mt, what, sizeof(what));
			if (what[0] && !(p->info.incomplete = strdup(what))) {
				nf_prescan_meta_free(mt);
				rc = nf_error_set(err, NF_ENOMEM, "out of memory");
				goto out_destroy;
			}
		}
		if (mt && !reader_forced_bt()) {
			p->fast = true;
			rc = own_session_info(p, mt, err);
			nf_prescan_meta_free(mt);
			if (rc)
				goto out_destroy;
			*out = p;
			return 0;
		}
		nf_prescan_meta_free(mt);
	}
	rc = nf_find_plugin("ctf", &p->ctf_plugin, err);
	if (!rc)
		rc = nf_find_plugin("utils", &p->utils_plugin, err);
	if (rc)
		goto out_destroy;

	/* A trace the graph will read is read by a child first: a crash in
	 * babeltrace2 ends the child, not this process. */
	if (!p->fast) {
		rc = nf_bt_contained(p, err);
		if (rc)
			goto out_destroy;
	}
	/* Probe: run the graph up to the first stream to read the environment. */
	rc = nf_parser_probe(p, err);
	if (rc)
		goto out_destroy;
	*out = p;
	return 0;

out_destroy:
	nf_parser_destroy(p);
	return rc;
}

const struct nf_session_info *nf_parser_info(const struct nf_parser *p)
{
	return &p->info;
}

void nf_parser_get_stats(const struct nf_parser *p, struct nf_parser_stats *st)
{
	*st = p->stats;
}

/* ---- the native reader's sink (fastread.c) ------------------------------- */

static int fast_event(void *ctx, struct nf_event *ev, const char *stream, uint64_t packet)
{
	struct nf_pass *ps = ctx;
	uint64_t index = ps->p->stats.events++;
	int rc;

	if (ps->cb->event) {
		rc = ps->cb->event(ps->cb->ctx, ev);
		if (rc)
			return nf_error_set(ps->err, rc, "stopped by the event callback (code %d)", rc);
	}
	return nf_pass_replay(ps, ev, stream, packet, index);
}

static void fast_discarded(void *ctx, uint64_t count)
{
	struct nf_pass *ps = ctx;

	ps->p->stats.discarded_events += count;
}

int nf_parser_run(struct nf_parser *p, const struct nf_parser_callbacks *cb, struct nf_error *err)
{
	static const struct nf_parser_callbacks none;
	struct nf_pass ps;
	bt_graph *g;
	int rc;

	if (p->ran)
		return nf_error_set(err, NF_ESTATE, "%s: the session was already read", p->dir);
	p->ran = true;
	memset(&ps, 0, sizeof(ps));
	ps.p = p;
	ps.cb = cb ? cb : &none;
	ps.err = err;
	ps.replay_cb.ctx = &ps;
	ps.replay_cb.entry = ps.cb->entry ? pass_entry_cb : NULL;
	ps.replay_cb.finding = ps.cb->finding ? pass_finding_cb : NULL;
	ps.replay = nf_logreplay_create(&ps.replay_cb);
	if (!ps.replay)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	if (p->fast) {
		struct nf_fr_sink sink = { &ps, fast_event, fast_discarded };

		rc = nf_fastread_run(p->dir, &p->tr, &sink, err);
	} else {
		bt_current_thread_clear_error();
		rc = nf_graph_build(&ps, &g);
		if (!rc) {
			rc = nf_graph_drive(&ps, g);
			bt_graph_put_ref(g);
		}
	}
	nf_logreplay_destroy(ps.replay);
	nf_pass_release(&ps);
	return rc;
}

void nf_parser_destroy(struct nf_parser *p)
{
	if (!p)
		return;
	if (p->info.tool_version != nf_empty)
		free((char *)p->info.tool_version);
	if (p->info.source != nf_empty)
		free((char *)p->info.source);
	if (p->info.mode != nf_empty)
		free((char *)p->info.mode);
	if (p->info.host != nf_empty)
		free((char *)p->info.host);
	if (p->info.import_note != nf_empty)
		free((char *)p->info.import_note);
	bt_plugin_put_ref(p->ctf_plugin);
	bt_plugin_put_ref(p->utils_plugin);
	free((char *)p->info.incomplete);
	free(p->dir);
	free(p);
}
