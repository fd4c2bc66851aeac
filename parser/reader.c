/*
 * The session reader: opens a CTF trace directory with libbabeltrace2
 * (source.ctf.fs -> filter.utils.muxer -> a simple sink), turns every event
 * message into a struct nf_event by looking each schema field up by name in
 * the payload (so a trace rewritten by another tool still reads), and feeds
 * the events to the caller and to the log replay. Babeltrace's own errors are
 * taken off the thread and turned into NF_EFORMAT with their cause; nothing is
 * printed. Buffers for sequences are reused and bounded.
 *
 * For a session whose metadata nftrace generated at this schema version, no
 * graph runs at all: the environment, clock and stream classes come from the
 * metadata text (prescan.c parses it), and nf_parser_run reads the streams
 * with the native reader (fastread.c), feeding the same callbacks and log
 * replay. NFTRACE_READER=babeltrace2 keeps the graph.
 *
 * babeltrace2 2.0.4 aborts or crashes on some crafted traces. Any trace the
 * graph will read (every trace but our own, or all with the variable set) is
 * first read whole by a child process (nf_bt_contained); only when the child
 * finished does the graph run in this process. A child killed by a signal, or
 * still reading after a bound proportional to the trace's size, is one
 * NF_EFORMAT error.
 */
#define _GNU_SOURCE /* close_range, pipe2 */
#include "nftrace/parser.h"

#include "fastread.h"
#include "prescan.h"

#include <babeltrace2/babeltrace.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Bounds on what one trace may make us allocate. */
#define NF_READER_MAX_CLASSES 4096u        /* distinct event classes */
#define NF_READER_MAX_STREAMS 256u         /* streams whose packets findings name */

/* Members of a DXGK_NATIVE_FENCE_LOG_ENTRY structure, by CTF name. */
enum {
	NF_EM_FENCE_VALUE, NF_EM_HNATIVE_FENCE, NF_EM_OPERATION_TYPE, NF_EM_RESERVED0,
	NF_EM_OBSERVED_TS, NF_EM_RESERVED1, NF_EM_END_TS, NF_EM_COUNT
};
static const char *const nf_entry_member_names[NF_EM_COUNT] = {
	"fence_value", "hnative_fence", "operation_type", "reserved0",
	"fence_observed_gpu_timestamp", "reserved1", "fence_end_gpu_timestamp",
};

/* How one event class of the trace maps onto the schema (resolved once). */
struct nf_class_map {
	const bt_event_class *cls;
	int id;                                  /* enum nf_event_id, -1: unknown */
	int64_t member[NF_EVENT_MAX_FIELDS];     /* payload member index, -1: absent */
	int64_t entry_member[NF_EM_COUNT];       /* for the ENTRIES field, -1: absent */
};

struct nf_parser {
	char *dir;
	struct nf_session_info info;
	struct nf_parser_stats stats;
	const bt_plugin *ctf_plugin;
	const bt_plugin *utils_plugin;
	bool ran;
	bool fast;                   /* nftrace's own metadata: the native reader */
	struct nf_fr_trace tr;       /* what it needs from the trace class */
};

/* State of one pass over the graph (the environment probe or the full run). */
struct nf_pass {
	struct nf_parser *p;
	bool probe;                         /* only looking for the environment */
	bool env_done;
	const struct nf_parser_callbacks *cb;
	struct nf_logreplay *replay;
	struct nf_error *err;
	int rc;                             /* our own error, stops the graph */
	struct nf_class_map *classes;
	size_t n_classes, cap_classes;
	uint32_t *u32s;
	size_t cap_u32s;
	struct nf_log_entry *entries;
	size_t cap_entries;
	/* The current packet of each stream, for findings' places (streams live
	 * as long as the graph, so their addresses are stable keys). */
	struct {
		const bt_stream *stream;
		uint64_t packet, ordinal;
	} streams[NF_READER_MAX_STREAMS];
	size_t n_streams;
	uint64_t cur_packet;                /* packet of the event being fed */
	struct nf_parser_callbacks replay_cb; /* wraps cb: adds the packet */
};

static const char nf_empty[] = "";

/*
 * The base name of the first file babeltrace2 quotes in a message
 * ("... stream file `/x/s/events`" or "'/x/s/events'"), or "" (metadata and
 * directories are not named: the message already names the directory).
 */
static void nf_bt_quoted_file(const char *m, char *out, size_t len)
{
	for (const char *q = m; *q; q++) {
		if (*q != '`' && *q != '\'')
			continue;
		const char *end = strchr(q + 1, *q);
		if (!end)
			return;
		const char *base = q + 1;
		for (const char *c = q + 1; c < end; c++)
			if (*c == '/')
				base = c + 1;
		char full[4096];
		struct stat st;
		int flen = (int)(end - q - 1);
		snprintf(full, sizeof(full), "%.*s", flen, q + 1);
		bool is_dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
		if (!is_dir && base > q + 1 && base < end && (size_t)(end - base) < len) {
			memcpy(out, base, (size_t)(end - base));
			out[end - base] = '\0';
			return;
		}
		q = end;
	}
}

/*
 * Appends a babeltrace2 cause to msg without its object addresses
 * ("msg-it-addr=0x55..., " and the like), which mean nothing to a user.
 */
static size_t nf_bt_append_clean(char *msg, size_t len, size_t cap, const char *m)
{
	while (*m && len + 1 < cap) {
		const char *eq = NULL;
		/* A "word-addr=" key: skip it, its value and the ", " after it. */
		if (m[0] != ' ' && m[0] != ',') {
			const char *w = m;
			while (*w && *w != ' ' && *w != ',' && *w != '=')
				w++;
			if (*w == '=' && w - m >= 5 && !strncmp(w - 5, "-addr", 5))
				eq = w;
		}
		if (eq && (m == eq || (len && (msg[len - 1] == ' ')))) {
			m = eq + 1;
			while (*m && *m != ',' && *m != ';' && *m != ' ')
				m++;
			if (*m == ',')
				m++;
			if (*m == ' ')
				m++;
			continue;
		}
		msg[len++] = *m++;
	}
	msg[len] = '\0';
	/* A cause that was only addresses leaves ": " or ", " behind. */
	while (len >= 2 && (msg[len - 1] == ' ' || msg[len - 1] == ',' || msg[len - 1] == ':'))
		msg[--len] = '\0';
	return len;
}

/*
 * Records babeltrace's current thread error (if any) as `code`, prefixed with
 * the directory; the root cause comes first. Always releases the error.
 */
static int nf_bt_error(struct nf_error *err, int code, const char *dir, const char *what)
{
	const bt_error *e = bt_current_thread_take_error();
	char msg[NF_ERROR_MSG_MAX], file[256] = "";
	size_t len = 0;

	msg[0] = '\0';
	if (e) {
		uint64_t n = bt_error_get_cause_count(e);

		/*
		 * Cause 0 is the root (the plugin that saw the bad data); later ones
		 * add context on the way up. Library-level causes only repeat the
		 * component's address and class, so they are left out.
		 */
		for (uint64_t i = 0; i < n && len + 3 < sizeof(msg); i++) {
			const bt_error_cause *c = bt_error_borrow_cause_by_index(e, i);
			const char *m = bt_error_cause_get_message(c);
			const char *mod = bt_error_cause_get_module_name(c);

			if (!m || !*m || (mod && strcmp(mod, "libbabeltrace2") == 0 && len))
				continue;
			if (!file[0])
				nf_bt_quoted_file(m, file, sizeof(file));
			if (len)
				len += (size_t)snprintf(msg + len, sizeof(msg) - len, "; ");
			if (len >= sizeof(msg))
				len = sizeof(msg) - 1;
			len = nf_bt_append_clean(msg, len, sizeof(msg), m);
		}
		bt_error_release(e);
	}
	/* Name the stream file babeltrace2 choked on, when it said which. With
	 * its logging off, a trace it cannot create without naming a stream is
	 * metadata it could not parse (empty, cut, not TSDL). */
	if (!file[0] && strstr(msg, "Cannot create trace for")) {
		snprintf(file, sizeof(file), "metadata");
		what = "not valid CTF 1.8 metadata (TSDL)";
	}
	const char *sep = file[0] ? "/" : "";
	if (!msg[0])
		return nf_error_set(err, code, "%s%s%s: %s", dir, sep, file, what);
	return nf_error_set(err, code, "%s%s%s: %s: %s", dir, sep, file, what, msg);
}

static int nf_find_plugin(const char *name, const bt_plugin **out, struct nf_error *err)
{
	bt_plugin_find_status st = bt_plugin_find(name, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE,
						  BT_FALSE, out);

	if (st == BT_PLUGIN_FIND_STATUS_OK)
		return 0;
	bt_current_thread_clear_error();
	if (st == BT_PLUGIN_FIND_STATUS_MEMORY_ERROR)
		return nf_error_set(err, NF_ENOMEM, "out of memory loading babeltrace2 plugin '%s'", name);
	return nf_error_set(err, NF_EUNSUPP, "babeltrace2 plugin '%s' not found", name);
}

/* ---- field decoding ---------------------------------------------------- */

static bool nf_fc_is_int(const bt_field_class *fc)
{
	return bt_field_class_type_is(bt_field_class_get_type(fc), BT_FIELD_CLASS_TYPE_INTEGER);
}

static uint64_t nf_field_int(const bt_field *f)
{
	bt_field_class_type t = bt_field_get_class_type(f);

	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return bt_field_integer_unsigned_get_value(f);
	return (uint64_t)bt_field_integer_signed_get_value(f);
}

/* A member's index by name; "_name" also matches (TSDL's escape for identifiers). */
static int64_t nf_member_index(const bt_field_class *st, const char *name)
{
	uint64_t n = bt_field_class_structure_get_member_count(st);
	int64_t escaped = -1;

	for (uint64_t i = 0; i < n; i++) {
		const char *mn = bt_field_class_structure_member_get_name(
			bt_field_class_structure_borrow_member_by_index_const(st, i));

		if (strcmp(mn, name) == 0)
			return (int64_t)i;
		if (escaped < 0 && mn[0] == '_' && strcmp(mn + 1, name) == 0)
			escaped = (int64_t)i;
	}
	return escaped;
}

static const bt_field_class *nf_member_class(const bt_field_class *st, int64_t idx)
{
	return bt_field_class_structure_member_borrow_field_class_const(
		bt_field_class_structure_borrow_member_by_index_const(st, (uint64_t)idx));
}

/* Resolves an event class against the schema: which member holds which field. */
static int nf_class_resolve(struct nf_pass *ps, const bt_event_class *cls, struct nf_class_map *m)
{
	const char *name = bt_event_class_get_name(cls);
	const bt_field_class *payload = bt_event_class_borrow_payload_field_class_const(cls);
	const struct nf_event_desc *d;

	memset(m, 0, sizeof(*m));
	m->cls = cls;
	m->id = name ? nf_event_id_by_name(name) : -1;
	for (int i = 0; i < NF_EVENT_MAX_FIELDS; i++)
		m->member[i] = -1;
	for (int i = 0; i < NF_EM_COUNT; i++)
		m->entry_member[i] = -1;
	if (m->id < 0)
		return 0;
	if (payload && bt_field_class_get_type(payload) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		payload = NULL;
	d = nf_event_desc((uint32_t)m->id);
	for (uint32_t i = 0; payload && i < d->n_fields; i++) {
		const struct nf_field_desc *fd = &d->fields[i];
		int64_t idx = nf_member_index(payload, fd->name);
		const bt_field_class *fc, *el;
		bool ok;

		if (idx < 0)
			continue;
		fc = nf_member_class(payload, idx);
		switch (fd->type) {
		case NF_FT_STR:
			ok = bt_field_class_get_type(fc) == BT_FIELD_CLASS_TYPE_STRING;
			break;
		case NF_FT_U32SEQ:
			ok = bt_field_class_type_is(bt_field_class_get_type(fc), BT_FIELD_CLASS_TYPE_ARRAY) &&
			     nf_fc_is_int(bt_field_class_array_borrow_element_field_class_const(fc));
			break;
		case NF_FT_ENTRIES:
			ok = bt_field_class_type_is(bt_field_class_get_type(fc), BT_FIELD_CLASS_TYPE_ARRAY);
			el = ok ? bt_field_class_array_borrow_element_field_class_const(fc) : NULL;
			ok = ok && bt_field_class_get_type(el) == BT_FIELD_CLASS_TYPE_STRUCTURE;
			for (int k = 0; ok && k < NF_EM_COUNT; k++) {
				m->entry_member[k] = nf_member_index(el, nf_entry_member_names[k]);
				if (m->entry_member[k] >= 0 && !nf_fc_is_int(nf_member_class(el, m->entry_member[k])))
					ok = false;
			}
			break;
		default:
			ok = nf_fc_is_int(fc);
			break;
		}
		if (!ok)
			return nf_error_set(ps->err, NF_EFORMAT,
					    "%s: event %s: field '%s' does not have the schema's type",
					    ps->p->dir, name, fd->name);
		m->member[i] = idx;
	}
	return 0;
}

static int nf_class_lookup(struct nf_pass *ps, const bt_event_class *cls,
			   const struct nf_class_map **out)
{
	int rc;

	for (size_t i = 0; i < ps->n_classes; i++)
		if (ps->classes[i].cls == cls) {
			*out = &ps->classes[i];
			return 0;
		}
	if (ps->n_classes >= NF_READER_MAX_CLASSES)
		return nf_error_set(ps->err, NF_EFORMAT, "%s: more than %u event classes",
				    ps->p->dir, NF_READER_MAX_CLASSES);
	if (ps->n_classes == ps->cap_classes) {
		size_t ncap = ps->cap_classes ? ps->cap_classes * 2 : 32;
		struct nf_class_map *n = realloc(ps->classes, ncap * sizeof(*n));

		if (!n)
			return nf_error_set(ps->err, NF_ENOMEM, "out of memory for event classes");
		ps->classes = n;
		ps->cap_classes = ncap;
	}
	rc = nf_class_resolve(ps, cls, &ps->classes[ps->n_classes]);
	if (rc)
		return rc;
	*out = &ps->classes[ps->n_classes++];
	return 0;
}

static int nf_read_array(struct nf_pass *ps, const struct nf_class_map *m,
			 const struct nf_field_desc *fd, const bt_field *f, uint64_t *len_out,
			 uint64_t event_index)
{
	uint64_t n = bt_field_array_get_length(f);
	int rc;

	if (n > NF_READER_MAX_SEQ)
		return nf_error_set(ps->err, NF_EFORMAT,
				    "%s: event %" PRIu64 ": field '%s' has %" PRIu64 " elements (limit %u)",
				    ps->p->dir, event_index, fd->name, n, NF_READER_MAX_SEQ);
	*len_out = n;
	if (fd->type == NF_FT_U32SEQ) {
		rc = nf_parser_buf_reserve((void **)&ps->u32s, &ps->cap_u32s, (size_t)n, sizeof(*ps->u32s),
				    ps->err);
		if (rc)
			return rc;
		for (uint64_t i = 0; i < n; i++)
			ps->u32s[i] = (uint32_t)nf_field_int(
				bt_field_array_borrow_element_field_by_index_const(f, i));
		return 0;
	}
	rc = nf_parser_buf_reserve((void **)&ps->entries, &ps->cap_entries, (size_t)n,
			    sizeof(*ps->entries), ps->err);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		const bt_field *el = bt_field_array_borrow_element_field_by_index_const(f, i);
		uint64_t v[NF_EM_COUNT] = { 0 };
		struct nf_log_entry *e = &ps->entries[i];

		for (int k = 0; k < NF_EM_COUNT; k++)
			if (m->entry_member[k] >= 0)
				v[k] = nf_field_int(bt_field_structure_borrow_member_field_by_index_const(
					el, (uint64_t)m->entry_member[k]));
		e->fence_value = v[NF_EM_FENCE_VALUE];
		e->hnative_fence = (uint32_t)v[NF_EM_HNATIVE_FENCE];
		e->operation_type = (uint32_t)v[NF_EM_OPERATION_TYPE];
		e->reserved0 = v[NF_EM_RESERVED0];
		e->fence_observed_gpu_timestamp = v[NF_EM_OBSERVED_TS];
		e->reserved1 = v[NF_EM_RESERVED1];
		e->fence_end_gpu_timestamp = v[NF_EM_END_TS];
	}
	return 0;
}

/* Fills ev from an event message; *known is false for an event not in the schema. */
static int nf_decode_event(struct nf_pass *ps, const bt_message *msg, struct nf_event *ev,
			   bool *known, uint64_t event_index)
{
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const bt_field *payload = bt_event_borrow_payload_field_const(e);
	const struct nf_class_map *m = NULL;
	const struct nf_event_desc *d;
	int rc;

	rc = nf_class_lookup(ps, bt_event_borrow_class_const(e), &m);
	if (rc)
		return rc;
	*known = m->id >= 0;
	if (!*known)
		return 0;
	memset(ev, 0, sizeof(*ev));
	ev->id = (uint32_t)m->id;
	if (bt_message_event_borrow_stream_class_default_clock_class_const(msg))
		ev->ts = bt_clock_snapshot_get_value(
			bt_message_event_borrow_default_clock_snapshot_const(msg));
	d = nf_event_desc(ev->id);
	for (uint32_t i = 0; payload && i < d->n_fields; i++) {
		const struct nf_field_desc *fd = &d->fields[i];
		const bt_field *f;

		if (m->member[i] < 0)
			continue;
		f = bt_field_structure_borrow_member_field_by_index_const(payload, (uint64_t)m->member[i]);
		switch (fd->type) {
		case NF_FT_STR:
			ev->str = bt_field_string_get_value(f);
			break;
		case NF_FT_U32SEQ:
		case NF_FT_ENTRIES:
			/* The sequence's own length wins over the length field before it. */
			rc = nf_read_array(ps, m, fd, f, &ev->f[i - 1], event_index);
			if (rc)
				return rc;
			if (fd->type == NF_FT_U32SEQ)
				ev->u32s = ps->u32s;
			else
				ev->entries = ps->entries;
			break;
		default:
			ev->f[i] = nf_field_int(f);
			break;
		}
	}
	return 0;
}

/* ---- session environment ----------------------------------------------- */

static int nf_env_int(const bt_trace *t, const char *key, bool required, uint64_t *out)
{
	const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(t, key);

	if (!v)
		return required ? -1 : 0;
	switch (bt_value_get_type(v)) {
	case BT_VALUE_TYPE_SIGNED_INTEGER:
		*out = (uint64_t)bt_value_integer_signed_get(v);
		return 0;
	case BT_VALUE_TYPE_UNSIGNED_INTEGER:
		*out = bt_value_integer_unsigned_get(v);
		return 0;
	default:
		return -1;
	}
}

static int nf_env_str(const bt_trace *t, const char *key, const char **out, struct nf_error *err)
{
	const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(t, key);
	char *s;

	if (!v || bt_value_get_type(v) != BT_VALUE_TYPE_STRING)
		return 0;
	s = strdup(bt_value_string_get(v));
	if (!s)
		return nf_error_set(err, NF_ENOMEM, "out of memory for the session environment");
	*out = s;
	return 0;
}

static int nf_read_env(struct nf_pass *ps, const bt_trace *t)
{
	struct nf_parser *p = ps->p;
	struct nf_session_info *in = &p->info;
	uint64_t sv = 0, gt = 0;
	int rc;

	if (nf_env_int(t, "schema_version", true, &sv) || nf_env_int(t, "cpu_frequency", true, &in->cpu_frequency) ||
	    in->cpu_frequency == 0)
		return nf_error_set(ps->err, NF_EFORMAT,
				    "%s: not an nftrace session (no schema_version or cpu_frequency in the trace environment)",
				    p->dir);
	in->schema_version = (int64_t)sv;
	nf_env_int(t, "seed", false, &in->seed);
	nf_env_int(t, "start_ticks", false, &in->start_ticks);
	nf_env_int(t, "ground_truth", false, &gt);
	in->ground_truth = gt != 0;
	rc = nf_env_str(t, "tool_version", &in->tool_version, ps->err);
	if (!rc)
		rc = nf_env_str(t, "source", &in->source, ps->err);
	if (!rc)
		rc = nf_env_str(t, "mode", &in->mode, ps->err);
	if (!rc)
		rc = nf_env_str(t, "host", &in->host, ps->err);
	if (!rc)
		rc = nf_env_str(t, "import_note", &in->import_note, ps->err);
	return rc;
}

/* ---- the graph ---------------------------------------------------------- */

static const char *nf_basename(const char *path)
{
	const char *s;

	if (!path)
		return nf_empty;
	s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* A packet begins: remember its packet_seq_num (else its ordinal) for its stream. */
static void nf_pass_packet(struct nf_pass *ps, const bt_packet *pk)
{
	const bt_stream *st = bt_packet_borrow_stream_const(pk);
	const bt_field *ctx = bt_packet_borrow_context_field_const(pk);
	size_t i;

	for (i = 0; i < ps->n_streams && ps->streams[i].stream != st; i++)
		;
	if (i == ps->n_streams) {
		if (i == NF_READER_MAX_STREAMS)
			return; /* findings of later streams say NF_PACKET_UNKNOWN */
		ps->streams[i].stream = st;
		ps->streams[i].ordinal = 0;
		ps->n_streams++;
	} else {
		ps->streams[i].ordinal++;
	}
	ps->streams[i].packet = ps->streams[i].ordinal;
	if (ctx && bt_field_get_class_type(ctx) == BT_FIELD_CLASS_TYPE_STRUCTURE) {
		int64_t m = nf_member_index(bt_field_borrow_class_const(ctx), "packet_seq_num");

		if (m >= 0) {
			const bt_field *f = bt_field_structure_borrow_member_field_by_index_const(
				ctx, (uint64_t)m);

			if (bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_INTEGER))
				ps->streams[i].packet = nf_field_int(f);
		}
	}
}

static uint64_t nf_pass_packet_of(const struct nf_pass *ps, const bt_stream *st)
{
	for (size_t i = 0; i < ps->n_streams; i++)
		if (ps->streams[i].stream == st)
			return ps->streams[i].packet;
	return NF_PACKET_UNKNOWN;
}

/* The replay's callbacks: the caller's, with the packet filled in. */
static int nf_pass_entry_cb(void *ctx, const struct nf_decoded_entry *e)
{
	const struct nf_pass *ps = ctx;

	return ps->cb->entry(ps->cb->ctx, e);
}

static int nf_pass_finding_cb(void *ctx, const struct nf_finding *f)
{
	const struct nf_pass *ps = ctx;
	struct nf_finding g = *f;

	g.packet = ps->cur_packet;
	return ps->cb->finding(ps->cb->ctx, &g);
}

static int nf_pass_replay(struct nf_pass *ps, const struct nf_event *ev, const char *stream,
			  uint64_t packet, uint64_t index);

static int nf_pass_event(struct nf_pass *ps, const bt_message *msg)
{
	struct nf_parser *p = ps->p;
	uint64_t index = p->stats.events++;
	struct nf_event ev;
	bool known;
	int rc;

	rc = nf_decode_event(ps, msg, &ev, &known, index);
	if (rc)
		return rc;
	if (!known) {
		p->stats.unknown_events++;
		return 0;
	}
	if (ps->cb && ps->cb->event) {
		rc = ps->cb->event(ps->cb->ctx, &ev);
		if (rc)
			return nf_error_set(ps->err, rc, "stopped by the event callback (code %d)", rc);
	}
	const bt_stream *bst = bt_event_borrow_stream_const(bt_message_event_borrow_event_const(msg));

	return nf_pass_replay(ps, &ev, nf_basename(bt_stream_get_name(bst)),
			      nf_pass_packet_of(ps, bst), index);
}

/* The log replay's turn for an event the caller has seen. */
static int nf_pass_replay(struct nf_pass *ps, const struct nf_event *ev, const char *stream,
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

/*
 * What the native reader needs from the trace class: the clock (as
 * babeltrace2 normalised its offset) and which stream classes
 * the metadata defines. Without a default clock the session is left to
 * babeltrace2.
 */
static void nf_read_trace_class(struct nf_parser *p, const bt_stream *st)
{
	const bt_trace *t = bt_stream_borrow_trace_const(st);
	const bt_trace_class *tc = bt_trace_borrow_class_const(t);
	const bt_clock_class *cc = bt_stream_class_borrow_default_clock_class_const(
		bt_stream_borrow_class_const(st));
	uint64_t n = bt_trace_class_get_stream_class_count(tc);

	if (!cc) {
		p->fast = false;
		return;
	}
	p->tr.freq = bt_clock_class_get_frequency(cc);
	bt_clock_class_get_offset(cc, &p->tr.offset_s, &p->tr.offset_cycles);
	p->tr.stream_classes = 0;
	for (uint64_t i = 0; i < n; i++) {
		const bt_stream_class *sc = bt_trace_class_borrow_stream_class_by_index_const(tc, i);
		uint64_t id = bt_stream_class_get_id(sc);

		if (id < 32 && bt_stream_class_borrow_default_clock_class_const(sc) == cc)
			p->tr.stream_classes |= UINT32_C(1) << id;
	}
}

static int nf_pass_message(struct nf_pass *ps, const bt_message *msg)
{
	uint64_t n;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		if (ps->probe && !ps->env_done) {
			const bt_stream *st = bt_message_stream_beginning_borrow_stream_const(msg);

			ps->env_done = true;
			nf_read_trace_class(ps->p, st);
			return nf_read_env(ps, bt_stream_borrow_trace_const(st));
		}
		return 0;
	case BT_MESSAGE_TYPE_PACKET_BEGINNING:
		if (!ps->probe)
			nf_pass_packet(ps, bt_message_packet_beginning_borrow_packet_const(msg));
		return 0;
	case BT_MESSAGE_TYPE_EVENT:
		return ps->probe ? 0 : nf_pass_event(ps, msg);
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		if (!ps->probe && bt_message_discarded_events_get_count(msg, &n) ==
					  BT_PROPERTY_AVAILABILITY_AVAILABLE)
			ps->p->stats.discarded_events += n;
		return 0;
	default:
		return 0;
	}
}

static bt_graph_simple_sink_component_consume_func_status
nf_sink_consume(bt_message_iterator *it, void *data)
{
	struct nf_pass *ps = data;
	bt_message_array_const msgs;
	uint64_t count, i;

	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (i = 0; i < count; i++) {
		if (ps->rc == 0)
			ps->rc = nf_pass_message(ps, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return ps->rc ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR
		      : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* Builds source.ctf.fs -> filter.utils.muxer -> simple sink for p->dir. */
static int nf_graph_build(struct nf_pass *ps, bt_graph **out)
{
	struct nf_parser *p = ps->p;
	const bt_component_class_source *src_cls;
	const bt_component_class_filter *mux_cls;
	const bt_component_source *src;
	const bt_component_filter *mux;
	const bt_component_sink *sink;
	bt_value *params = NULL, *inputs = NULL;
	bt_graph *g;
	uint64_t n_out;
	int rc = 0;

	src_cls = bt_plugin_borrow_source_component_class_by_name_const(p->ctf_plugin, "fs");
	mux_cls = bt_plugin_borrow_filter_component_class_by_name_const(p->utils_plugin, "muxer");
	if (!src_cls || !mux_cls)
		return nf_error_set(ps->err, NF_EUNSUPP,
				    "babeltrace2 has no source.ctf.fs or filter.utils.muxer");
	g = bt_graph_create(0);
	if (!g)
		return nf_error_set(ps->err, NF_ENOMEM, "out of memory creating a babeltrace2 graph");
	params = bt_value_map_create();
	if (!params || bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) !=
			       BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK ||
	    bt_value_array_append_string_element(inputs, p->dir) !=
		    BT_VALUE_ARRAY_APPEND_ELEMENT_STATUS_OK) {
		rc = nf_error_set(ps->err, NF_ENOMEM, "out of memory for babeltrace2 parameters");
		goto out_put_graph;
	}
	if (bt_graph_add_source_component(g, src_cls, "source", params, BT_LOGGING_LEVEL_NONE,
					  &src) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		rc = nf_bt_error(ps->err, NF_EFORMAT, p->dir, "cannot open the CTF trace");
		goto out_put_graph;
	}
	if (bt_graph_add_filter_component(g, mux_cls, "muxer", NULL, BT_LOGGING_LEVEL_NONE,
					  &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(g, "sink", NULL, nf_sink_consume, NULL, ps,
					       &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		rc = nf_bt_error(ps->err, NF_ENOMEM, p->dir, "cannot build the babeltrace2 graph");
		goto out_put_graph;
	}
	/* One muxer input per stream: the muxer adds a free input port after each connection. */
	n_out = bt_component_source_get_output_port_count(src);
	for (uint64_t i = 0; i < n_out; i++) {
		const bt_port_output *op = bt_component_source_borrow_output_port_by_index_const(src, i);
		const bt_port_input *ip = bt_component_filter_borrow_input_port_by_index_const(
			mux, bt_component_filter_get_input_port_count(mux) - 1);

		if (bt_graph_connect_ports(g, op, ip, NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
			rc = nf_bt_error(ps->err, NF_EFORMAT, p->dir, "cannot connect a stream");
			goto out_put_graph;
		}
	}
	if (bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		rc = nf_bt_error(ps->err, NF_EFORMAT, p->dir, "cannot connect the muxer");
		goto out_put_graph;
	}
	bt_value_put_ref(params);
	*out = g;
	return 0;

out_put_graph:
	bt_value_put_ref(params);
	bt_graph_put_ref(g);
	return rc;
}

/* Runs a graph until it ends, the probe has what it wants, or an error. */
static int nf_graph_drive(struct nf_pass *ps, bt_graph *g)
{
	for (;;) {
		bt_graph_run_once_status st = bt_graph_run_once(g);

		if (ps->rc) {
			bt_current_thread_clear_error();
			return ps->rc;
		}
		switch (st) {
		case BT_GRAPH_RUN_ONCE_STATUS_OK:
		case BT_GRAPH_RUN_ONCE_STATUS_AGAIN:
			if (ps->probe && ps->env_done)
				return 0;
			continue;
		case BT_GRAPH_RUN_ONCE_STATUS_END:
			return 0;
		case BT_GRAPH_RUN_ONCE_STATUS_MEMORY_ERROR:
			return nf_bt_error(ps->err, NF_ENOMEM, ps->p->dir, "out of memory reading the trace");
		default:
			return nf_bt_error(ps->err, NF_EFORMAT, ps->p->dir, "cannot read the trace");
		}
	}
}

static void nf_pass_release(struct nf_pass *ps)
{
	free(ps->classes);
	free(ps->u32s);
	free(ps->entries);
}

/* ---- public API ----------------------------------------------------------- */

/*
 * babeltrace2 opens every visible file of a trace directory. A session holds
 * plain files only: a symbolic link planted in it (to /etc/passwd, another
 * session, /dev/zero) is not followed, and a FIFO, device or directory (which
 * babeltrace2 would block on or skip silently) is refused.
 */
static int nf_check_plain_files(const char *dir, struct nf_error *err)
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
static bool nf_reader_forced_bt(void)
{
	const char *v = getenv("NFTRACE_READER");

	return v && strcmp(v, "babeltrace2") == 0;
}

/* Runs the graph up to the first stream, for the environment and the clock. */
static int nf_parser_probe(struct nf_parser *p, struct nf_error *err)
{
	struct nf_pass ps;
	bt_graph *g;
	int rc;

	memset(&ps, 0, sizeof(ps));
	ps.p = p;
	ps.probe = true;
	ps.err = err;
	rc = nf_graph_build(&ps, &g);
	if (rc)
		return rc;
	rc = nf_graph_drive(&ps, g);
	bt_graph_put_ref(g);
	nf_pass_release(&ps);
	if (!rc && !ps.env_done)
		rc = nf_error_set(err, NF_EFORMAT, "%s: no events (no stream data next to the metadata)",
				  p->dir);
	return rc;
}

/* ---- containment: babeltrace2 reads the trace in a child first ----------- */

/*
 * How long the child may read: 60 s, plus 1 s per MiB of the trace's files
 * (babeltrace2 reads about 100 MiB/s here, so this is a hang, not a slow
 * machine). NFTRACE_BT_TIMEOUT=SECONDS sets it.
 */
#define NF_BT_TIMEOUT_MIN_MS 60000.0
#define NF_BT_TIMEOUT_MS_PER_MIB 1000.0

/* The child's memory may grow by this much: babeltrace2 sizes an
 * array from a sequence length before reading it, and a foreign trace is not
 * pre-scanned. The graph runs here only after the child read within it. */
#define NF_BT_CHILD_MEM_MAX (4ull << 30)

static double nf_bt_timeout_ms(const char *dir)
{
	const char *v = getenv("NFTRACE_BT_TIMEOUT");
	double bytes = 0;
	struct dirent *de;
	DIR *d;

	if (v && *v) {
		char *end;
		double s = strtod(v, &end);

		if (*end == '\0' && s >= 0 && s < 1e9)
			return s * 1000.0;
	}
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		struct stat st;

		if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			bytes += (double)st.st_size;
	}
	if (d)
		closedir(d);
	return NF_BT_TIMEOUT_MIN_MS + bytes / (1024.0 * 1024.0) * NF_BT_TIMEOUT_MS_PER_MIB;
}

static const char *nf_signal_name(int sig, char *buf, size_t len)
{
	static const struct { int sig; const char *name; } names[] = {
		{ SIGSEGV, "SIGSEGV" }, { SIGABRT, "SIGABRT" }, { SIGBUS, "SIGBUS" },
		{ SIGFPE, "SIGFPE" }, { SIGILL, "SIGILL" }, { SIGTRAP, "SIGTRAP" },
		{ SIGKILL, "SIGKILL" }, { SIGSYS, "SIGSYS" }, { SIGXCPU, "SIGXCPU" },
		{ SIGXFSZ, "SIGXFSZ" }, { SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].sig == sig)
			return names[i].name;
	snprintf(buf, len, "signal %d", sig);
	return buf;
}

static double nf_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/*
 * Caps what the child may add to its private writable memory (RLIMIT_DATA:
 * brk and private mappings, Linux 4.7 on) at NF_BT_CHILD_MEM_MAX over what it
 * has now, which includes a sanitizer's shadow; the address space would not
 * do, a sanitizer's allocator maps inside a range it reserved at start.
 */
static void nf_bt_child_limit_memory(void)
{
	char buf[4096], *at;
	unsigned long long kb = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	struct rlimit rl;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	at = strstr(buf, "\nVmData:");
	if (!at || sscanf(at + 8, "%llu", &kb) != 1 || getrlimit(RLIMIT_DATA, &rl) != 0)
		return;
	unsigned long long want = kb * 1024ull + NF_BT_CHILD_MEM_MAX;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	if (rl.rlim_cur == RLIM_INFINITY || want < rl.rlim_cur) {
		rl.rlim_cur = (rlim_t)want;
		setrlimit(RLIMIT_DATA, &rl);
	}
}

/* What the child reports through its pipe: the outcome of its read. */
struct nf_bt_verdict {
	int code;
	char msg[NF_ERROR_MSG_MAX];
};

/*
 * The child: the same probe and whole read as this process would do, without
 * callbacks; writes its verdict and _exits (no atexit handlers, no stdio
 * flush). Its crash signals are the default ones (a crash handler installed
 * by a sanitizer or fuzzer would otherwise turn the crash into an exit), it
 * leaves no core file, dies with its parent, and reads and writes nothing
 * but /dev/null and its pipe.
 */
static _Noreturn void nf_bt_child(struct nf_parser *p, int wfd, pid_t parent)
{
	static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };
	struct rlimit no_core = { 0, 0 };
	struct sigaction dfl;
	struct nf_bt_verdict v;
	struct nf_error e;
	sigset_t none;
	int null;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	if (wfd <= STDERR_FILENO && (wfd = fcntl(wfd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1)) < 0)
		_exit(2);
	setrlimit(RLIMIT_CORE, &no_core);
	nf_bt_child_limit_memory();
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (size_t i = 0; i < sizeof(crash_sigs) / sizeof(crash_sigs[0]); i++)
		sigaction(crash_sigs[i], &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	/* Descriptors of the caller (a lock, a socket, a pipe someone reads to
	 * its end) are not held open by the child. */
	if (wfd > 3)
		close_range(3, (unsigned)wfd - 1, 0);
	close_range((unsigned)wfd + 1, ~0u, 0);

	nf_error_clear(&e);
	v.code = nf_parser_probe(p, &e);
	if (!v.code)
		v.code = nf_parser_run(p, NULL, &e);
	snprintf(v.msg, sizeof(v.msg), "%s", v.code ? e.msg : "");
	if (write(wfd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		_exit(2);
	_exit(0);
}

/*
 * Reads the trace in a child first (see the top of the file). Returns 0 when
 * the child read it whole (the graph then runs here), the child's own error
 * when babeltrace2 refused the trace (the same one this process would get),
 * NF_EFORMAT when the child crashed or ran out of time, NF_EIO when it could
 * not be started.
 */
static int nf_bt_contained(struct nf_parser *p, struct nf_error *err)
{
	struct nf_bt_verdict v;
	double timeout = nf_bt_timeout_ms(p->dir), deadline = nf_now_ms() + timeout;
	size_t got = 0;
	bool timed_out = false;
	int wait_errno = 0;
	pid_t parent = getpid(), pid;
	int fds[2], st = 0;
	char sig[32];

	if (pipe2(fds, O_CLOEXEC) != 0)
		return nf_error_set(err, NF_EIO, "%s: cannot start babeltrace2's trial read: %s", p->dir,
				    strerror(errno));
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return nf_error_set(err, NF_EIO, "%s: cannot start babeltrace2's trial read: %s", p->dir,
				    strerror(e));
	}
	if (pid == 0) {
		close(fds[0]);
		nf_bt_child(p, fds[1], parent);
	}
	close(fds[1]);
	/* The verdict, or end of file when the child is gone. */
	for (;;) {
		double left = deadline - nf_now_ms();
		struct pollfd pf = { fds[0], POLLIN, 0 };
		ssize_t n;
		int r;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		r = poll(&pf, 1, left > 1e9 ? 1000000000 : (int)left + 1);
		if (r < 0 && errno != EINTR) {
			wait_errno = errno;
			break;
		}
		if (r <= 0)
			continue;
		n = read(fds[0], (char *)&v + got, sizeof(v) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (timed_out || wait_errno)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (timed_out)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: babeltrace2 did not finish reading this trace in %g s (stopped; "
				    "NFTRACE_BT_TIMEOUT sets the bound): not a trace nftrace can read",
				    p->dir, timeout / 1000.0);
	if (wait_errno)
		return nf_error_set(err, NF_EIO, "%s: waiting for babeltrace2's trial read: %s", p->dir,
				    strerror(wait_errno));
	if (got == sizeof(v)) {
		v.msg[sizeof(v.msg) - 1] = '\0';
		if (v.code == 0)
			return 0;
		if (!v.msg[0])
			return nf_error_set(err, v.code, "%s: babeltrace2 cannot read this trace (%s)",
					    p->dir, nf_strerror(v.code));
		return nf_error_set(err, v.code, "%s", v.msg);
	}
	if (WIFSIGNALED(st))
		return nf_error_set(err, NF_EFORMAT,
				    "%s: babeltrace2 crashed (%s) reading this trace (or needed more than %llu "
				    "GiB of memory): not a trace nftrace can read", p->dir,
				    nf_signal_name(WTERMSIG(st), sig, sizeof(sig)), NF_BT_CHILD_MEM_MAX >> 30);
	/* Exited without a verdict: a sanitizer's or libc's own report of a crash
	 * or of memory it could not get. */
	return nf_error_set(err, NF_EFORMAT,
			    "%s: babeltrace2 crashed (exit %d) reading this trace (or needed more than %llu "
			    "GiB of memory): not a trace nftrace can read", p->dir,
			    WIFEXITED(st) ? WEXITSTATUS(st) : -1, NF_BT_CHILD_MEM_MAX >> 30);
}

/* Does dir hold stream data: a non-empty regular file next to the metadata? */
static bool nf_has_stream_data(const char *dir)
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
static int nf_own_session_info(struct nf_parser *p, const struct nf_prescan_meta *mt,
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
	if (!nf_has_stream_data(p->dir))
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
	rc = nf_check_plain_files(dir, err);
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
		if (mt && !nf_reader_forced_bt()) {
			p->fast = true;
			rc = nf_own_session_info(p, mt, err);
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

static int nf_fast_event(void *ctx, struct nf_event *ev, const char *stream, uint64_t packet)
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

static void nf_fast_discarded(void *ctx, uint64_t count)
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
	ps.replay_cb.entry = ps.cb->entry ? nf_pass_entry_cb : NULL;
	ps.replay_cb.finding = ps.cb->finding ? nf_pass_finding_cb : NULL;
	ps.replay = nf_logreplay_create(&ps.replay_cb);
	if (!ps.replay)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	if (p->fast) {
		struct nf_fr_sink sink = { &ps, nf_fast_event, nf_fast_discarded };

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
