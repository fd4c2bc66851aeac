/*
 * Reading a trace through libbabeltrace2 (source.ctf.fs ->
 * filter.utils.muxer -> a simple sink): every event message becomes a
 * struct nf_event by looking each schema field up by name in the payload (so
 * a trace rewritten by another tool still reads), and goes to the caller and
 * to the log replay (reader.c). Babeltrace's own errors are taken off the
 * thread and turned into NF_EFORMAT with their cause; nothing is printed.
 * Buffers for sequences are reused and bounded. Used for every trace that is
 * not our own session (after reader_child.c read it in a child), or for all
 * with NFTRACE_READER=babeltrace2.
 */
#include "reader_int.h"
#include "contract/errors.h"

#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "contract/capbuf.h"

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


/*
 * The base name of the first file babeltrace2 quotes in a message
 * ("... stream file `/x/s/events`" or "'/x/s/events'"), or "" (metadata and
 * directories are not named: the message already names the directory).
 */
static void quoted_file(const char *m, char *out, size_t len)
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
static size_t append_clean(char *msg, size_t len, size_t cap, const char *m)
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
static int fail_from_bt(struct nf_error *err, int code, const char *dir, const char *what)
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
				quoted_file(m, file, sizeof(file));
			if (len)
				len += (size_t)snprintf(msg + len, sizeof(msg) - len, "; ");
			if (len >= sizeof(msg))
				len = sizeof(msg) - 1;
			len = append_clean(msg, len, sizeof(msg), m);
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

int nf_find_plugin(const char *name, const bt_plugin **out, struct nf_error *err)
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

static bool fc_is_int(const bt_field_class *fc)
{
	return bt_field_class_type_is(bt_field_class_get_type(fc), BT_FIELD_CLASS_TYPE_INTEGER);
}

static uint64_t field_int(const bt_field *f)
{
	bt_field_class_type t = bt_field_get_class_type(f);

	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return bt_field_integer_unsigned_get_value(f);
	return (uint64_t)bt_field_integer_signed_get_value(f);
}

/* A member's index by name; "_name" also matches (TSDL's escape for identifiers). */
static int64_t member_index(const bt_field_class *st, const char *name)
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

static const bt_field_class *member_class(const bt_field_class *st, int64_t idx)
{
	return bt_field_class_structure_member_borrow_field_class_const(
		bt_field_class_structure_borrow_member_by_index_const(st, (uint64_t)idx));
}

/* Resolves an event class against the schema: which member holds which field. */
static int class_resolve(struct nf_pass *ps, const bt_event_class *cls, struct nf_class_map *m)
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
		int64_t idx = member_index(payload, fd->name);
		const bt_field_class *fc, *el;
		bool ok;

		if (idx < 0)
			continue;
		fc = member_class(payload, idx);
		switch (fd->type) {
		case NF_FT_STR:
			ok = bt_field_class_get_type(fc) == BT_FIELD_CLASS_TYPE_STRING;
			break;
		case NF_FT_U32SEQ:
			ok = bt_field_class_type_is(bt_field_class_get_type(fc), BT_FIELD_CLASS_TYPE_ARRAY) &&
			     fc_is_int(bt_field_class_array_borrow_element_field_class_const(fc));
			break;
		case NF_FT_ENTRIES:
			ok = bt_field_class_type_is(bt_field_class_get_type(fc), BT_FIELD_CLASS_TYPE_ARRAY);
			el = ok ? bt_field_class_array_borrow_element_field_class_const(fc) : NULL;
			ok = ok && bt_field_class_get_type(el) == BT_FIELD_CLASS_TYPE_STRUCTURE;
			for (int k = 0; ok && k < NF_EM_COUNT; k++) {
				m->entry_member[k] = member_index(el, nf_entry_member_names[k]);
				if (m->entry_member[k] >= 0 && !fc_is_int(member_class(el, m->entry_member[k])))
					ok = false;
			}
			break;
		default:
			ok = fc_is_int(fc);
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

static int class_lookup(struct nf_pass *ps, const bt_event_class *cls,
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
	if (nf_array_reserve((void **)&ps->classes, &ps->cap_classes, ps->n_classes + 1,
			     sizeof(*ps->classes), 32, NF_READER_MAX_CLASSES))
		return nf_error_set(ps->err, NF_ENOMEM, "out of memory for event classes");
	rc = class_resolve(ps, cls, &ps->classes[ps->n_classes]);
	if (rc)
		return rc;
	*out = &ps->classes[ps->n_classes++];
	return 0;
}

static int read_array(struct nf_pass *ps, const struct nf_class_map *m,
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
			ps->u32s[i] = (uint32_t)field_int(
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
				v[k] = field_int(bt_field_structure_borrow_member_field_by_index_const(
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
static int decode_event(struct nf_pass *ps, const bt_message *msg, struct nf_event *ev,
			   bool *known, uint64_t event_index)
{
	const bt_event *e = bt_message_event_borrow_event_const(msg);
	const bt_field *payload = bt_event_borrow_payload_field_const(e);
	const struct nf_class_map *m = NULL;
	const struct nf_event_desc *d;
	int rc;

	rc = class_lookup(ps, bt_event_borrow_class_const(e), &m);
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
			rc = read_array(ps, m, fd, f, &ev->f[i - 1], event_index);
			if (rc)
				return rc;
			if (fd->type == NF_FT_U32SEQ)
				ev->u32s = ps->u32s;
			else
				ev->entries = ps->entries;
			break;
		default:
			ev->f[i] = field_int(f);
			break;
		}
	}
	return 0;
}

/* ---- session environment ----------------------------------------------- */

static int env_int(const bt_trace *t, const char *key, bool required, uint64_t *out)
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

static int env_str(const bt_trace *t, const char *key, const char **out, struct nf_error *err)
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

static int read_env(struct nf_pass *ps, const bt_trace *t)
{
	struct nf_parser *p = ps->p;
	struct nf_session_info *in = &p->info;
	uint64_t sv = 0, gt = 0;
	int rc;

	if (env_int(t, "schema_version", true, &sv) || env_int(t, "cpu_frequency", true, &in->cpu_frequency) ||
	    in->cpu_frequency == 0)
		return nf_error_set(ps->err, NF_EFORMAT,
				    "%s: not an nftrace session (no schema_version or cpu_frequency in the trace environment)",
				    p->dir);
	in->schema_version = (int64_t)sv;
	env_int(t, "seed", false, &in->seed);
	env_int(t, "start_ticks", false, &in->start_ticks);
	env_int(t, "ground_truth", false, &gt);
	in->ground_truth = gt != 0;
	rc = env_str(t, "tool_version", &in->tool_version, ps->err);
	if (!rc)
		rc = env_str(t, "source", &in->source, ps->err);
	if (!rc)
		rc = env_str(t, "mode", &in->mode, ps->err);
	if (!rc)
		rc = env_str(t, "host", &in->host, ps->err);
	if (!rc)
		rc = env_str(t, "import_note", &in->import_note, ps->err);
	return rc;
}

/* ---- the graph ---------------------------------------------------------- */

static const char *path_basename(const char *path)
{
	const char *s;

	if (!path)
		return nf_empty;
	s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* A packet begins: remember its packet_seq_num (else its ordinal) for its stream. */
static void pass_packet(struct nf_pass *ps, const bt_packet *pk)
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
		int64_t m = member_index(bt_field_borrow_class_const(ctx), "packet_seq_num");

		if (m >= 0) {
			const bt_field *f = bt_field_structure_borrow_member_field_by_index_const(
				ctx, (uint64_t)m);

			if (bt_field_class_type_is(bt_field_get_class_type(f), BT_FIELD_CLASS_TYPE_INTEGER))
				ps->streams[i].packet = field_int(f);
		}
	}
}

static uint64_t pass_packet_of(const struct nf_pass *ps, const bt_stream *st)
{
	for (size_t i = 0; i < ps->n_streams; i++)
		if (ps->streams[i].stream == st)
			return ps->streams[i].packet;
	return NF_PACKET_UNKNOWN;
}

static int pass_event(struct nf_pass *ps, const bt_message *msg)
{
	struct nf_parser *p = ps->p;
	uint64_t index = p->stats.events++;
	struct nf_event ev;
	bool known;
	int rc;

	rc = decode_event(ps, msg, &ev, &known, index);
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

	return nf_pass_replay(ps, &ev, path_basename(bt_stream_get_name(bst)),
			      pass_packet_of(ps, bst), index);
}

/*
 * What the native reader needs from the trace class: the clock (as
 * babeltrace2 normalised its offset) and which stream classes
 * the metadata defines. Without a default clock the session is left to
 * babeltrace2.
 */
static void read_trace_class(struct nf_parser *p, const bt_stream *st)
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

static int pass_message(struct nf_pass *ps, const bt_message *msg)
{
	uint64_t n;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		if (ps->probe && !ps->env_done) {
			const bt_stream *st = bt_message_stream_beginning_borrow_stream_const(msg);

			ps->env_done = true;
			read_trace_class(ps->p, st);
			return read_env(ps, bt_stream_borrow_trace_const(st));
		}
		return 0;
	case BT_MESSAGE_TYPE_PACKET_BEGINNING:
		if (!ps->probe)
			pass_packet(ps, bt_message_packet_beginning_borrow_packet_const(msg));
		return 0;
	case BT_MESSAGE_TYPE_EVENT:
		return ps->probe ? 0 : pass_event(ps, msg);
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
sink_consume(bt_message_iterator *it, void *data)
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
			ps->rc = pass_message(ps, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return ps->rc ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR
		      : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* Builds source.ctf.fs -> filter.utils.muxer -> simple sink for p->dir. */
int nf_graph_build(struct nf_pass *ps, bt_graph **out)
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
		rc = fail_from_bt(ps->err, NF_EFORMAT, p->dir, "cannot open the CTF trace");
		goto out_put_graph;
	}
	if (bt_graph_add_filter_component(g, mux_cls, "muxer", NULL, BT_LOGGING_LEVEL_NONE,
					  &mux) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_simple_sink_component(g, "sink", NULL, sink_consume, NULL, ps,
					       &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		rc = fail_from_bt(ps->err, NF_ENOMEM, p->dir, "cannot build the babeltrace2 graph");
		goto out_put_graph;
	}
	/* One muxer input per stream: the muxer adds a free input port after each connection. */
	n_out = bt_component_source_get_output_port_count(src);
	for (uint64_t i = 0; i < n_out; i++) {
		const bt_port_output *op = bt_component_source_borrow_output_port_by_index_const(src, i);
		const bt_port_input *ip = bt_component_filter_borrow_input_port_by_index_const(
			mux, bt_component_filter_get_input_port_count(mux) - 1);

		if (bt_graph_connect_ports(g, op, ip, NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
			rc = fail_from_bt(ps->err, NF_EFORMAT, p->dir, "cannot connect a stream");
			goto out_put_graph;
		}
	}
	if (bt_graph_connect_ports(g, bt_component_filter_borrow_output_port_by_index_const(mux, 0),
				   bt_component_sink_borrow_input_port_by_index_const(sink, 0),
				   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK) {
		rc = fail_from_bt(ps->err, NF_EFORMAT, p->dir, "cannot connect the muxer");
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
int nf_graph_drive(struct nf_pass *ps, bt_graph *g)
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
			return fail_from_bt(ps->err, NF_ENOMEM, ps->p->dir, "out of memory reading the trace");
		default:
			return fail_from_bt(ps->err, NF_EFORMAT, ps->p->dir, "cannot read the trace");
		}
	}
}

void nf_pass_release(struct nf_pass *ps)
{
	free(ps->classes);
	free(ps->u32s);
	free(ps->entries);
}

/* Runs the graph up to the first stream, for the environment and the clock. */
int nf_parser_probe(struct nf_parser *p, struct nf_error *err)
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
