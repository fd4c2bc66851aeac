/*
 * nfb_record_bt: the peer of `nftrace record` in the record benchmark. Runs a
 * scenario through the same engine (libnfence) and writes every event it
 * emits through babeltrace2's own CTF writer library (libbabeltrace2-ctf-writer)
 * instead of ours: same events, same fields, packets flushed at about the same
 * size (256 KiB, as ours), files fsync'ed at the end as our recorder does.
 *
 *   nfb_record_bt OUTDIR SCENARIO          babeltrace2's CTF writer
 *   nfb_record_bt --null SCENARIO          the engine alone, events dropped
 *
 * Prints "operations events" on stdout.
 *
 * Debian ships the library and its .pc file but not its headers, so the few
 * functions of its public API used here are declared below (babeltrace2 2.0
 * CTF writer API, <babeltrace2-ctf-writer/...>).
 */
#include "nftrace/nfence.h"
#include "scenario.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- babeltrace2 CTF writer API (declarations of the library's functions) ---- */
struct bt_ctf_writer;
struct bt_ctf_clock;
struct bt_ctf_stream_class;
struct bt_ctf_stream;
struct bt_ctf_event_class;
struct bt_ctf_event;
struct bt_ctf_field_type;
struct bt_ctf_field;

struct bt_ctf_writer *bt_ctf_writer_create(const char *path);
struct bt_ctf_stream *bt_ctf_writer_create_stream(struct bt_ctf_writer *writer,
						  struct bt_ctf_stream_class *stream_class);
int bt_ctf_writer_add_environment_field(struct bt_ctf_writer *writer, const char *name,
					const char *value);
int bt_ctf_writer_add_clock(struct bt_ctf_writer *writer, struct bt_ctf_clock *clock);
void bt_ctf_writer_flush_metadata(struct bt_ctf_writer *writer);
struct bt_ctf_clock *bt_ctf_clock_create(const char *name);
int bt_ctf_clock_set_frequency(struct bt_ctf_clock *clock, uint64_t freq);
int bt_ctf_clock_set_time(struct bt_ctf_clock *clock, int64_t time);
struct bt_ctf_stream_class *bt_ctf_stream_class_create(const char *name);
int bt_ctf_stream_class_set_clock(struct bt_ctf_stream_class *stream_class,
				  struct bt_ctf_clock *clock);
int bt_ctf_stream_class_add_event_class(struct bt_ctf_stream_class *stream_class,
					struct bt_ctf_event_class *event_class);
struct bt_ctf_event_class *bt_ctf_event_class_create(const char *name);
int bt_ctf_event_class_add_field(struct bt_ctf_event_class *event_class,
				 struct bt_ctf_field_type *type, const char *name);
struct bt_ctf_field_type *bt_ctf_field_type_integer_create(unsigned int size);
struct bt_ctf_field_type *bt_ctf_field_type_string_create(void);
struct bt_ctf_field_type *bt_ctf_field_type_structure_create(void);
int bt_ctf_field_type_structure_add_field(struct bt_ctf_field_type *struct_type,
					  struct bt_ctf_field_type *field_type,
					  const char *field_name);
struct bt_ctf_field_type *bt_ctf_field_type_sequence_create(struct bt_ctf_field_type *element_type,
							    const char *length_name);
struct bt_ctf_event *bt_ctf_event_create(struct bt_ctf_event_class *event_class);
struct bt_ctf_field *bt_ctf_event_get_payload(struct bt_ctf_event *event, const char *name);
int bt_ctf_field_integer_unsigned_set_value(struct bt_ctf_field *integer, uint64_t value);
int bt_ctf_field_string_set_value(struct bt_ctf_field *string_field, const char *value);
int bt_ctf_field_sequence_set_length(struct bt_ctf_field *field, struct bt_ctf_field *length_field);
struct bt_ctf_field *bt_ctf_field_sequence_get_field(struct bt_ctf_field *field, uint64_t index);
struct bt_ctf_field *bt_ctf_field_structure_get_field_by_index(struct bt_ctf_field *field,
								uint64_t index);
int bt_ctf_stream_append_event(struct bt_ctf_stream *stream, struct bt_ctf_event *event);
int bt_ctf_stream_flush(struct bt_ctf_stream *stream);
void bt_ctf_object_put_ref(void *obj);

/* ---- the sink ---- */

#define PACKET_BYTES (256u * 1024u)

struct bt_sink {
	struct bt_ctf_writer *writer;
	struct bt_ctf_clock *clock;
	struct bt_ctf_stream *streams[NF_STREAM_COUNT];
	struct bt_ctf_event_class *classes[NF_EV_COUNT];
	size_t pending[NF_STREAM_COUNT];   /* bytes appended since the last flush */
	uint64_t cpu_frequency;
	uint64_t events;
	int failed;
};

static char fname[NF_EVENT_MAX_FIELDS][72];

static const char *field_name(uint32_t f, const char *name)
{
	snprintf(fname[f], sizeof(fname[f]), "_%s", name);
	return fname[f];
}

static void die(const char *what)
{
	fprintf(stderr, "nfb_record_bt: %s failed\n", what);
	exit(1);
}

static void bt_sink_init(struct bt_sink *s, const char *dir, uint64_t freq)
{
	static const char *const names[] = { "events", "truth", "kernel" };
	struct bt_ctf_stream_class *sc[NF_STREAM_COUNT];
	struct bt_ctf_field_type *u[65] = { 0 }, *str, *entry;

	_Static_assert(sizeof(names) / sizeof(names[0]) == NF_STREAM_COUNT, "stream names");
	memset(s, 0, sizeof(*s));
	s->cpu_frequency = freq;
	s->writer = bt_ctf_writer_create(dir);
	if (!s->writer)
		die("bt_ctf_writer_create");
	bt_ctf_writer_add_environment_field(s->writer, "domain", "nftrace");
	s->clock = bt_ctf_clock_create("cpu");
	if (!s->clock || bt_ctf_clock_set_frequency(s->clock, freq) ||
	    bt_ctf_writer_add_clock(s->writer, s->clock))
		die("clock");
	for (unsigned b = 8; b <= 64; b *= 2)
		u[b] = bt_ctf_field_type_integer_create(b);
	str = bt_ctf_field_type_string_create();
	entry = bt_ctf_field_type_structure_create();
	bt_ctf_field_type_structure_add_field(entry, u[64], "fence_value");
	bt_ctf_field_type_structure_add_field(entry, u[32], "hnative_fence");
	bt_ctf_field_type_structure_add_field(entry, u[32], "operation_type");
	bt_ctf_field_type_structure_add_field(entry, u[64], "reserved0");
	bt_ctf_field_type_structure_add_field(entry, u[64], "fence_observed_gpu_timestamp");
	bt_ctf_field_type_structure_add_field(entry, u[64], "reserved1");
	bt_ctf_field_type_structure_add_field(entry, u[64], "fence_end_gpu_timestamp");
	for (int i = 0; i < NF_STREAM_COUNT; i++) {
		sc[i] = bt_ctf_stream_class_create(names[i]);
		if (!sc[i] || bt_ctf_stream_class_set_clock(sc[i], s->clock))
			die("stream class");
	}
	for (uint32_t id = 0; id < NF_EV_COUNT; id++) {
		const struct nf_event_desc *d = nf_event_desc(id);
		struct bt_ctf_event_class *ec = bt_ctf_event_class_create(d->name);

		if (!ec)
			die("bt_ctf_event_class_create");
		for (uint32_t f = 0; f < d->n_fields; f++) {
			const struct nf_field_desc *fd = &d->fields[f];
			struct bt_ctf_field_type *t = NULL, *seq = NULL;

			switch (fd->type) {
			case NF_FT_U8: t = u[8]; break;
			case NF_FT_U16: t = u[16]; break;
			case NF_FT_U32: t = u[32]; break;
			case NF_FT_U64: t = u[64]; break;
			case NF_FT_STR: t = str; break;
			case NF_FT_U32SEQ:
				seq = bt_ctf_field_type_sequence_create(u[32], field_name(f - 1, d->fields[f - 1].name));
				break;
			case NF_FT_ENTRIES:
				seq = bt_ctf_field_type_sequence_create(entry, field_name(f - 1, d->fields[f - 1].name));
				break;
			}
			if (bt_ctf_event_class_add_field(ec, seq ? seq : t, field_name(f, fd->name)))
				die("bt_ctf_event_class_add_field");
			if (seq)
				bt_ctf_object_put_ref(seq);
		}
		if (bt_ctf_stream_class_add_event_class(sc[d->stream], ec))
			die("bt_ctf_stream_class_add_event_class");
		s->classes[id] = ec;
	}
	for (int i = 0; i < NF_STREAM_COUNT; i++) {
		s->streams[i] = bt_ctf_writer_create_stream(s->writer, sc[i]);
		if (!s->streams[i])
			die("bt_ctf_writer_create_stream");
		bt_ctf_object_put_ref(sc[i]);
	}
	for (unsigned b = 8; b <= 64; b *= 2)
		bt_ctf_object_put_ref(u[b]);
	bt_ctf_object_put_ref(str);
	bt_ctf_object_put_ref(entry);
}

static void set_u(struct bt_ctf_field *parent_seq_or_struct, uint64_t idx, uint64_t v)
{
	struct bt_ctf_field *f = bt_ctf_field_structure_get_field_by_index(parent_seq_or_struct, idx);

	bt_ctf_field_integer_unsigned_set_value(f, v);
	bt_ctf_object_put_ref(f);
}

static int bt_sink_emit(void *ctx, const struct nf_event *ev)
{
	struct bt_sink *s = ctx;
	const struct nf_event_desc *d = nf_event_desc(ev->id);
	struct bt_ctf_event *e = bt_ctf_event_create(s->classes[ev->id]);
	size_t bytes = 12;

	if (!e)
		die("bt_ctf_event_create");
	for (uint32_t f = 0; f < d->n_fields; f++) {
		struct bt_ctf_field *p = bt_ctf_event_get_payload(e, field_name(f, d->fields[f].name));
		uint64_t n = f ? ev->f[f - 1] : 0;

		switch (d->fields[f].type) {
		case NF_FT_U8: case NF_FT_U16: case NF_FT_U32: case NF_FT_U64:
			bt_ctf_field_integer_unsigned_set_value(p, ev->f[f]);
			bytes += 8;
			break;
		case NF_FT_STR:
			bt_ctf_field_string_set_value(p, ev->str ? ev->str : "");
			bytes += strlen(ev->str ? ev->str : "") + 1;
			break;
		case NF_FT_U32SEQ:
		case NF_FT_ENTRIES: {
			struct bt_ctf_field *len = bt_ctf_event_get_payload(e, field_name(f - 1, d->fields[f - 1].name));

			bt_ctf_field_sequence_set_length(p, len);
			bt_ctf_object_put_ref(len);
			for (uint64_t i = 0; i < n; i++) {
				struct bt_ctf_field *el = bt_ctf_field_sequence_get_field(p, i);

				if (d->fields[f].type == NF_FT_U32SEQ) {
					bt_ctf_field_integer_unsigned_set_value(el, ev->u32s[i]);
					bytes += 4;
				} else {
					const struct nf_log_entry *le = &ev->entries[i];

					set_u(el, 0, le->fence_value);
					set_u(el, 1, le->hnative_fence);
					set_u(el, 2, le->operation_type);
					set_u(el, 3, le->reserved0);
					set_u(el, 4, le->fence_observed_gpu_timestamp);
					set_u(el, 5, le->reserved1);
					set_u(el, 6, le->fence_end_gpu_timestamp);
					bytes += NF_LOG_ENTRY_SIZE;
				}
				bt_ctf_object_put_ref(el);
			}
			break;
		}
		}
		bt_ctf_object_put_ref(p);
	}
	/* The clock's time is in nanoseconds from its origin. */
	bt_ctf_clock_set_time(s->clock, (int64_t)((unsigned __int128)ev->ts * 1000000000u / s->cpu_frequency));
	if (bt_ctf_stream_append_event(s->streams[d->stream], e))
		die("bt_ctf_stream_append_event");
	bt_ctf_object_put_ref(e);
	s->events++;
	s->pending[d->stream] += bytes;
	if (s->pending[d->stream] >= PACKET_BYTES) {
		if (bt_ctf_stream_flush(s->streams[d->stream]))
			die("bt_ctf_stream_flush");
		s->pending[d->stream] = 0;
	}
	return 0;
}

static int null_emit(void *ctx, const struct nf_event *ev)
{
	(void)ev;
	((struct bt_sink *)ctx)->events++;
	return 0;
}

/* Syncs every file the writer left in DIR, as our recorder syncs its files. */
static void sync_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4096];

	if (!d)
		die("opendir");
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0 || fsync(fd) != 0)
			die("fsync");
		close(fd);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	struct nf_scenario *sc = NULL;
	struct nf_runtime_config cfg;
	struct nf_runtime_stats rs;
	struct nf_error err;
	struct bt_sink s;
	nf_runtime *rt = NULL;
	bool null = argc == 3 && !strcmp(argv[1], "--null");

	if (argc != 3) {
		fprintf(stderr, "usage: nfb_record_bt OUTDIR|--null SCENARIO\n");
		return 2;
	}
	nf_error_clear(&err);
	if (nf_scenario_load(argv[2], &sc, &err)) {
		fprintf(stderr, "nfb_record_bt: %s\n", err.msg);
		return 1;
	}
	nf_runtime_config_init(&cfg);
	nf_scenario_apply_settings(sc, &cfg);
	if (null)
		memset(&s, 0, sizeof(s));
	else
		bt_sink_init(&s, argv[1], cfg.cpu_frequency);
	cfg.sink.ctx = &s;
	cfg.sink.emit = null ? null_emit : bt_sink_emit;
	if (nf_runtime_create(&cfg, &rt, &err) || nf_scenario_run(sc, rt, NULL, &err) ||
	    nf_runtime_finish(rt, &err)) {
		fprintf(stderr, "nfb_record_bt: %s\n", err.msg);
		return 1;
	}
	nf_runtime_get_stats(rt, &rs);
	nf_runtime_destroy(rt);
	nf_scenario_destroy(sc);
	if (!null) {
		for (int i = 0; i < NF_STREAM_COUNT; i++) {
			if (bt_ctf_stream_flush(s.streams[i]) && i == 0)
				die("bt_ctf_stream_flush");
			bt_ctf_object_put_ref(s.streams[i]);
		}
		for (uint32_t id = 0; id < NF_EV_COUNT; id++)
			bt_ctf_object_put_ref(s.classes[id]);
		bt_ctf_writer_flush_metadata(s.writer);
		bt_ctf_object_put_ref(s.clock);
		bt_ctf_object_put_ref(s.writer);
		sync_dir(argv[1]);
	}
	printf("%llu %llu\n", (unsigned long long)rs.operations, (unsigned long long)s.events);
	return 0;
}
