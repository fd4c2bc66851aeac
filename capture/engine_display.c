/*
 * The native fence engine: displays and presents. A display is one output
 * with a hardware flip queue and a refresh rate; a present queues a signal of
 * the display's swap chain fence on a hardware queue behind the frame's work
 * (the queue reaches it when the frame is done on the GPU) and a flip that
 * waits in the flip queue for that value. At each vertical blank the display
 * shows the next flip that is ready, as a WDDM hardware flip queue does:
 * sync interval 1..4 in order, each kept on screen for at least its interval
 * (a frame not ready in time leaves the one before it on screen: a late
 * frame); sync interval 0 the newest ready flip, the ready ones before it
 * dropped. Deterministic mode schedules each blank on the simulation clock;
 * threaded mode runs them on the CMP/interrupt thread's timer.
 */
#include "engine_int.h"
#include "contract/errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* When blank k of d comes: start + k * den / num s, rounded to the ns. */
static uint64_t vblank_time(const struct nf_display *d, uint64_t k)
{
	unsigned __int128 t = (unsigned __int128)k * d->den * 1000000000u + d->num / 2;

	t /= d->num;
	return t > UINT64_MAX - d->start_ns ? UINT64_MAX : d->start_ns + (uint64_t)t;
}

static int schedule_next(struct nf_runtime *rt, uint32_t di)
{
	struct nf_display *d = &rt->displays[di];
	uint64_t t = vblank_time(d, d->vblank + 1);

	atomic_store(&d->next_ns, t);
	if (rt->threaded)
		return 0;
	return nf_eng_sim_push(rt, t, NF_SIM_VBLANK, di, 0, 0);
}

uint64_t nf_eng_next_vblank(const struct nf_runtime *rt)
{
	uint64_t best = UINT64_MAX;
	uint32_t n = __atomic_load_n(&rt->n_displays, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t t = atomic_load(&rt->displays[i].next_ns);

		if (t < best)
			best = t;
	}
	return best;
}

static bool flip_ready(const struct nf_runtime *rt, const struct nf_display *d, const struct nf_flip *f)
{
	const struct nf_global_fence *g = &rt->globals[d->global];

	return nf_eng_value_reached(&rt->adapters[d->adapter], g, f->value);
}

static int emit_flip(struct nf_runtime *rt, uint32_t di, uint64_t present, uint32_t status, uint64_t t)
{
	const struct nf_display *d = &rt->displays[di];
	struct nf_event ev;

	EV_INIT(ev, DISPLAY_FLIP);
	ev.f[NFF_DISPLAY_FLIP_adapter] = d->adapter;
	ev.f[NFF_DISPLAY_FLIP_display] = di;
	ev.f[NFF_DISPLAY_FLIP_present_id] = present;
	ev.f[NFF_DISPLAY_FLIP_vblank] = d->vblank;
	ev.f[NFF_DISPLAY_FLIP_status] = status;
	return nf_eng_emit_at(rt, &ev, t);
}

static void flip_pop(struct nf_display *d)
{
	d->head = (d->head + 1) & (d->cap - 1); /* a power of two */
	d->n--;
}

int nf_eng_vblank(struct nf_runtime *rt, uint32_t di)
{
	struct nf_display *d = &rt->displays[di];
	uint64_t shown = 0, t = now_ns(rt); /* one time for the blank's events (threaded: the DPC's) */
	struct nf_event ev;
	int rc = 0;

	if (rt->finished) {
		atomic_store(&d->next_ns, UINT64_MAX); /* no blanks after the end */
		return 0;
	}
	d->vblank++;
	if (d->n && (!d->shown || d->vblank - d->shown_vblank >= d->shown_interval || d->flips[d->head].interval == 0)) {
		struct nf_flip take = d->flips[d->head];

		if (flip_ready(rt, d, &take)) {
			flip_pop(d);
			/* sync interval 0: the newest ready flip wins, the ones before it are dropped */
			while (!rc && take.interval == 0 && d->n && d->flips[d->head].interval == 0 &&
			       flip_ready(rt, d, &d->flips[d->head])) {
				rc = emit_flip(rt, di, take.present, 1, t);
				take = d->flips[d->head];
				flip_pop(d);
			}
			if (!rc)
				rc = emit_flip(rt, di, take.present, 0, t);
			shown = take.present;
			d->shown = take.present;
			d->shown_vblank = d->vblank;
			d->shown_interval = take.interval;
		}
	}
	if (rc)
		return rc;
	EV_INIT(ev, VSYNC);
	ev.f[NFF_VSYNC_adapter] = d->adapter;
	ev.f[NFF_VSYNC_display] = di;
	ev.f[NFF_VSYNC_vblank] = d->vblank;
	ev.f[NFF_VSYNC_present_id] = shown;
	rc = nf_eng_emit_at(rt, &ev, t);
	return rc ? rc : schedule_next(rt, di);
}

void nf_display_desc_init(struct nf_display_desc *desc)
{
	memset(desc, 0, sizeof(*desc));
	desc->name = "display";
	desc->refresh_num = 60;
	desc->refresh_den = 1;
}

int nf_eng_api_display_create(nf_runtime *rt, uint32_t adapter, const struct nf_display_desc *desc,
			      uint32_t *display_out, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 0 };
	const char *name;
	struct nf_event ev;
	nf_handle fence;

	if (rc)
		return rc;
	if (!desc || !display_out)
		return nf_error_set(err, NF_EINVAL, "nf_display_create: NULL argument");
	if (adapter >= rt->n_adapters)
		return nf_error_set(err, NF_EINVAL, "no adapter %u", adapter);
	if (!desc->refresh_num || !desc->refresh_den)
		return nf_error_set(err, NF_EINVAL, "a display's refresh rate needs a numerator and a denominator above 0");
	if ((uint64_t)desc->refresh_num > 1000ull * desc->refresh_den || desc->refresh_num < desc->refresh_den)
		return nf_error_set(err, NF_EINVAL, "refresh rate %u/%u Hz is outside 1 .. 1000 Hz",
				    desc->refresh_num, desc->refresh_den);
	name = desc->name ? desc->name : "display";
	if (strlen(name) >= sizeof(rt->displays[0].name))
		return nf_error_set(err, NF_EINVAL, "display name longer than 63 bytes");
	if (rt->n_displays >= NF_MAX_DISPLAYS)
		return nf_error_set(err, NF_ENOMEM, "more than %u displays", NF_MAX_DISPLAYS);
	fd.process = desc->process;
	rc = nf_eng_api_fence_create(rt, adapter, &fd, false, &fence, err);
	if (rc)
		return rc;
	uint32_t di = rt->n_displays;
	struct nf_display *d = &rt->displays[di];
	uint32_t li;

	memset(d, 0, sizeof(*d));
	d->adapter = adapter;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->num = desc->refresh_num;
	d->den = desc->refresh_den;
	d->process = desc->process;
	d->fence = fence;
	nf_eng_handle_lookup(rt, fence, NF_OBJ_LOCAL_FENCE, &li);
	d->global = rt->locals[li].global;
	d->start_ns = now_ns(rt);
	EV_INIT(ev, DISPLAY_START);
	ev.f[NFF_DISPLAY_START_adapter] = adapter;
	ev.f[NFF_DISPLAY_START_display] = di;
	ev.f[NFF_DISPLAY_START_refresh_num] = d->num;
	ev.f[NFF_DISPLAY_START_refresh_den] = d->den;
	ev.f[NFF_DISPLAY_START_process] = d->process;
	ev.f[NFF_DISPLAY_START_fence] = fence;
	ev.str = d->name;
	rc = nf_eng_emit(rt, &ev);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	__atomic_store_n(&rt->n_displays, di + 1, __ATOMIC_RELEASE);
	rc = schedule_next(rt, di);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	if (rt->threaded)
		nf_th_timer_changed(rt);
	*display_out = di;
	return 0;
}

int nf_eng_api_present(nf_runtime *rt, nf_handle queue, uint32_t display, uint32_t sync_interval,
		       uint64_t *present_id_out, struct nf_error *err)
{
	int rc = nf_eng_check_rt(rt, err);
	struct nf_queue *q;
	struct nf_display *d;
	struct nf_event ev;

	if (rc)
		return rc;
	if (!(q = nf_eng_queue_get(rt, queue, err)))
		return NF_EINVAL;
	if (display >= rt->n_displays)
		return nf_error_set(err, NF_EINVAL, "no display %u", display);
	d = &rt->displays[display];
	if (q->adapter != d->adapter)
		return nf_error_set(err, NF_EINVAL, "queue 0x%x is on adapter %u but display %u is on adapter %u",
				    queue, q->adapter, display, d->adapter);
	if (sync_interval > 4)
		return nf_error_set(err, NF_EINVAL, "sync interval %u is above 4", sync_interval);
	if (d->n >= NF_FLIPS_MAX)
		return nf_error_set(err, NF_ENOMEM, "display %u has %u flips waiting (the limit)", display, d->n);
	if (d->n == d->cap) {
		uint32_t ncap = d->cap ? d->cap * 2 : 16;
		struct nf_flip *nf = malloc((size_t)ncap * sizeof(*nf));

		if (!nf)
			return nf_error_set(err, NF_ENOMEM, "out of memory");
		for (uint32_t i = 0; i < d->n; i++)
			nf[i] = d->flips[(d->head + i) & (d->cap - 1)];
		free(d->flips);
		d->flips = nf;
		d->head = 0;
		d->cap = ncap;
	}
	uint64_t id = d->presents + 1;

	EV_INIT(ev, PRESENT);
	ev.f[NFF_PRESENT_adapter] = d->adapter;
	ev.f[NFF_PRESENT_hwqueue] = q->handle;
	ev.f[NFF_PRESENT_display] = display;
	ev.f[NFF_PRESENT_present_id] = id;
	ev.f[NFF_PRESENT_fence] = d->fence;
	ev.f[NFF_PRESENT_value] = id;
	ev.f[NFF_PRESENT_sync_interval] = sync_interval;
	ev.f[NFF_PRESENT_thread] = cur_thread(rt);
	ev.f[NFF_PRESENT_process] = d->process;
	rc = nf_eng_emit(rt, &ev);
	if (rc)
		return nf_eng_fail(rt, rc, err);
	rc = nf_eng_api_queue_signal(rt, queue, d->fence, id, err);
	if (rc)
		return rc;
	d->presents = id;
	d->flips[(d->head + d->n) & (d->cap - 1)] = (struct nf_flip){ id, id, sync_interval };
	d->n++;
	if (present_id_out)
		*present_id_out = id;
	return 0;
}

void nf_eng_displays_free(struct nf_runtime *rt)
{
	for (uint32_t i = 0; i < rt->n_displays; i++)
		free(rt->displays[i].flips);
}
