/*
 * The kernel event decoder: one libtraceevent record in, kernel events of
 * schemas/events.def out (through the CTF writer). Event formats are looked up
 * once per event id and their fields cached; every field read is checked
 * against the record's size, because the records come from files and pages we
 * did not write. Strings that repeat are interned (KernelString).
 */
#include "kernel_int.h"
#include "contract/errors.h"
#include "contract/util_hash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what untrusted input can make us keep. */
#define NF_KD_MAX_STRINGS (1u << 20)
#define NF_KD_MAX_STRLEN 4096u
#define NF_KD_EVENT_IDS 65536u  /* common_type is 16 bits */

enum kd_kind {
	KD_UNKNOWN = 0, KD_RAW, KD_FENCE, KD_SWITCH, KD_WAKEUP, KD_GPU, KD_VBLANK, KD_PRINT, KD_FLIP,
	KD_XE_FENCE,    /* xe_hw_fence_create: kept raw, its fence's context remembered */
};

/* The fields a GPU job event may have, looked up by name (any may be absent). */
enum kd_gpu_field {
	KG_JOB, KG_CONTEXT, KG_SEQNO, KG_FENCE, KG_RING, KG_DEP_CONTEXT, KG_DEP_SEQNO,
	KG_CLASS, KG_INSTANCE, KG_COMPLETED, KG_DEV, KG_CLIENT, KG_QUEUE, KG_COUNT
};

/* KernelGpuJob kinds of xe (schemas/events.def) and drm_sched's unschedulable. */
enum { KD_XE_EXEC = 12, KD_XE_RUN = 13, KD_XE_DONE = 14, KD_XE_QUEUE = 15, KD_UNSCHEDULABLE = 16 };

/* Fences of xe jobs remembered at most (a map each; past it they start over). */
#define NF_KD_MAX_XE_FENCES (1u << 16)

/* What we know about one event id (the format's fields we read). */
struct kd_event {
	enum kd_kind kind;
	uint32_t ev_id;                   /* nf_event_id for KD_FENCE */
	struct tep_event *event;
	uint32_t name_id;                 /* interned "system:event" (KD_RAW) */
	struct tep_format_field *f[KG_COUNT > 8 ? KG_COUNT : 8];
	uint32_t gpu_kind;                /* KernelGpuJob.kind (KD_GPU) */
};

struct kd_str {
	char *s;
	uint32_t id;
};

struct nf_kdecoder {
	struct tep_handle *tep;
	struct nf_ctf_writer *w;
	struct nf_kclock_map map;
	char where[256];
	struct kd_event **events;          /* [event id] */
	/* xe: a job's hardware fence (its address) -> the fence's context
	 * (xe_hw_fence_create), and -> its exec queue's GuC id << 32 | its seqno
	 * (the job's events) */
	struct nf_u64map xe_fence_ctx, xe_fence_queue;
	struct kd_str *strs;               /* open addressing on the string */
	size_t str_cap, n_strs;
	struct trace_seq seq;
	uint64_t last_ticks;
	bool any;
	struct nf_kernel_stats stats;
	uint8_t *named;                    /* bit per pid: its cmdline name was sent (KernelTask) */
};

#define NF_KD_MAX_PID (1u << 22)          /* the kernel's PID_MAX_LIMIT */

static uint64_t kd_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static int kd_emit(struct nf_kdecoder *d, struct nf_event *ev, struct nf_error *err)
{
	int rc = nf_ctf_writer_emit(d->w, ev);

	if (rc)
		return nf_error_set(err, rc, "%s", nf_ctf_writer_error(d->w)->msg);
	return 0;
}

/* The session ticks of a kernel time, or false when it is before the origin. */
static bool kd_ticks(struct nf_kdecoder *d, uint64_t ns, uint64_t *ticks)
{
	if (ns < d->map.origin_ns)
		return false;
	unsigned __int128 t = (unsigned __int128)(ns - d->map.origin_ns) * d->map.cpu_frequency /
			      1000000000u;
	*ticks = d->map.start_ticks + (uint64_t)t;
	/* Records come merged in time order; a clock that is not monotonic across
	 * CPUs (trace_clock local) must still give a stream that never goes back. */
	if (d->any && *ticks < d->last_ticks)
		*ticks = d->last_ticks;
	d->last_ticks = *ticks;
	d->any = true;
	return true;
}

static int kd_strs_grow(struct nf_kdecoder *d)
{
	size_t ncap = d->str_cap ? d->str_cap * 2 : 1024;
	struct kd_str *n = calloc(ncap, sizeof(*n));

	if (!n)
		return NF_ENOMEM;
	for (size_t i = 0; i < d->str_cap; i++) {
		if (!d->strs[i].s)
			continue;
		size_t j = kd_hash(d->strs[i].s, strlen(d->strs[i].s)) & (ncap - 1);

		while (n[j].s)
			j = (j + 1) & (ncap - 1);
		n[j] = d->strs[i];
	}
	free(d->strs);
	d->strs = n;
	d->str_cap = ncap;
	return 0;
}

/* The id of the string s[0..n) (NUL bytes end it), emitting a KernelString the first time. */
static int kd_intern(struct nf_kdecoder *d, const char *s, size_t n, uint64_t ticks, uint32_t *id,
		     struct nf_error *err)
{
	n = strnlen(s, n > NF_KD_MAX_STRLEN ? NF_KD_MAX_STRLEN : n);
	if ((d->n_strs + 1) * 2 > d->str_cap && kd_strs_grow(d))
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", d->where);
	size_t j = kd_hash(s, n) & (d->str_cap - 1);

	while (d->strs[j].s) {
		if (strncmp(d->strs[j].s, s, n) == 0 && d->strs[j].s[n] == '\0') {
			*id = d->strs[j].id;
			return 0;
		}
		j = (j + 1) & (d->str_cap - 1);
	}
	if (d->n_strs >= NF_KD_MAX_STRINGS)
		return nf_error_set(err, NF_ENOMEM, "%s: more than %u distinct names", d->where,
				    NF_KD_MAX_STRINGS);
	char *copy = strndup(s, n);
	if (!copy)
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", d->where);
	d->strs[j].s = copy;
	d->strs[j].id = (uint32_t)++d->n_strs;
	*id = d->strs[j].id;

	struct nf_event ev = { .id = NF_EV_KERNEL_STRING, .ts = ticks, .str = copy };
	ev.f[NFF_KERNEL_STRING_id] = *id;
	return kd_emit(d, &ev, err);
}

struct nf_kdecoder *nf_kdecoder_create(struct tep_handle *tep, struct nf_ctf_writer *w,
				       const struct nf_kclock_map *map, uint32_t cpus,
				       uint32_t source, const char *clock, const char *where,
				       struct nf_error *err)
{
	struct nf_kdecoder *d = calloc(1, sizeof(*d));

	if (!d) {
		nf_error_set(err, NF_ENOMEM, "%s: out of memory", where);
		return NULL;
	}
	d->tep = tep;
	d->w = w;
	d->map = *map;
	snprintf(d->where, sizeof(d->where), "%s", where);
	d->events = calloc(NF_KD_EVENT_IDS, sizeof(*d->events));
	if (!d->events || kd_strs_grow(d)) {
		nf_error_set(err, NF_ENOMEM, "%s: out of memory", where);
		nf_kdecoder_destroy(d);
		return NULL;
	}
	trace_seq_init(&d->seq);
	d->stats.cpus = cpus;
	d->xe_fence_ctx.max_keys = d->xe_fence_queue.max_keys = NF_KD_MAX_XE_FENCES;

	struct nf_event ev = { .id = NF_EV_KERNEL_START, .ts = map->start_ticks, .str = clock };
	ev.f[NFF_KERNEL_START_origin_ns] = map->origin_ns;
	ev.f[NFF_KERNEL_START_cpus] = cpus;
	ev.f[NFF_KERNEL_START_source] = source;
	d->last_ticks = map->start_ticks;
	d->any = true;
	if (kd_emit(d, &ev, err)) {
		nf_kdecoder_destroy(d);
		return NULL;
	}
	return d;
}

void nf_kdecoder_destroy(struct nf_kdecoder *d)
{
	if (!d)
		return;
	if (d->events)
		for (size_t i = 0; i < NF_KD_EVENT_IDS; i++)
			free(d->events[i]);
	free(d->events);
	for (size_t i = 0; i < d->str_cap; i++)
		free(d->strs[i].s);
	free(d->strs);
	free(d->named);
	nf_u64map_free(&d->xe_fence_ctx);
	nf_u64map_free(&d->xe_fence_queue);
	if (d->seq.buffer)
		trace_seq_destroy(&d->seq);
	free(d);
}

void nf_kdecoder_get_stats(const struct nf_kdecoder *d, struct nf_kernel_stats *st)
{
	*st = d->stats;
}

static const struct {
	const char *system, *name;
	enum kd_kind kind;
	uint32_t ev_id;
} kd_known[] = {
	{ "dma_fence", "dma_fence_init", KD_FENCE, NF_EV_KERNEL_DMA_FENCE_INIT },
	{ "dma_fence", "dma_fence_emit", KD_FENCE, NF_EV_KERNEL_DMA_FENCE_EMIT },
	{ "dma_fence", "dma_fence_enable_signal", KD_FENCE, NF_EV_KERNEL_DMA_FENCE_ENABLE_SIGNAL },
	{ "dma_fence", "dma_fence_signaled", KD_FENCE, NF_EV_KERNEL_DMA_FENCE_SIGNALED },
	{ "dma_fence", "dma_fence_wait_start", KD_FENCE, NF_EV_KERNEL_DMA_FENCE_WAIT_START },
	{ "dma_fence", "dma_fence_wait_end", KD_FENCE, NF_EV_KERNEL_DMA_FENCE_WAIT_END },
	{ "dma_fence", "dma_fence_destroy", KD_FENCE, NF_EV_KERNEL_DMA_FENCE_DESTROY },
	{ "sched", "sched_switch", KD_SWITCH, 0 },
	{ "sched", "sched_wakeup", KD_WAKEUP, 0 },
	{ "drm", "drm_vblank_event", KD_VBLANK, 0 },
	/* legacy page flips (i915 before atomic modesetting): KernelFlip.kind */
	{ "i915", "i915_flip_request", KD_FLIP, 1 },
	{ "i915", "i915_flip_complete", KD_FLIP, 2 },
	{ "ftrace", "print", KD_PRINT, 0 },
	/* GPU jobs: ev_id is KernelGpuJob.kind (schemas/events.def). The
	 * scheduler's events were renamed in Linux 6.16 (queue/run/done/add_dep). */
	{ "amdgpu", "amdgpu_cs_ioctl", KD_GPU, 1 },
	{ "amdgpu", "amdgpu_sched_run_job", KD_GPU, 2 },
	{ "gpu_scheduler", "drm_sched_job", KD_GPU, 3 },
	{ "gpu_scheduler", "drm_sched_job_queue", KD_GPU, 3 },
	{ "gpu_scheduler", "drm_run_job", KD_GPU, 4 },
	{ "gpu_scheduler", "drm_sched_job_run", KD_GPU, 4 },
	{ "gpu_scheduler", "drm_sched_process_job", KD_GPU, 5 },
	{ "gpu_scheduler", "drm_sched_job_done", KD_GPU, 5 },
	{ "gpu_scheduler", "drm_sched_job_wait_dep", KD_GPU, 6 },
	{ "gpu_scheduler", "drm_sched_job_add_dep", KD_GPU, 6 },
	{ "gpu_scheduler", "drm_sched_job_unschedulable", KD_GPU, KD_UNSCHEDULABLE },
	/* Intel xe (drivers/gpu/drm/xe/xe_trace.h): a job pushed to the scheduler,
	 * run (handed to the GuC), its hardware fence signaled; the exec queues
	 * (any xe_exec_queue_* event: see kd_event_for) name the rings. */
	{ "xe", "xe_sched_job_exec", KD_GPU, KD_XE_EXEC },
	{ "xe", "xe_sched_job_run", KD_GPU, KD_XE_RUN },
	{ "xe", "xe_hw_fence_signal", KD_GPU, KD_XE_DONE },
	{ "xe", "xe_hw_fence_create", KD_XE_FENCE, 0 },
	{ "i915", "i915_request_add", KD_GPU, 7 },
	{ "i915", "i915_request_submit", KD_GPU, 8 },
	{ "i915", "i915_request_in", KD_GPU, 9 },
	{ "i915", "i915_request_out", KD_GPU, 10 },
	{ "i915", "i915_request_retire", KD_GPU, 11 },
};

/* The first of these names the format has, or NULL. */
static struct tep_format_field *kd_field_any(struct tep_event *e, const char *const *names)
{
	for (; *names; names++) {
		struct tep_format_field *f = tep_find_field(e, *names);

		if (f)
			return f;
	}
	return NULL;
}

static bool kd_is_string(const struct tep_format_field *f)
{
	return f && ((f->flags & TEP_FIELD_IS_DYNAMIC) || ((f->flags & TEP_FIELD_IS_ARRAY) && f->type &&
							  strstr(f->type, "char")));
}

static bool kd_is_number(const struct tep_format_field *f)
{
	return f && !(f->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_ARRAY)) && f->size > 0 && f->size <= 8;
}

/*
 * xe's job events (xe_sched_job class: dev, seqno, lrc_seqno, guc_id, ...,
 * fence), its hardware fence's signal (xe_hw_fence class: dev, ctx, seqno,
 * fence) and its exec queues (xe_exec_queue class: dev, class, logical_mask,
 * gt_id, width, guc_id, ...). dev is absent before Linux 6.12.
 */
static bool kd_xe_fields(struct kd_event *ke, uint32_t kind)
{
	struct tep_event *e = ke->event;

	ke->f[KG_DEV] = tep_find_field(e, "dev");
	if (ke->f[KG_DEV] && !kd_is_string(ke->f[KG_DEV]))
		ke->f[KG_DEV] = NULL;
	if (kind == KD_XE_QUEUE) {
		ke->f[KG_QUEUE] = tep_find_field(e, "guc_id");
		ke->f[KG_CLASS] = tep_find_field(e, "class");
	} else {
		ke->f[KG_SEQNO] = tep_find_field(e, "seqno");
		ke->f[KG_FENCE] = tep_find_field(e, "fence");
		if (kind == KD_XE_DONE)
			ke->f[KG_CONTEXT] = tep_find_field(e, "ctx");
		else
			ke->f[KG_QUEUE] = tep_find_field(e, "guc_id");
	}
	for (int i = 0; i < KG_COUNT; i++)
		if (i != KG_DEV && ke->f[i] && !kd_is_number(ke->f[i]))
			ke->f[i] = NULL;
	if (kind == KD_XE_QUEUE)
		return ke->f[KG_QUEUE] && ke->f[KG_CLASS];
	return ke->f[KG_SEQNO] && ke->f[KG_FENCE] && (kind == KD_XE_DONE ? ke->f[KG_CONTEXT] != NULL
									 : ke->f[KG_QUEUE] != NULL);
}

/*
 * The fields of a GPU job event, by the names each kernel version gives them:
 * the job's fence is "context"/"seqno" (amdgpu), "fence_context"/"fence_seqno"
 * (drm_sched from 6.16) or "ctx"/"seqno" (i915); a wait_dep's dependency is
 * "ctx"/"seqno" (drm_sched); the ring is a string ("ring" from amdgpu 4.17,
 * "timeline" before; "name" for drm_sched) or i915's engine class:instance.
 * A ring or fence field that is a pointer, not a string or number, is left out.
 */
static bool kd_gpu_fields(struct kd_event *ke, uint32_t kind)
{
	static const char *const job[] = { "sched_job_id", "id", NULL };
	static const char *const fctx[] = { "fence_context", "context", NULL };
	static const char *const fseq[] = { "fence_seqno", "seqno", NULL };
	static const char *const i915ctx[] = { "ctx", NULL };
	static const char *const ring_amd[] = { "ring", "timeline", NULL };
	static const char *const ring_sched[] = { "name", "ring", NULL };
	static const char *const fence[] = { "fence", NULL };
	static const char *const depctx[] = { "ctx", NULL };
	static const char *const depseq[] = { "seqno", NULL };
	static const char *const cls[] = { "class", NULL };
	static const char *const inst[] = { "instance", NULL };
	static const char *const done[] = { "completed", NULL };
	struct tep_event *e = ke->event;
	bool i915 = kind >= 7 && kind <= 11, dep = kind == 6 || kind == KD_UNSCHEDULABLE;

	if (kind >= KD_XE_EXEC && kind <= KD_XE_QUEUE)
		return kd_xe_fields(ke, kind);

	ke->f[KG_JOB] = i915 ? NULL : kd_field_any(e, job);
	ke->f[KG_CONTEXT] = kd_field_any(e, i915 ? i915ctx : dep ? (const char *const[]){ "fence_context", NULL } : fctx);
	ke->f[KG_SEQNO] = kd_field_any(e, dep ? (const char *const[]){ "fence_seqno", NULL } : fseq);
	ke->f[KG_FENCE] = dep ? NULL : kd_field_any(e, fence);
	ke->f[KG_RING] = i915 ? NULL : kd_field_any(e, kind <= 2 ? ring_amd : ring_sched);
	ke->f[KG_DEP_CONTEXT] = dep ? kd_field_any(e, depctx) : NULL;
	ke->f[KG_DEP_SEQNO] = dep ? kd_field_any(e, depseq) : NULL;
	ke->f[KG_CLASS] = i915 ? kd_field_any(e, cls) : NULL;
	ke->f[KG_INSTANCE] = i915 ? kd_field_any(e, inst) : NULL;
	ke->f[KG_COMPLETED] = kind == 10 ? kd_field_any(e, done) : NULL;
	/* Linux 6.16 on: the device and the DRM client of a queued or run job */
	ke->f[KG_DEV] = kind == 3 || kind == 4 ? tep_find_field(e, "dev") : NULL;
	ke->f[KG_CLIENT] = kind == 3 || kind == 4 ? tep_find_field(e, "client_id") : NULL;
	if (ke->f[KG_DEV] && !kd_is_string(ke->f[KG_DEV]))
		ke->f[KG_DEV] = NULL;
	if (kind <= 2 && ke->f[KG_RING] && !kd_is_string(ke->f[KG_RING]))
		ke->f[KG_RING] = tep_find_field(e, "timeline"); /* 4.11's ring_name is a pointer */
	if (ke->f[KG_RING] && !kd_is_string(ke->f[KG_RING]))
		ke->f[KG_RING] = NULL;
	for (int i = 0; i < KG_COUNT; i++)
		if (i != KG_RING && i != KG_DEV && ke->f[i] && !kd_is_number(ke->f[i]))
			ke->f[i] = NULL;
	if (ke->f[KG_CONTEXT] && !ke->f[KG_SEQNO])
		ke->f[KG_CONTEXT] = NULL;
	if (ke->f[KG_DEP_CONTEXT] && !ke->f[KG_DEP_SEQNO])
		ke->f[KG_DEP_CONTEXT] = NULL;
	/* Something must name the job: its id, its fence or its context/seqno. */
	return ke->f[KG_JOB] || ke->f[KG_FENCE] || ke->f[KG_CONTEXT];
}

static const char *const kd_fence_fields[] = { "driver", "timeline", "context", "seqno" };
static const char *const kd_switch_fields[] = { "prev_comm", "prev_pid", "prev_prio", "prev_state",
						"next_comm", "next_pid", "next_prio" };
static const char *const kd_wakeup_fields[] = { "comm", "pid", "prio", "target_cpu" };
static const char *const kd_vblank_fields[] = { "crtc", "seq" };
static const char *const kd_print_fields[] = { "buf" };
static const char *const kd_flip_fields[] = { "plane", "obj" };

/* Looks the fields up; a format without them is decoded as a raw event. */
static bool kd_fields(struct kd_event *ke, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ke->f[i] = tep_find_field(ke->event, names[i]);
		if (!ke->f[i])
			return false;
	}
	return true;
}

static struct kd_event *kd_event_for(struct nf_kdecoder *d, struct tep_record *rec,
				     struct nf_error *err)
{
	struct tep_event *e;
	int type;

	if (rec->size < 2) {
		nf_error_set(err, NF_EFORMAT, "%s: CPU %d, record at offset %llu: %d bytes, too short for an event",
			     d->where, rec->cpu, rec->offset, rec->size);
		return NULL;
	}
	type = tep_data_type(d->tep, rec);
	if (type < 0 || (unsigned)type >= NF_KD_EVENT_IDS || !(e = tep_find_event(d->tep, type))) {
		nf_error_set(err, NF_EFORMAT,
			     "%s: CPU %d, record at offset %llu: event id %d has no format in the trace "
			     "(missing or incomplete event formats)", d->where, rec->cpu, rec->offset, type);
		return NULL;
	}
	if (d->events[type] && d->events[type]->event == e)
		return d->events[type];
	struct kd_event *ke = calloc(1, sizeof(*ke));
	if (!ke) {
		nf_error_set(err, NF_ENOMEM, "%s: out of memory", d->where);
		return NULL;
	}
	ke->event = e;
	ke->kind = KD_RAW;
	if (e->system && e->name && !strcmp(e->system, "xe") && !strncmp(e->name, "xe_exec_queue_", 14) &&
	    kd_xe_fields(ke, KD_XE_QUEUE)) {
		ke->kind = KD_GPU;
		ke->gpu_kind = KD_XE_QUEUE;
	}
	for (size_t i = 0; i < sizeof(kd_known) / sizeof(kd_known[0]); i++) {
		if (!e->system || strcmp(e->system, kd_known[i].system) || strcmp(e->name, kd_known[i].name))
			continue;
		bool ok = kd_known[i].kind == KD_FENCE ? kd_fields(ke, kd_fence_fields, 4)
			: kd_known[i].kind == KD_SWITCH ? kd_fields(ke, kd_switch_fields, 7)
			: kd_known[i].kind == KD_VBLANK ? kd_fields(ke, kd_vblank_fields, 2)
			: kd_known[i].kind == KD_FLIP ? kd_fields(ke, kd_flip_fields, 2)
			: kd_known[i].kind == KD_PRINT ? kd_fields(ke, kd_print_fields, 1) && ke->f[0]->type &&
				strstr(ke->f[0]->type, "char") && !(ke->f[0]->flags & TEP_FIELD_IS_DYNAMIC)
			: kd_known[i].kind == KD_GPU ? kd_gpu_fields(ke, kd_known[i].ev_id)
			: kd_known[i].kind == KD_XE_FENCE ? kd_xe_fields(ke, KD_XE_DONE)
			: kd_fields(ke, kd_wakeup_fields, 4);
		if (ok) {
			ke->kind = kd_known[i].kind;
			ke->ev_id = kd_known[i].ev_id;
			ke->gpu_kind = kd_known[i].ev_id;
		}
	}
	free(d->events[type]);
	d->events[type] = ke;
	return ke;
}

/* A number field, checked against the record. */
static int kd_num(struct nf_kdecoder *d, struct tep_record *rec, struct tep_format_field *f,
		  uint64_t *v, struct nf_error *err)
{
	unsigned long long x;

	if (f->offset < 0 || f->size <= 0 || f->size > 8 || f->offset + f->size > rec->size ||
	    tep_read_number_field(f, rec->data, &x) != 0)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: CPU %d, record at offset %llu: field %s (offset %d, size %d) "
				    "outside the %d-byte record", d->where, rec->cpu, rec->offset,
				    f->name, f->offset, f->size, rec->size);
	*v = x;
	return 0;
}

/* A string field (char[N] or __data_loc char[]), checked against the record. */
static int kd_strfield(struct nf_kdecoder *d, struct tep_record *rec, struct tep_format_field *f,
		       const char **s, size_t *n, struct nf_error *err)
{
	const unsigned char *data = rec->data;

	if (f->offset < 0 || f->size <= 0 || f->offset + f->size > rec->size)
		goto out_bad;
	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		uint32_t loc;
		uint32_t off, len;

		if (f->size != 4)
			goto out_bad;
		memcpy(&loc, data + f->offset, 4);
		off = loc & 0xffffu;
		len = loc >> 16;
		if (f->flags & TEP_FIELD_IS_RELATIVE)
			off += (uint32_t)(f->offset + f->size);
		if ((uint64_t)off + len > (uint64_t)rec->size)
			goto out_bad;
		*s = (const char *)data + off;
		*n = len;
		return 0;
	}
	*s = (const char *)data + f->offset;
	*n = (size_t)f->size;
	return 0;
out_bad:
	return nf_error_set(err, NF_EFORMAT,
			    "%s: CPU %d, record at offset %llu: string field %s outside the %d-byte record",
			    d->where, rec->cpu, rec->offset, f->name, rec->size);
}

static int kd_intern_field(struct nf_kdecoder *d, struct tep_record *rec, struct tep_format_field *f,
			   uint64_t ticks, uint64_t *id, struct nf_error *err)
{
	const char *s = NULL;
	size_t n = 0;
	uint32_t i;
	int rc = kd_strfield(d, rec, f, &s, &n, err);

	if (rc || (rc = kd_intern(d, s, n, ticks, &i, err)))
		return rc;
	*id = i;
	return 0;
}

int nf_kdecoder_lost(struct nf_kdecoder *d, int cpu, uint64_t ns, long long count,
		     struct nf_error *err)
{
	struct nf_event ev = { .id = NF_EV_KERNEL_LOST };

	if (!kd_ticks(d, ns, &ev.ts))
		ev.ts = d->last_ticks;
	ev.f[NFF_KERNEL_LOST_cpu] = (uint64_t)cpu;
	ev.f[NFF_KERNEL_LOST_lost] = count > 0 ? (uint64_t)count : 0;
	ev.f[NFF_KERNEL_LOST_counted] = count > 0;
	d->stats.lost_records++;
	if (count > 0)
		d->stats.lost_events += (uint64_t)count;
	return kd_emit(d, &ev, err);
}

/* i915's engine classes (uapi I915_ENGINE_CLASS_*), as the driver names its engines. */
static const char *const kd_i915_class[] = { "rcs", "bcs", "vcs", "vecs", "ccs" };

/* xe's engine classes (enum xe_engine_class), as xe names its exec queues (rcs3, ccs0 ...). */
static const char *const kd_xe_class[] = { "rcs", "vcs", "vecs", "bcs", "gsccs", "ccs" };

/* Remembers key -> value in a bounded map; a full map starts over. */
static int kd_remember(struct nf_kdecoder *d, struct nf_u64map *m, uint64_t key, uint64_t value, struct nf_error *err)
{
	if (nf_u64map_put(m, key, value) == 0)
		return 0;
	nf_u64map_free(m); /* full (or out of memory): the oldest fences are long done */
	if (nf_u64map_put(m, key, value) == 0)
		return 0;
	return nf_error_set(err, NF_ENOMEM, "%s: out of memory", d->where);
}

/*
 * A GPU job event into a KernelGpuJob. Returns 0 (emitted), 1 when the record
 * is not a job event after all (an xe fence signal of no job seen: the caller
 * keeps it raw), or an error.
 */
static int kd_gpu(struct nf_kdecoder *d, struct tep_record *rec, struct kd_event *ke, int cpu,
		  uint64_t pid, struct nf_event *ev, struct nf_error *err)
{
	uint64_t v[KG_COUNT] = { 0 }, ring = 0, dev = 0;
	uint32_t flags = 0, kind = ke->gpu_kind;
	int rc;

	for (int i = 0; i < KG_COUNT; i++)
		if (i != KG_RING && i != KG_DEV && ke->f[i] && (rc = kd_num(d, rec, ke->f[i], &v[i], err)))
			return rc;
	if (kind == KD_XE_DONE) {
		/* only the fence of a job whose events came (the address and its seqno): its queue */
		const uint64_t *q = nf_u64map_find(&d->xe_fence_queue, v[KG_FENCE]);

		if (!q || (uint32_t)*q != (uint32_t)v[KG_SEQNO])
			return 1;
		v[KG_QUEUE] = *q >> 32;
		flags |= 8;
	} else if (kind == KD_XE_EXEC || kind == KD_XE_RUN) {
		/* the job's hardware fence: its context when xe_hw_fence_create named it */
		const uint64_t *c = nf_u64map_find(&d->xe_fence_ctx, v[KG_FENCE]);

		if (c) {
			v[KG_CONTEXT] = *c;
			flags |= 1;
		}
		flags |= 8;
		if ((rc = kd_remember(d, &d->xe_fence_queue, v[KG_FENCE], v[KG_QUEUE] << 32 | (uint32_t)v[KG_SEQNO], err)))
			return rc;
	} else if (kind == KD_XE_QUEUE) {
		char name[32];
		uint32_t id;

		if (v[KG_CLASS] < sizeof(kd_xe_class) / sizeof(kd_xe_class[0]))
			snprintf(name, sizeof(name), "%s%u", kd_xe_class[v[KG_CLASS]], (unsigned)v[KG_QUEUE]);
		else
			snprintf(name, sizeof(name), "class%u:%u", (unsigned)v[KG_CLASS], (unsigned)v[KG_QUEUE]);
		if ((rc = kd_intern(d, name, strlen(name), ev->ts, &id, err)))
			return rc;
		ring = id;
		flags |= 8;
	}
	if (ke->f[KG_DEV] && (rc = kd_intern_field(d, rec, ke->f[KG_DEV], ev->ts, &dev, err)))
		return rc;
	if (ke->f[KG_CLIENT])
		flags |= 16;
	if (kind == KD_XE_QUEUE) {
		/* named above */
	} else if (ke->f[KG_RING]) {
		if ((rc = kd_intern_field(d, rec, ke->f[KG_RING], ev->ts, &ring, err)))
			return rc;
	} else if (ke->f[KG_CLASS] && ke->f[KG_INSTANCE]) {
		char name[32];
		uint32_t id;

		if (v[KG_CLASS] < sizeof(kd_i915_class) / sizeof(kd_i915_class[0]))
			snprintf(name, sizeof(name), "%s%u", kd_i915_class[v[KG_CLASS]], (unsigned)v[KG_INSTANCE]);
		else
			snprintf(name, sizeof(name), "engine%u:%u", (unsigned)v[KG_CLASS], (unsigned)v[KG_INSTANCE]);
		if ((rc = kd_intern(d, name, strlen(name), ev->ts, &id, err)))
			return rc;
		ring = id;
	}
	if (ke->f[KG_CONTEXT])
		flags |= 1;
	if (ke->f[KG_COMPLETED] && v[KG_COMPLETED])
		flags |= 2;
	if (ke->f[KG_DEP_CONTEXT])
		flags |= 4;
	ev->id = NF_EV_KERNEL_GPU_JOB;
	ev->f[NFF_KERNEL_GPU_JOB_cpu] = (uint64_t)cpu;
	ev->f[NFF_KERNEL_GPU_JOB_tid] = pid;
	ev->f[NFF_KERNEL_GPU_JOB_kind] = ke->gpu_kind;
	ev->f[NFF_KERNEL_GPU_JOB_ring] = ring;
	ev->f[NFF_KERNEL_GPU_JOB_job] = v[KG_JOB];
	ev->f[NFF_KERNEL_GPU_JOB_context] = v[KG_CONTEXT];
	ev->f[NFF_KERNEL_GPU_JOB_seqno] = v[KG_SEQNO];
	ev->f[NFF_KERNEL_GPU_JOB_fence] = v[KG_FENCE];
	ev->f[NFF_KERNEL_GPU_JOB_dep_context] = v[KG_DEP_CONTEXT];
	ev->f[NFF_KERNEL_GPU_JOB_dep_seqno] = v[KG_DEP_SEQNO];
	ev->f[NFF_KERNEL_GPU_JOB_flags] = flags;
	ev->f[NFF_KERNEL_GPU_JOB_dev] = dev;
	ev->f[NFF_KERNEL_GPU_JOB_client_id] = v[KG_CLIENT];
	ev->f[NFF_KERNEL_GPU_JOB_queue] = v[KG_QUEUE];
	d->stats.gpu++;
	return kd_emit(d, ev, err);
}

int nf_kdecoder_task(struct nf_kdecoder *d, uint32_t tid, uint32_t tgid, struct nf_error *err)
{
	struct nf_event ev = { .id = NF_EV_KERNEL_TASK, .ts = d->last_ticks };

	ev.f[NFF_KERNEL_TASK_tid] = tid;
	ev.f[NFF_KERNEL_TASK_tgid] = tgid;
	return kd_emit(d, &ev, err);
}

int nf_kdecoder_cpu_stat(struct nf_kdecoder *d, const struct nf_kcpu_stat *cs, struct nf_error *err)
{
	struct nf_event ev = { .id = NF_EV_KERNEL_CPU_STAT, .ts = d->last_ticks };

	ev.f[NFF_KERNEL_CPU_STAT_cpu] = cs->cpu;
	ev.f[NFF_KERNEL_CPU_STAT_records] = cs->records;
	ev.f[NFF_KERNEL_CPU_STAT_has_stat] = cs->has_stat;
	ev.f[NFF_KERNEL_CPU_STAT_read_events] = cs->read_events;
	ev.f[NFF_KERNEL_CPU_STAT_overrun] = cs->overrun;
	ev.f[NFF_KERNEL_CPU_STAT_dropped] = cs->dropped;
	return kd_emit(d, &ev, err);
}

/*
 * A thread that submits GPU work or writes markers may never be switched in or
 * out during the trace: its name then comes from the file's saved cmdlines, sent
 * once per thread as a KernelTask (tgid 0) before its first such event.
 */
static int kd_name_thread(struct nf_kdecoder *d, uint64_t pid, uint64_t ticks, struct nf_error *err)
{
	const char *comm;
	uint32_t id;
	int rc;

	if (pid == 0 || pid >= NF_KD_MAX_PID)
		return 0;
	if (!d->named && !(d->named = calloc(NF_KD_MAX_PID / 8, 1)))
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", d->where);
	if (d->named[pid / 8] & (1u << (pid % 8)))
		return 0;
	d->named[pid / 8] |= (uint8_t)(1u << (pid % 8));
	comm = tep_data_comm_from_pid(d->tep, (int)pid);
	if (!comm || !strcmp(comm, "<...>"))
		return 0;
	if ((rc = kd_intern(d, comm, strlen(comm), ticks, &id, err)))
		return rc;
	struct nf_event ev = { .id = NF_EV_KERNEL_TASK, .ts = ticks };

	ev.f[NFF_KERNEL_TASK_tid] = pid;
	ev.f[NFF_KERNEL_TASK_comm] = id;
	return kd_emit(d, &ev, err);
}

int nf_kdecoder_record(struct nf_kdecoder *d, struct tep_record *rec, int cpu,
		       struct nf_error *err)
{
	struct nf_event ev = { 0 };
	struct kd_event *ke;
	uint64_t v[8] = { 0 }, pid;
	int rc;

	d->stats.records++;
	if (rec->missed_events && (rc = nf_kdecoder_lost(d, cpu, rec->ts, rec->missed_events, err)))
		return rc;
	if (!kd_ticks(d, rec->ts, &ev.ts)) {
		d->stats.before_start++;
		return 0;
	}
	if (!(ke = kd_event_for(d, rec, err)))
		return err->code;
	pid = (uint64_t)(uint32_t)tep_data_pid(d->tep, rec);
	switch (ke->kind) {
	case KD_FENCE:
		if ((rc = kd_intern_field(d, rec, ke->f[0], ev.ts, &v[0], err)) ||
		    (rc = kd_intern_field(d, rec, ke->f[1], ev.ts, &v[1], err)) ||
		    (rc = kd_num(d, rec, ke->f[2], &v[2], err)) || (rc = kd_num(d, rec, ke->f[3], &v[3], err)))
			return rc;
		ev.id = ke->ev_id;
		ev.f[NFF_KERNEL_DMA_FENCE_INIT_cpu] = (uint64_t)cpu;
		ev.f[NFF_KERNEL_DMA_FENCE_INIT_tid] = pid;
		ev.f[NFF_KERNEL_DMA_FENCE_INIT_driver] = v[0];
		ev.f[NFF_KERNEL_DMA_FENCE_INIT_timeline] = v[1];
		ev.f[NFF_KERNEL_DMA_FENCE_INIT_context] = v[2];
		ev.f[NFF_KERNEL_DMA_FENCE_INIT_seqno] = v[3];
		d->stats.dma_fence++;
		return kd_emit(d, &ev, err);
	case KD_SWITCH:
		if ((rc = kd_intern_field(d, rec, ke->f[0], ev.ts, &v[0], err)) ||
		    (rc = kd_num(d, rec, ke->f[1], &v[1], err)) || (rc = kd_num(d, rec, ke->f[2], &v[2], err)) ||
		    (rc = kd_num(d, rec, ke->f[3], &v[3], err)) ||
		    (rc = kd_intern_field(d, rec, ke->f[4], ev.ts, &v[4], err)) ||
		    (rc = kd_num(d, rec, ke->f[5], &v[5], err)) || (rc = kd_num(d, rec, ke->f[6], &v[6], err)))
			return rc;
		ev.id = NF_EV_KERNEL_SCHED_SWITCH;
		ev.f[NFF_KERNEL_SCHED_SWITCH_cpu] = (uint64_t)cpu;
		ev.f[NFF_KERNEL_SCHED_SWITCH_prev_comm] = v[0];
		ev.f[NFF_KERNEL_SCHED_SWITCH_prev_tid] = (uint32_t)v[1];
		ev.f[NFF_KERNEL_SCHED_SWITCH_prev_prio] = (uint32_t)v[2];
		ev.f[NFF_KERNEL_SCHED_SWITCH_prev_state] = v[3];
		ev.f[NFF_KERNEL_SCHED_SWITCH_next_comm] = v[4];
		ev.f[NFF_KERNEL_SCHED_SWITCH_next_tid] = (uint32_t)v[5];
		ev.f[NFF_KERNEL_SCHED_SWITCH_next_prio] = (uint32_t)v[6];
		d->stats.sched++;
		return kd_emit(d, &ev, err);
	case KD_WAKEUP:
		if ((rc = kd_intern_field(d, rec, ke->f[0], ev.ts, &v[0], err)) ||
		    (rc = kd_num(d, rec, ke->f[1], &v[1], err)) || (rc = kd_num(d, rec, ke->f[2], &v[2], err)) ||
		    (rc = kd_num(d, rec, ke->f[3], &v[3], err)))
			return rc;
		ev.id = NF_EV_KERNEL_SCHED_WAKEUP;
		ev.f[NFF_KERNEL_SCHED_WAKEUP_cpu] = (uint64_t)cpu;
		ev.f[NFF_KERNEL_SCHED_WAKEUP_comm] = v[0];
		ev.f[NFF_KERNEL_SCHED_WAKEUP_tid] = (uint32_t)v[1];
		ev.f[NFF_KERNEL_SCHED_WAKEUP_prio] = (uint32_t)v[2];
		ev.f[NFF_KERNEL_SCHED_WAKEUP_target_cpu] = (uint32_t)v[3];
		ev.f[NFF_KERNEL_SCHED_WAKEUP_waker] = pid;
		d->stats.sched++;
		return kd_emit(d, &ev, err);
	case KD_VBLANK:
		if ((rc = kd_num(d, rec, ke->f[0], &v[0], err)) || (rc = kd_num(d, rec, ke->f[1], &v[1], err)))
			return rc;
		ev.id = NF_EV_KERNEL_VBLANK;
		ev.f[NFF_KERNEL_VBLANK_cpu] = (uint64_t)cpu;
		ev.f[NFF_KERNEL_VBLANK_crtc] = (uint32_t)v[0];
		ev.f[NFF_KERNEL_VBLANK_seq] = (uint32_t)v[1];
		d->stats.gpu++;
		return kd_emit(d, &ev, err);
	case KD_FLIP:
		if ((rc = kd_num(d, rec, ke->f[0], &v[0], err)) || (rc = kd_num(d, rec, ke->f[1], &v[1], err)))
			return rc;
		if (ke->ev_id == 1 && (rc = kd_name_thread(d, pid, ev.ts, err)))
			return rc;
		ev.id = NF_EV_KERNEL_FLIP;
		ev.f[NFF_KERNEL_FLIP_cpu] = (uint64_t)cpu;
		ev.f[NFF_KERNEL_FLIP_tid] = pid;
		ev.f[NFF_KERNEL_FLIP_kind] = ke->ev_id;
		ev.f[NFF_KERNEL_FLIP_plane] = (uint32_t)v[0];
		ev.f[NFF_KERNEL_FLIP_obj] = v[1];
		d->stats.gpu++;
		return kd_emit(d, &ev, err);
	case KD_PRINT: {
		const char *s = NULL;
		size_t n = 0;

		if ((rc = kd_name_thread(d, pid, ev.ts, err)))
			return rc;
		/* buf is the rest of the record ("char buf;" or "char buf[];", size 0). */
		if (ke->f[0]->offset < 0 || ke->f[0]->offset > rec->size)
			return nf_error_set(err, NF_EFORMAT,
					    "%s: CPU %d, record at offset %llu: field buf outside the %d-byte record",
					    d->where, rec->cpu, rec->offset, rec->size);
		s = (const char *)rec->data + ke->f[0]->offset;
		n = (size_t)(rec->size - ke->f[0]->offset);
		n = strnlen(s, n > NF_KD_MAX_STRLEN ? NF_KD_MAX_STRLEN : n);
		while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
			n--;
		trace_seq_reset(&d->seq);
		trace_seq_printf(&d->seq, "%.*s", (int)n, s);
		trace_seq_terminate(&d->seq);
		if (d->seq.state != TRACE_SEQ__GOOD)
			return nf_error_set(err, NF_ENOMEM, "%s: out of memory printing an event", d->where);
		ev.id = NF_EV_KERNEL_MARKER;
		ev.f[NFF_KERNEL_MARKER_cpu] = (uint64_t)cpu;
		ev.f[NFF_KERNEL_MARKER_tid] = pid;
		ev.str = d->seq.buffer;
		d->stats.markers++;
		return kd_emit(d, &ev, err);
	}
	case KD_GPU:
		if ((rc = kd_name_thread(d, pid, ev.ts, err)))
			return rc;
		if ((rc = kd_gpu(d, rec, ke, cpu, pid, &ev, err)) != 1)
			return rc;
		break; /* kept raw */
	case KD_XE_FENCE: /* kept raw; the fence's context is remembered for its job */
		if ((rc = kd_num(d, rec, ke->f[KG_FENCE], &v[0], err)) ||
		    (rc = kd_num(d, rec, ke->f[KG_CONTEXT], &v[1], err)) ||
		    (rc = kd_remember(d, &d->xe_fence_ctx, v[0], v[1], err)))
			return rc;
		break;
	default:
		break;
	}
	/* Anything else: its name and its fields as libtraceevent prints them. */
	if (ke->name_id == 0) {
		char name[256];
		uint32_t id;

		snprintf(name, sizeof(name), "%s:%s", ke->event->system ? ke->event->system : "?",
			 ke->event->name ? ke->event->name : "?");
		if ((rc = kd_intern(d, name, strlen(name), ev.ts, &id, err)))
			return rc;
		ke->name_id = id;
	}
	trace_seq_reset(&d->seq);
	tep_print_event(d->tep, &d->seq, rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&d->seq);
	if (d->seq.state != TRACE_SEQ__GOOD)
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory printing an event", d->where);
	if (d->seq.len > NF_KD_MAX_STRLEN)
		d->seq.buffer[NF_KD_MAX_STRLEN] = '\0';
	ev.id = NF_EV_KERNEL_RAW;
	ev.f[NFF_KERNEL_RAW_cpu] = (uint64_t)cpu;
	ev.f[NFF_KERNEL_RAW_tid] = pid;
	ev.f[NFF_KERNEL_RAW_name] = ke->name_id;
	ev.str = d->seq.buffer;
	d->stats.raw++;
	return kd_emit(d, &ev, err);
}
