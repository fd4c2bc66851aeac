/*
 * `nftrace record --kernel`: kernel events from a private tracefs instance
 * (instances/nftrace-<pid>, so the global buffer and other users' instances
 * are left alone), with trace_clock `mono` (CLOCK_MONOTONIC). While the
 * workload runs, a reader thread drains every CPU's trace_pipe_raw into memory
 * (whole ring-buffer sub-buffers, as the kernel hands them over), so the ring
 * buffer does not overwrite what we have not read. At the end the pages are
 * decoded with kbuffer and libtraceevent, using the instance's own format
 * files, merged across CPUs in time order, and appended to the session as its
 * `kernel` stream. Pages the kernel marked as following lost events become
 * KernelLostEvents; so do pages we could not keep (memory bound).
 */
#include "kernel_int.h"
#include "contract/errors.h"

#include "contract/parser.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <kbuffer.h>
#include <mntent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NF_LIVE_MAX_CPUS 1024
#define NF_LIVE_MAX_BYTES ((size_t)512 << 20) /* pages kept in memory, all CPUs */
#define NF_LIVE_POLL_NS 20000000L              /* reader wakes every 20 ms */
#define NF_LIVE_MAX_SYSTEMS 64


struct nf_kernel_trace {
	char tracefs[1024];
	char inst[1200];
	bool created;
	char *systems[NF_LIVE_MAX_SYSTEMS + 1];
	size_t n_systems;
	size_t subbuf;
	int ncpu;
	struct nf_kpages *cpus;
	size_t kept_bytes;
	pthread_t thread;
	bool thread_running;
	atomic_int stop;
	uint64_t origin_ns;
	struct nf_error thread_err;
};

static int write_file(const char *path, const char *text, struct nf_error *err)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	size_t n = strlen(text);

	if (fd < 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path, strerror(errno));
	if (write(fd, text, n) != (ssize_t)n) {
		int e = errno;

		close(fd);
		return nf_error_set(err, NF_EIO, "%s: cannot write '%s': %s", path, text, strerror(e));
	}
	close(fd);
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reads whatever sub-buffers each CPU has ready; returns how many were read. */
static size_t drain_once(struct nf_kernel_trace *t)
{
	size_t got = 0;

	for (int c = 0; c < t->ncpu; c++) {
		struct nf_kpages *lc = &t->cpus[c];

		for (;;) {
			if (lc->n_pages == lc->cap_pages && t->kept_bytes + t->subbuf <= NF_LIVE_MAX_BYTES) {
				size_t ncap = lc->cap_pages ? lc->cap_pages * 2 : 16;
				unsigned char *np = realloc(lc->pages, ncap * t->subbuf);

				if (np) {
					lc->pages = np;
					lc->cap_pages = ncap;
				}
			}
			unsigned char scratch[65536], *dst;
			bool keep = lc->n_pages < lc->cap_pages && t->kept_bytes + t->subbuf <= NF_LIVE_MAX_BYTES;

			dst = keep ? lc->pages + lc->n_pages * t->subbuf : scratch;
			ssize_t r = read(lc->fd, dst, t->subbuf);
			if (r <= 0)
				break;
			if ((size_t)r < t->subbuf)
				memset(dst + r, 0, t->subbuf - (size_t)r);
			got++;
			if (keep) {
				lc->n_pages++;
				t->kept_bytes += t->subbuf;
			} else {
				if (!lc->dropped)
					memcpy(&lc->dropped_ts, scratch, 8);
				lc->dropped++;
			}
		}
	}
	return got;
}

static void *reader_main(void *arg)
{
	struct nf_kernel_trace *t = arg;
	struct timespec pause = { 0, NF_LIVE_POLL_NS };

	while (!atomic_load(&t->stop)) {
		drain_once(t);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Parses the event list and enables each event; remembers the systems. */
static int enable_events(struct nf_kernel_trace *t, const char *list, struct nf_error *err)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		char path[2600], sys[256];
		size_t len = strlen(tok);
		bool optional = len && tok[len - 1] == '?';
		const char *colon;

		if (optional)
			tok[--len] = '\0';
		if (!len || len >= sizeof(sys) || strchr(tok, '/') || strstr(tok, "..")) {
			rc = nf_error_set(err, NF_EINVAL, "--kernel: bad event name '%s' (system or system:event)", tok);
			break;
		}
		colon = strchr(tok, ':');
		snprintf(sys, sizeof(sys), "%.*s", colon ? (int)(colon - tok) : (int)len, tok);
		if (colon)
			snprintf(path, sizeof(path), "%s/events/%s/%s/enable", t->inst, sys, colon + 1);
		else
			snprintf(path, sizeof(path), "%s/events/%s/enable", t->inst, sys);
		if (access(path, F_OK) != 0) {
			if (optional)
				continue;
			rc = nf_error_set(err, NF_ENOENT,
					  "--kernel: this kernel has no event '%s' (see %s/available_events)", tok,
					  t->tracefs);
			break;
		}
		if ((rc = write_file(path, "1", err)))
			break;
		bool known = false;
		for (size_t i = 0; i < t->n_systems; i++)
			known |= !strcmp(t->systems[i], sys);
		if (!known) {
			if (t->n_systems == NF_LIVE_MAX_SYSTEMS) {
				rc = nf_error_set(err, NF_EINVAL, "--kernel: more than %d event systems",
						  NF_LIVE_MAX_SYSTEMS);
				break;
			}
			if (!(t->systems[t->n_systems] = strdup(sys))) {
				rc = nf_error_set(err, NF_ENOMEM, "out of memory");
				break;
			}
			t->n_systems++;
		}
	}
	free(copy);
	if (!rc && t->n_systems == 0)
		rc = nf_error_set(err, NF_ENOENT, "--kernel: none of the events '%s' exists on this kernel", list);
	return rc;
}

void nf_kernel_trace_destroy(struct nf_kernel_trace *t)
{
	char path[1400];

	if (!t)
		return;
	if (t->thread_running) {
		atomic_store(&t->stop, 1);
		pthread_join(t->thread, NULL);
	}
	for (int c = 0; t->cpus && c < t->ncpu; c++) {
		if (t->cpus[c].fd >= 0)
			close(t->cpus[c].fd);
		free(t->cpus[c].pages);
	}
	free(t->cpus);
	if (t->created) {
		snprintf(path, sizeof(path), "%s/tracing_on", t->inst);
		write_file(path, "0", NULL);
		snprintf(path, sizeof(path), "%s/events/enable", t->inst);
		write_file(path, "0", NULL);
		rmdir(t->inst);
	}
	for (size_t i = 0; i < t->n_systems; i++)
		free(t->systems[i]);
	free(t);
}

/*
 * Removes the instances of nftrace processes that died without removing
 * theirs (killed, crashed): instances/nftrace-<pid> whose pid is gone.
 */
static void remove_stale_instances(const char *tracefs)
{
	char dir[1100], path[1400];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/instances", tracefs);
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, "nftrace-", 8) || !de->d_name[8])
			continue;
		pid = strtol(de->d_name + 8, &end, 10);
		if (*end || pid <= 0 || pid > INT32_MAX || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		/* Stop it first: should the rmdir fail (a reader still has a
		 * buffer open), the kernel no longer records for nobody. */
		snprintf(path, sizeof(path), "%s/%s/tracing_on", dir, de->d_name);
		write_file(path, "0", NULL);
		snprintf(path, sizeof(path), "%s/%s/events/enable", dir, de->d_name);
		write_file(path, "0", NULL);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rmdir(path);
	}
	closedir(d);
}

int nf_kernel_tracefs_find(char *buf, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	int found = -1;

	if (!f)
		return -1;
	while ((m = getmntent(f)))
		if (!strcmp(m->mnt_type, "tracefs") && strlen(m->mnt_dir) < len &&
		    (found < 0 || !strcmp(m->mnt_dir, "/sys/kernel/tracing"))) {
			snprintf(buf, len, "%s", m->mnt_dir);
			found = 0;
		}
	endmntent(f);
	return found;
}

void nf_kernel_remove_stale_instances(const char *tracefs)
{
	char dir[1100];
	const char *t = tracefs ? tracefs : "/sys/kernel/tracing";

	snprintf(dir, sizeof(dir), "%s/instances", t);
	if (access(dir, W_OK) == 0)
		remove_stale_instances(t);
}

/* Mounts tracefs on dir (an empty directory, as /sys/kernel/tracing is while
 * nothing is mounted there): true when it is mounted now. */
static bool mount_tracefs(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return false;
	return mount("nodev", dir, "tracefs", 0, NULL) == 0;
}

int nf_kernel_trace_start(const struct nf_kernel_trace_options *o, struct nf_kernel_trace **out,
			  uint64_t *origin_ns, struct nf_error *err)
{
	struct nf_kernel_trace *t = calloc(1, sizeof(*t));
	char path[1400], num[32];
	int rc;

	*out = NULL;
	if (!t)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	snprintf(t->tracefs, sizeof(t->tracefs), "%s", o && o->tracefs ? o->tracefs : "/sys/kernel/tracing");
	snprintf(path, sizeof(path), "%s/instances", t->tracefs);
	/* Not mounted (a fresh machine): mount it, as trace-cmd's library does
	 * (and leaves it mounted), when there is a directory to mount it on and
	 * we may (root). */
	if (access(path, F_OK) != 0 && errno == ENOENT)
		(void)mount_tracefs(t->tracefs);
	if (access(path, W_OK) != 0) {
		rc = nf_error_set(err, NF_EUNSUPP,
				  "--kernel: %s is not mounted or not writable (%s)%s: recording kernel events "
				  "needs tracefs and root", path, strerror(errno),
				  geteuid() ? "" : ", and tracefs could not be mounted there");
		goto out_destroy;
	}
	remove_stale_instances(t->tracefs);
	snprintf(t->inst, sizeof(t->inst), "%s/instances/nftrace-%d", t->tracefs, (int)getpid());
	if (mkdir(t->inst, 0750) != 0) {
		rc = nf_error_set(err, errno == EEXIST ? NF_EEXIST : NF_EUNSUPP, "--kernel: %s: cannot create: %s",
				  t->inst, strerror(errno));
		goto out_destroy;
	}
	t->created = true;
	snprintf(path, sizeof(path), "%s/tracing_on", t->inst);
	if ((rc = write_file(path, "0", err)))
		goto out_destroy;
	snprintf(path, sizeof(path), "%s/trace_clock", t->inst);
	if ((rc = write_file(path, "mono", err)))
		goto out_destroy;
	snprintf(path, sizeof(path), "%s/buffer_size_kb", t->inst);
	snprintf(num, sizeof(num), "%u", o && o->buffer_kb ? o->buffer_kb : 4096u);
	if ((rc = write_file(path, num, err)))
		goto out_destroy;
	if ((rc = enable_events(t, o && o->events ? o->events : NF_KERNEL_DEFAULT_EVENTS, err)))
		goto out_destroy;
	/* The sub-buffer size: buffer_subbuf_size_kb on recent kernels, else a page. */
	t->subbuf = (size_t)sysconf(_SC_PAGESIZE);
	{
		FILE *f;

		snprintf(path, sizeof(path), "%s/buffer_subbuf_size_kb", t->inst);
		if ((f = fopen(path, "r"))) {
			unsigned kb;

			if (fscanf(f, "%u", &kb) == 1 && kb >= 4 && kb <= 64)
				t->subbuf = (size_t)kb * 1024;
			fclose(f);
		}
	}
	t->ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (t->ncpu <= 0 || t->ncpu > NF_LIVE_MAX_CPUS)
		t->ncpu = 1;
	t->cpus = calloc((size_t)t->ncpu, sizeof(*t->cpus));
	if (!t->cpus) {
		rc = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out_destroy;
	}
	for (int c = 0; c < t->ncpu; c++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", t->inst, c);
		t->cpus[c].fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (t->cpus[c].fd < 0 && errno != ENOENT) {
			rc = nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
			goto out_destroy;
		}
	}
	/* The origin is taken before tracing starts: no event can be older. */
	t->origin_ns = mono_ns();
	snprintf(path, sizeof(path), "%s/tracing_on", t->inst);
	if ((rc = write_file(path, "1", err)))
		goto out_destroy;
	if (pthread_create(&t->thread, NULL, reader_main, t) != 0) {
		rc = nf_error_set(err, NF_ENOMEM, "cannot start the tracefs reader thread");
		goto out_destroy;
	}
	t->thread_running = true;
	*origin_ns = t->origin_ns;
	*out = t;
	return 0;
out_destroy:
	nf_kernel_trace_destroy(t);
	return rc;
}

/* One CPU's pages as a stream of records. */
struct live_iter {
	struct kbuffer *kb;
	const struct nf_kpages *cpu;
	size_t page;
	bool has;
	bool first_on_page;
	bool drop_pending;     /* its dropped sub-buffers are not reported yet */
	unsigned long long ts;
	void *data;
};

static void iter_load(struct live_iter *it, size_t subbuf)
{
	it->has = false;
	while (it->page < it->cpu->n_pages) {
		if (kbuffer_load_subbuffer(it->kb, (void *)(it->cpu->pages + it->page * subbuf)) == 0 &&
		    (it->data = kbuffer_read_event(it->kb, &it->ts))) {
			it->has = true;
			it->first_on_page = true;
			return;
		}
		it->page++;
	}
}

static void iter_next(struct live_iter *it, size_t subbuf)
{
	it->first_on_page = false;
	if ((it->data = kbuffer_next_event(it->kb, &it->ts)))
		return;
	it->page++;
	iter_load(it, subbuf);
}

int nf_kpages_decode(struct nf_kdecoder *d, struct tep_handle *tep, const struct nf_kpages *cpus,
		     int ncpu, size_t subbuf, struct nf_error *err)
{
	struct live_iter *its = calloc((size_t)ncpu, sizeof(*its));
	int rc = 0;

	if (!its)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	for (int c = 0; c < ncpu; c++) {
		if (!(its[c].kb = tep_kbuffer(tep))) {
			rc = nf_error_set(err, NF_ENOMEM, "out of memory");
			goto out_free;
		}
		its[c].cpu = &cpus[c];
		its[c].drop_pending = cpus[c].dropped > 0;
		iter_load(&its[c], subbuf);
	}
	for (;;) {
		int best = -1, drop = -1;

		for (int c = 0; c < ncpu; c++) {
			if (its[c].has && (best < 0 || its[c].ts < its[best].ts))
				best = c;
			if (its[c].drop_pending && (drop < 0 || cpus[c].dropped_ts < cpus[drop].dropped_ts))
				drop = c;
		}
		/* Sub-buffers the reader could not keep: lost, count unknown, in
		 * time order with the records. */
		if (drop >= 0 && (best < 0 || cpus[drop].dropped_ts <= its[best].ts)) {
			its[drop].drop_pending = false;
			if ((rc = nf_kdecoder_lost(d, drop, cpus[drop].dropped_ts, -1, err)))
				goto out_free;
			continue;
		}
		if (best < 0)
			break;
		struct live_iter *it = &its[best];
		struct tep_record rec = { 0 };

		rec.ts = it->ts;
		rec.data = it->data;
		rec.size = kbuffer_event_size(it->kb);
		rec.cpu = best;
		rec.offset = (unsigned long long)(it->page * subbuf) + (unsigned)kbuffer_curr_offset(it->kb);
		rec.missed_events = it->first_on_page ? kbuffer_missed_events(it->kb) : 0;
		if ((rc = nf_kdecoder_record(d, &rec, best, err)))
			goto out_free;
		iter_next(it, subbuf);
	}
out_free:
	for (int c = 0; c < ncpu; c++)
		if (its[c].kb)
			kbuffer_free(its[c].kb);
	free(its);
	return rc;
}

int nf_kernel_trace_finish(struct nf_kernel_trace *t, const char *session_dir,
			   struct nf_kernel_stats *st, struct nf_error *err)
{
	struct nf_parser *p = NULL;
	struct nf_ctf_writer *w = NULL;
	struct nf_kdecoder *d = NULL;
	struct tep_handle *tep = NULL;
	char path[1400];
	int rc;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/tracing_on", t->inst);
	write_file(path, "0", NULL);
	if (t->thread_running) {
		atomic_store(&t->stop, 1);
		pthread_join(t->thread, NULL);
		t->thread_running = false;
	}
	while (drain_once(t))
		;
	if ((rc = nf_parser_open(session_dir, &p, err)))
		return rc;
	const struct nf_session_info *in = nf_parser_info(p);
	struct nf_kclock_map map = { t->origin_ns, in->start_ticks, in->cpu_frequency };

	nf_parser_destroy(p);
	if (!(tep = tep_alloc()))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	tep_set_loglevel(TEP_LOG_NONE);
	tep_set_long_size(tep, (int)sizeof(long));
	tep_set_page_size(tep, (int)t->subbuf);
	tep_set_cpus(tep, t->ncpu);
	snprintf(path, sizeof(path), "%s/events", t->inst);
	t->systems[t->n_systems] = NULL;
	if ((rc = nf_kformats_load(tep, path, (const char *const *)t->systems, err)))
		goto out_free;
	if ((rc = nf_ctf_writer_open_append(session_dir, &w, err)))
		goto out_free;
	d = nf_kdecoder_create(tep, w, &map, (uint32_t)t->ncpu, 1, "mono", "tracefs", err);
	if (!d) {
		rc = err->code ? err->code : NF_ENOMEM;
		goto out_free;
	}
	if ((rc = nf_kpages_decode(d, tep, t->cpus, t->ncpu, t->subbuf, err)))
		goto out_free;
	nf_kdecoder_get_stats(d, st);
	rc = 0;
out_free:
	nf_kdecoder_destroy(d);
	if (w) {
		int rc2 = nf_ctf_writer_close(w, rc ? NULL : err);

		if (!rc)
			rc = rc2;
	}
	tep_free(tep);
	return rc;
}
