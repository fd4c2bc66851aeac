/*
 * The CTF 1.8 writer: turns nf_events into a trace directory that babeltrace2
 * and our parser read. The TSDL metadata is generated from the schema table
 * (schemas/events.def), so the file format can never drift from the events.
 * Events are buffered into packets.
 *
 * Crash safety: a write() of many pages can be cut short between two pages
 * when its process is killed, and babeltrace2 refuses a stream file that ends
 * in a torn packet. So by default the recording process never writes the
 * stream files itself: a small committer process (ctf_committer.c), forked
 * when the writer is created, appends the whole packets. Packets are built in place in a ring of
 * shared memory per stream and published, once whole, by a descriptor in a
 * shared control block; the socket between the two only wakes a sleeping
 * side (every 2 MiB of packets, or when the recorder needs ring space) and
 * carries the committer's replies. If the recorder dies (even by SIGKILL),
 * the committer sees end-of-file, writes every published packet (a packet
 * being built is never published), cuts off a socket packet it received only
 * in part, syncs the files and exits: the session stays readable up to its
 * last complete packet. The committer ignores SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT and SIGXFSZ (so a file size limit is a write error,
 * EFBIG), and calls only async-signal-safe functions (it may be forked from a
 * threaded program). A write error there (disk full) is reported back with
 * the file and the offset; the stream is cut back to its last whole packet.
 * Packets handed to the committer are padded to whole 4 KiB blocks (CTF
 * packets may end in padding), so it writes them with O_DIRECT straight from
 * the ring, with no copy into the page cache; where the filesystem refuses
 * direct I/O it writes normally and starts writeback every few MB. It fsyncs
 * at the end, so a session reported complete is on disk, and delayed write
 * errors are seen.
 * The metadata is written to a hidden file and renamed into place, so it is
 * either complete or absent.
 */
#define _GNU_SOURCE /* sync_file_range */
#include "contract/ctf.h"
#include "contract/errors.h"
#include "contract/ctf_meta.h"
#include "ctf_commit.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the CTF writer assumes a little-endian host"
#endif

#define NF_CTF_MAGIC 0xC1FC1FC1u
#define NF_CTF_DEFAULT_PACKET (256u * 1024u) /* fewer hand-overs to the committer */
/* packet header: magic(4) uuid(16) stream_id(4); context: 6 x u64 */
#define NF_CTF_PKT_HDR_SIZE (4u + 16u + 4u + 6u * 8u)

struct nf_ctf_stream {
	int fd;
	const char *name;
	char path[4096];
	unsigned char *buf;      /* the packet being built, header included: in the
				  * stream's ring, or in pbuf */
	size_t len, cap;         /* len 0: no packet begun */
	unsigned char *pbuf;     /* private buffer (no committer, or a large packet) */
	size_t pcap;
	bool in_ring;
	uint64_t ring_head;      /* bytes put in the stream's ring so far (with skipped ends) */
	uint64_t ts_begin, ts_last;
	uint32_t n_events;
	uint64_t seq;            /* packet sequence number */
	uint64_t file_size;      /* bytes of whole packets on disk */
	bool used;
};

struct nf_ctf_writer {
	char dir[4096];
	unsigned char uuid[16];
	uint32_t packet_size;
	bool truth;
	struct nf_ctf_stream streams[NF_STREAM_COUNT];
	struct nf_ctf_writer_stats stats;
	struct nf_error err;
	int sock;                /* to the committer process */
	pid_t committer;         /* 0: no committer, write in-process */
	unsigned char reply[24]; /* a committer reply being received */
	size_t reply_len;
	bool committer_done;     /* it said it synced and closed everything */
	unsigned char *shared;   /* shared with the committer: control block, then the rings */
	unsigned char *ring;     /* NF_CTF_RING_SIZE bytes of packets per stream */
	uint64_t desc_head;      /* packet descriptors published */
	uint64_t kick_bytes;     /* bytes published since the committer was last woken */
	bool append;             /* nf_ctf_writer_open_append: a stream added to a session */
};


static const char *const nf_ctf_stream_names[NF_STREAM_COUNT] = { "events", "truth", "kernel" };

/* ---- metadata ---- */

char *nf_ctf_metadata_text(const struct nf_ctf_writer_options *opts, const char *uuid_str)
{
	/* One generator for the writer and the parser's pre-scan (core/ctf_meta.c). */
	return nf_ctf_meta_render(uuid_str, opts->env, opts->n_env, opts->cpu_frequency,
				  opts->clock_offset, opts->truth_stream);
}

/* ---- writer ---- */

static void uuid_from_env(const struct nf_ctf_writer_options *opts, unsigned char uuid[16])
{
	/* Derived from the environment, so deterministic sessions are byte-identical. */
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;

	for (size_t i = 0; i < opts->n_env; i++) {
		const struct nf_ctf_env_entry *e = &opts->env[i];
		char num[32];
		const char *parts[2] = { e->key, e->is_int ? num : (e->sval ? e->sval : "") };

		snprintf(num, sizeof(num), "%lld", (long long)e->ival);
		for (int p = 0; p < 2; p++)
			for (const char *c = parts[p]; *c; c++) {
				h1 = (h1 ^ (unsigned char)*c) * 0x100000001b3ull;
				h2 = (h2 ^ (unsigned char)*c) * 0x100000001b3ull + 7;
			}
	}
	memcpy(uuid, &h1, 8);
	memcpy(uuid + 8, &h2, 8);
	uuid[6] = (unsigned char)((uuid[6] & 0x0f) | 0x40); /* version 4 layout */
	uuid[8] = (unsigned char)((uuid[8] & 0x3f) | 0x80);
}

static void uuid_format(const unsigned char u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
}


static int write_all(int fd, const void *buf, size_t len)
{
	size_t done;

	return nf_ctf_write_some(fd, buf, len, &done);
}

static int dir_prepare(const char *dir, struct nf_error *err)
{
	struct stat st;

	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return nf_error_set(err, NF_EIO, "%s: cannot create directory: %s", dir,
				    strerror(errno));
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return nf_error_set(err, NF_EEXIST, "%s: exists and is not a directory", dir);
	DIR *d = opendir(dir);
	if (!d)
		return nf_error_set(err, NF_EIO, "%s: %s", dir, strerror(errno));
	struct dirent *de;
	bool empty = true;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	if (!empty)
		return nf_error_set(err, NF_EEXIST, "%s: directory is not empty", dir);
	return 0;
}

/* Makes room for `more` bytes after the packet's len; a packet outgrowing
 * its place in the ring moves to the private buffer. */
static int stream_reserve(struct nf_ctf_stream *s, size_t more)
{
	if (s->len + more <= s->cap)
		return 0;
	size_t ncap = s->pcap ? s->pcap : NF_CTF_DEFAULT_PACKET;
	while (ncap < s->len + more)
		ncap *= 2;
	if (ncap > s->pcap) {
		unsigned char *nb = s->in_ring ? malloc(ncap) : realloc(s->pbuf, ncap);

		if (!nb)
			return NF_ENOMEM;
		if (s->in_ring)
			free(s->pbuf);
		s->pbuf = nb;
		s->pcap = ncap;
	}
	if (s->in_ring)
		memcpy(s->pbuf, s->buf, s->len);
	s->in_ring = false;
	s->buf = s->pbuf;
	s->cap = s->pcap;
	return 0;
}


/* ---- talking to the committer process (ctf_committer.c) ---- */

/* Turns a committer's error reply into the writer's error. */
static void committer_error(struct nf_ctf_writer *w, const struct nf_ctf_reply *r)
{
	const char *path = r->sid >= 0 && r->sid < NF_STREAM_COUNT ? w->streams[r->sid].path : w->dir;

	switch (r->kind) {
	case NF_CTF_REPLY_OPEN:
		nf_error_set(&w->err, NF_EIO, "%s: cannot create: %s", path, strerror(r->err));
		break;
	case NF_CTF_REPLY_WRITE:
		nf_error_set(&w->err, NF_EIO, "%s: write failed after %llu bytes: %s", path,
			     (unsigned long long)r->offset, strerror(r->err));
		break;
	case NF_CTF_REPLY_SYNC:
		nf_error_set(&w->err, NF_EIO, "%s: fsync or close failed: %s", path,
			     strerror(r->err));
		break;
	default:
		break;
	}
}

enum committer_wait { WAIT_NONE, WAIT_ONE, WAIT_END };

/*
 * Takes in what the committer has said: what is there (WAIT_NONE), at least
 * one more reply (WAIT_ONE), or everything until it closes (WAIT_END).
 * Returns false when the committer has closed its end.
 */
static bool committer_poll(struct nf_ctf_writer *w, enum committer_wait wait)
{
	bool got = false;

	for (;;) {
		bool block = wait == WAIT_END || (wait == WAIT_ONE && !got);
		ssize_t n = recv(w->sock, w->reply + w->reply_len, sizeof(w->reply) - w->reply_len,
				 block ? 0 : MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return false;
		if (n < 0)
			return true;
		w->reply_len += (size_t)n;
		if (w->reply_len < sizeof(w->reply))
			continue;
		struct nf_ctf_reply r;

		memcpy(&r, w->reply, sizeof(r));
		w->reply_len = 0;
		got = true;
		if (r.kind == NF_CTF_REPLY_DONE)
			w->committer_done = true;
		else if (r.kind != NF_CTF_REPLY_ACK && !w->err.code)
			committer_error(w, &r);
	}
}

static int committer_start(struct nf_ctf_writer *w)
{
	char meta[4200];
	const char *paths[NF_STREAM_COUNT];
	int sv[2], lock;
	unsigned char *buf, *map;
	pid_t pid;

	/* The committer holds an exclusive flock on DIR/metadata for its whole
	 * life (taken here, inherited across fork, dropped by the parent): a
	 * flock(LOCK_SH) on it returns once the session files are final. */
	snprintf(meta, sizeof(meta), "%s/metadata", w->dir);
	lock = open(meta, O_RDONLY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX) != 0) {
		int e = errno;
		if (lock >= 0)
			close(lock);
		return nf_error_set(&w->err, NF_EIO, "%s: cannot lock: %s", meta, strerror(e));
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		int e = errno;
		close(lock);
		return nf_error_set(&w->err, NF_EIO, "%s: socketpair: %s", w->dir, strerror(e));
	}
	map = mmap(NULL, NF_CTF_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	/* The committer's buffer for socket packets: a mapping, whole pages
	 * (so aligned for O_DIRECT), that the child never has to free (free is
	 * not async-signal-safe). */
	buf = mmap(NULL, NF_CTF_COMMIT_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (buf == MAP_FAILED || map == MAP_FAILED) {
		if (map != MAP_FAILED)
			munmap(map, NF_CTF_MAP_SIZE);
		if (buf != MAP_FAILED)
			munmap(buf, NF_CTF_COMMIT_CHUNK);
		close(lock);
		close(sv[0]);
		close(sv[1]);
		return nf_error_set(&w->err, NF_ENOMEM, "ctf writer: out of memory");
	}
	w->shared = map;
	w->ring = map + NF_CTF_SHARED_SIZE;
	for (int s = 0; s < NF_STREAM_COUNT; s++)
		paths[s] = w->streams[s].path;
	pid = fork();
	if (pid < 0) {
		int e = errno;
		munmap(map, NF_CTF_MAP_SIZE);
		w->shared = w->ring = NULL;
		munmap(buf, NF_CTF_COMMIT_CHUNK);
		close(lock);
		close(sv[0]);
		close(sv[1]);
		return nf_error_set(&w->err, NF_EIO, "%s: cannot start the committer process: %s",
				    w->dir, strerror(e));
	}
	if (pid == 0) {
		close(sv[0]);
		nf_ctf_committer_main(sv[1], paths, map, w->ring, buf);
	}
	munmap(buf, NF_CTF_COMMIT_CHUNK);
	close(lock);
	close(sv[1]);
	w->sock = sv[0];
	w->committer = pid;
	return 0;
}

/* Sends all of an iovec array, whatever the socket takes at a time. */
static int send_all(int sock, struct iovec *iov, int iovcnt)
{
	struct msghdr mh;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)iovcnt;
	while (mh.msg_iovlen) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		while (n > 0 || (mh.msg_iovlen && mh.msg_iov[0].iov_len == 0)) {
			size_t take = (size_t)n < mh.msg_iov[0].iov_len ? (size_t)n : mh.msg_iov[0].iov_len;

			mh.msg_iov[0].iov_base = (unsigned char *)mh.msg_iov[0].iov_base + take;
			mh.msg_iov[0].iov_len -= take;
			n -= (ssize_t)take;
			if (mh.msg_iov[0].iov_len == 0) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	return 0;
}

static int committer_lost(struct nf_ctf_writer *w, int e)
{
	committer_poll(w, WAIT_END); /* why did it stop listening? */
	if (!w->err.code)
		nf_error_set(&w->err, NF_EIO, "%s: the committer process stopped%s%s", w->dir,
			     e ? ": " : "", e ? strerror(e) : "");
	return w->err.code;
}

/* Wakes the committer if it sleeps, and takes in what it has said. */
static int committer_kick(struct nf_ctf_writer *w)
{
	struct nf_ctf_shared *sh = (struct nf_ctf_shared *)(void *)w->shared;

	w->kick_bytes = 0;
	if (atomic_exchange(&sh->committer_idle, 0)) {
		struct nf_ctf_pkt_msg m = { 0, NF_CTF_MSG_WAKE, 0, 0 };
		struct iovec iov = { &m, sizeof(m) };
		int rc = send_all(w->sock, &iov, 1);

		if (rc)
			return committer_lost(w, -rc);
	}
	if (!committer_poll(w, WAIT_NONE))
		return committer_lost(w, 0);
	return w->err.code;
}

/* Waits until stream sid's ring has room up to its byte count `end` and a
 * descriptor is free. */
static int committer_room(struct nf_ctf_writer *w, int sid, uint64_t end)
{
	struct nf_ctf_shared *sh = (struct nf_ctf_shared *)(void *)w->shared;

	for (;;) {
		if (end - atomic_load_explicit(&sh->ring_tail[sid], memory_order_acquire) <= NF_CTF_RING_SIZE &&
		    w->desc_head - atomic_load_explicit(&sh->desc_tail, memory_order_acquire) < NF_CTF_DESCS)
			return 0;
		atomic_store(&sh->recorder_waiting, 1);
		if (end - atomic_load(&sh->ring_tail[sid]) <= NF_CTF_RING_SIZE &&
		    w->desc_head - atomic_load(&sh->desc_tail) < NF_CTF_DESCS)
			return 0;
		int rc = committer_kick(w);
		if (rc)
			return rc;
		if (!committer_poll(w, WAIT_ONE))
			return committer_lost(w, 0);
		if (w->err.code)
			return w->err.code;
	}
}

/* Room for a packet of len bytes at the head of stream sid's ring (a packet
 * never wraps): returns where it goes, or NULL (the writer's error is set). */
static unsigned char *committer_ring_place(struct nf_ctf_writer *w, int sid, size_t len)
{
	struct nf_ctf_stream *s = &w->streams[sid];
	uint64_t pos = s->ring_head % NF_CTF_RING_SIZE;
	uint64_t skip = pos + len > NF_CTF_RING_SIZE ? NF_CTF_RING_SIZE - pos : 0;

	if (committer_room(w, sid, s->ring_head + skip + len))
		return NULL;
	s->ring_head += skip;
	return w->ring + (size_t)sid * NF_CTF_RING_SIZE + s->ring_head % NF_CTF_RING_SIZE;
}

/* Publishes the len bytes at the head of stream sid's ring as a packet. */
static int committer_publish(struct nf_ctf_writer *w, int sid, size_t len)
{
	struct nf_ctf_shared *sh = (struct nf_ctf_shared *)(void *)w->shared;
	struct nf_ctf_stream *s = &w->streams[sid];
	struct nf_ctf_desc *d = &sh->desc[w->desc_head % NF_CTF_DESCS];

	s->ring_head += len;
	d->sid = (uint32_t)sid;
	d->zero = 0;
	d->len = len;
	d->end = s->ring_head;
	atomic_store(&sh->desc_head, ++w->desc_head);
	w->kick_bytes += len;
	return w->kick_bytes >= NF_CTF_KICK_BYTES ? committer_kick(w) : w->err.code;
}

/* Hands one whole packet built in a private buffer to the committer. */
static int committer_send(struct nf_ctf_writer *w, int sid, const void *pkt, size_t len)
{
	int rc;

	if (len <= NF_CTF_RING_SIZE / 4) {
		unsigned char *dst = committer_ring_place(w, sid, len);

		if (!dst)
			return w->err.code;
		memcpy(dst, pkt, len);
		return committer_publish(w, sid, len);
	}
	/* A socket packet: its message says how many ring packets come first. */
	struct nf_ctf_pkt_msg m = { (uint32_t)sid, NF_CTF_MSG_PACKET, len, w->desc_head };
	struct iovec iov[2] = { { &m, sizeof(m) }, { (void *)(uintptr_t)pkt, len } };

	rc = send_all(w->sock, iov, 2);
	if (rc)
		return committer_lost(w, -rc);
	return committer_kick(w);
}

/* Ends the committer: it syncs and closes the files; returns its verdict. */
static void committer_finish(struct nf_ctf_writer *w)
{
	int st;

	shutdown(w->sock, SHUT_WR);
	committer_poll(w, WAIT_END);
	close(w->sock);
	w->sock = -1;
	while (waitpid(w->committer, &st, 0) < 0)
		if (errno != EINTR)
			break;
	w->committer = 0;
	munmap(w->shared, NF_CTF_MAP_SIZE);
	w->shared = w->ring = NULL;
	if (!w->committer_done && !w->err.code)
		nf_error_set(&w->err, NF_EIO, "%s: the committer process died before syncing the session",
			     w->dir);
}

/* Begins a packet: built in place in the stream's ring when there is a
 * committer and the packet fits a quarter of the ring, else in the private
 * buffer. */
static int stream_begin_packet(struct nf_ctf_writer *w, int sid)
{
	struct nf_ctf_stream *s = &w->streams[sid];
	size_t slot = ((size_t)w->packet_size + NF_CTF_BLOCK - 1) & ~(size_t)(NF_CTF_BLOCK - 1);

	s->len = 0;
	s->n_events = 0;
	if (w->committer > 0 && slot >= NF_CTF_PKT_HDR_SIZE && slot <= NF_CTF_RING_SIZE / 4) {
		unsigned char *dst = committer_ring_place(w, sid, slot);

		if (!dst)
			return w->err.code;
		s->buf = dst;
		s->cap = slot;
		s->in_ring = true;
	} else {
		s->in_ring = false;
		s->buf = s->pbuf;
		s->cap = s->pcap;
		if (stream_reserve(s, NF_CTF_PKT_HDR_SIZE))
			return nf_error_set(&w->err, NF_ENOMEM, "ctf writer: out of memory");
	}
	s->len = NF_CTF_PKT_HDR_SIZE; /* header filled in at flush */
	return 0;
}

static int stream_flush(struct nf_ctf_writer *w, int sid)
{
	struct nf_ctf_stream *s = &w->streams[sid];
	unsigned char *p = s->buf;
	uint32_t magic = NF_CTF_MAGIC, stream_id = (uint32_t)sid;
	uint64_t bits = (uint64_t)s->len * 8u, zero = 0, pbits;
	size_t plen = s->len;

	if (s->len == 0 || s->n_events == 0)
		return 0;
	if (w->err.code)
		return w->err.code;
	if (w->committer > 0) {
		/* Whole blocks, so that the committer can write with O_DIRECT
		 * (CTF packets may end in padding: content_size < packet_size). */
		plen = (s->len + NF_CTF_BLOCK - 1) & ~(size_t)(NF_CTF_BLOCK - 1);
		if (stream_reserve(s, plen - s->len))
			return nf_error_set(&w->err, NF_ENOMEM, "ctf writer: out of memory");
		memset(s->buf + s->len, 0, plen - s->len);
		p = s->buf;
	}
	pbits = (uint64_t)plen * 8u;
	if (w->committer <= 0 && s->fd < 0) {
		s->fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (s->fd < 0)
			return nf_error_set(&w->err, NF_EIO, "%s: cannot create: %s", s->path,
					    strerror(errno));
	}
	memcpy(p, &magic, 4);
	memcpy(p + 4, w->uuid, 16);
	memcpy(p + 20, &stream_id, 4);
	memcpy(p + 24, &s->ts_begin, 8);
	memcpy(p + 32, &s->ts_last, 8);
	memcpy(p + 40, &bits, 8);
	memcpy(p + 48, &pbits, 8);
	memcpy(p + 56, &zero, 8);
	memcpy(p + 64, &s->seq, 8);
	if (w->committer > 0) {
		int rc = s->in_ring ? committer_publish(w, sid, plen) : committer_send(w, sid, s->buf, plen);
		if (rc)
			return rc;
		goto sent;
	}
	int rc = write_all(s->fd, s->buf, s->len);
	if (rc) {
		/* Keep the stream whole: drop the partial packet from the file. */
		if (ftruncate(s->fd, (off_t)s->file_size) != 0) {
			/* nothing more we can do; the error below is what matters */
		}
		return nf_error_set(&w->err, NF_EIO, "%s: write failed after %llu bytes: %s",
				    s->path, (unsigned long long)s->file_size, strerror(-rc));
	}
sent:
	s->file_size += plen;
	w->stats.bytes += plen;
	w->stats.packets++;
	s->seq++;
	s->len = 0; /* the next packet begins with the next event */
	s->n_events = 0;
	return 0;
}

int nf_ctf_writer_create(const char *dir, const struct nf_ctf_writer_options *opts,
			 struct nf_ctf_writer **out, struct nf_error *err)
{
	struct nf_ctf_writer *w;
	char uuid_str[37], path[4200], tmp[4200];
	int rc, fd;

	*out = NULL;
	if (!dir || !*dir || !opts || opts->cpu_frequency == 0)
		return nf_error_set(err, NF_EINVAL, "ctf writer: missing directory or clock frequency");
	if (strlen(dir) > 3000)
		return nf_error_set(err, NF_EINVAL, "ctf writer: directory name too long");
	rc = dir_prepare(dir, err);
	if (rc)
		return rc;
	w = calloc(1, sizeof(*w));
	if (!w)
		return nf_error_set(err, NF_ENOMEM, "ctf writer: out of memory");
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->packet_size = opts->packet_size ? opts->packet_size : NF_CTF_DEFAULT_PACKET;
	w->truth = opts->truth_stream;
	w->sock = -1;
	uuid_from_env(opts, w->uuid);
	uuid_format(w->uuid, uuid_str);
	for (int s = 0; s < NF_STREAM_COUNT; s++) {
		w->streams[s].fd = -1;
		w->streams[s].name = nf_ctf_stream_names[s];
		snprintf(w->streams[s].path, sizeof(w->streams[s].path), "%s/%s", dir,
			 nf_ctf_stream_names[s]);
	}
	char *meta = nf_ctf_metadata_text(opts, uuid_str);
	if (!meta) {
		free(w);
		return nf_error_set(err, NF_ENOMEM, "ctf writer: out of memory");
	}
	snprintf(path, sizeof(path), "%s/metadata", dir);
	snprintf(tmp, sizeof(tmp), "%s/.metadata.tmp", dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = nf_error_set(err, NF_EIO, "%s: cannot create: %s", path, strerror(errno));
		goto out_free;
	}
	rc = write_all(fd, meta, strlen(meta));
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		rc = nf_error_set(err, NF_EIO, "%s: write failed: %s", path, strerror(-rc));
		goto out_free;
	}
	free(meta);
	rc = committer_start(w);
	if (rc) {
		nf_error_set(err, rc, "%s", w->err.msg);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
out_free:
	free(meta);
	free(w);
	return rc;
}

int nf_ctf_writer_open_append(const char *dir, struct nf_ctf_writer **out, struct nf_error *err)
{
	char path[4200], meta[8192];
	unsigned char uuid[16];
	const char *u;
	ssize_t n;
	int fd;

	*out = NULL;
	if (!dir || !*dir || strlen(dir) > 3000)
		return nf_error_set(err, NF_EINVAL, "ctf writer: missing or too long directory name");
	snprintf(path, sizeof(path), "%s/metadata", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path,
				    strerror(errno));
	/* The trace block, with its uuid, comes first in the metadata we write. */
	n = read(fd, meta, sizeof(meta) - 1);
	close(fd);
	if (n < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
	meta[n] = '\0';
	u = strstr(meta, "uuid = \"");
	if (!u || !strstr(meta, "/* CTF 1.8 */"))
		return nf_error_set(err, NF_EFORMAT, "%s: not metadata written by nftrace", path);
	u += 8;
	for (int i = 0; i < 16; i++) {
		unsigned int byte;

		if (*u == '-')
			u++;
		if (sscanf(u, "%2x", &byte) != 1)
			return nf_error_set(err, NF_EFORMAT, "%s: bad trace uuid", path);
		uuid[i] = (unsigned char)byte;
		u += 2;
	}
	struct nf_ctf_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return nf_error_set(err, NF_ENOMEM, "ctf writer: out of memory");
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->packet_size = NF_CTF_DEFAULT_PACKET;
	w->sock = -1; /* no committer: the appended stream is written in-process */
	w->append = true;
	memcpy(w->uuid, uuid, 16);
	for (int s = 0; s < NF_STREAM_COUNT; s++) {
		w->streams[s].fd = -1;
		w->streams[s].name = nf_ctf_stream_names[s];
		snprintf(w->streams[s].path, sizeof(w->streams[s].path), "%s/%s", dir,
			 nf_ctf_stream_names[s]);
	}
	*out = w;
	return 0;
}

/* Per event, from the schema at compile time: bytes of its header and
 * fixed-size fields, and whether it has variable-length ones. */
#define NF_CTF_SZ_U8 1
#define NF_CTF_SZ_U16 2
#define NF_CTF_SZ_U32 4
#define NF_CTF_SZ_U64 8
#define NF_CTF_SZ_STR 0
#define NF_CTF_SZ_U32SEQ 0
#define NF_CTF_SZ_ENTRIES 0
#define NF_CTF_VAR_U8 0
#define NF_CTF_VAR_U16 0
#define NF_CTF_VAR_U32 0
#define NF_CTF_VAR_U64 0
#define NF_CTF_VAR_STR 1
#define NF_CTF_VAR_U32SEQ 1
#define NF_CTF_VAR_ENTRIES 1
static const uint32_t nf_ctf_fixed_size[NF_EV_COUNT] = {
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) [NF_EV_##ID] = 4 + 8
#define NF_FIELD(ID, TYPE, NAME, DOC) + NF_CTF_SZ_##TYPE
#define NF_EVENT_END(ID) ,
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END
};
static const bool nf_ctf_has_var[NF_EV_COUNT] = {
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) [NF_EV_##ID] = 0
#define NF_FIELD(ID, TYPE, NAME, DOC) + NF_CTF_VAR_##TYPE
#define NF_EVENT_END(ID) ,
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END
};

/* Each event's field types as NF_FT_* + 1, a 0 after the last, and its
 * stream: the encoder reads these compact tables, not the descriptors. */
static const uint8_t nf_ctf_ftypes[NF_EV_COUNT][NF_EVENT_MAX_FIELDS + 1] = {
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) [NF_EV_##ID] = {
#define NF_FIELD(ID, TYPE, NAME, DOC) NF_FT_##TYPE + 1,
#define NF_EVENT_END(ID) 0 },
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END
};
static const uint8_t nf_ctf_stream_of[NF_EV_COUNT] = {
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) [NF_EV_##ID] = STREAM,
#define NF_FIELD(ID, TYPE, NAME, DOC)
#define NF_EVENT_END(ID)
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END
};

/* Field packers (little-endian host), one per field type (unused ones are fine:
 * the schema need not have every type). */
__attribute__((unused)) static inline unsigned char *nf_ctf_pack_U8(unsigned char *p, const struct nf_event *ev, uint32_t f)
{
	*p = (unsigned char)ev->f[f];
	return p + 1;
}

__attribute__((unused)) static inline unsigned char *nf_ctf_pack_U16(unsigned char *p, const struct nf_event *ev, uint32_t f)
{
	uint16_t x = (uint16_t)ev->f[f];

	memcpy(p, &x, 2);
	return p + 2;
}

__attribute__((unused)) static inline unsigned char *nf_ctf_pack_U32(unsigned char *p, const struct nf_event *ev, uint32_t f)
{
	uint32_t x = (uint32_t)ev->f[f];

	memcpy(p, &x, 4);
	return p + 4;
}

__attribute__((unused)) static inline unsigned char *nf_ctf_pack_U64(unsigned char *p, const struct nf_event *ev, uint32_t f)
{
	memcpy(p, &ev->f[f], 8);
	return p + 8;
}

__attribute__((unused)) static inline unsigned char *nf_ctf_pack_STR(unsigned char *p, const struct nf_event *ev, uint32_t f)
{
	const char *str = ev->str ? ev->str : "";
	size_t n = strlen(str) + 1;

	(void)f;
	memcpy(p, str, n);
	return p + n;
}

/* Sequences: their length is the field before them. */
__attribute__((unused)) static inline unsigned char *nf_ctf_pack_U32SEQ(unsigned char *p, const struct nf_event *ev, uint32_t f)
{
	size_t n = 4 * (size_t)ev->f[f - 1];

	if (n)
		memcpy(p, ev->u32s, n);
	return p + n;
}

__attribute__((unused)) static inline unsigned char *nf_ctf_pack_ENTRIES(unsigned char *p, const struct nf_event *ev, uint32_t f)
{
	size_t n = NF_LOG_ENTRY_SIZE * (size_t)ev->f[f - 1];

	if (n)
		memcpy(p, ev->entries, n);
	return p + n;
}

/* The sink calls this directly (not through the exported symbol's PLT entry). */
static int ctf_emit(struct nf_ctf_writer *w, const struct nf_event *ev)
{
	struct nf_ctf_stream *s;
	size_t need;
	int sid;

	if (w->err.code)
		return w->err.code;
	if (ev->id >= NF_EV_COUNT)
		return nf_error_set(&w->err, NF_EINVAL, "ctf writer: unknown event id %u", ev->id);
	sid = nf_ctf_stream_of[ev->id];
	if (sid == NF_STREAM_TRUTH && !w->truth)
		return 0; /* ground truth not requested */
	const uint8_t *ft = nf_ctf_ftypes[ev->id];
	s = &w->streams[sid];
	if (s->n_events && ev->ts < s->ts_last)
		return nf_error_set(&w->err, NF_EINVAL,
				    "ctf writer: %s timestamp %llu before previous %llu in stream %s",
				    nf_event_desc(ev->id)->name, (unsigned long long)ev->ts,
				    (unsigned long long)s->ts_last, s->name);
	/* Size of the event: fixed part from the schema, then what varies. */
	need = nf_ctf_fixed_size[ev->id];
	if (nf_ctf_has_var[ev->id])
		for (uint32_t f = 0; ft[f]; f++) {
			switch ((enum nf_field_type)(ft[f] - 1)) {
			case NF_FT_STR: need += strlen(ev->str ? ev->str : "") + 1; break;
			case NF_FT_U32SEQ: need += 4 * (size_t)ev->f[f - 1]; break;
			case NF_FT_ENTRIES: need += NF_LOG_ENTRY_SIZE * (size_t)ev->f[f - 1]; break;
			default: break;
			}
		}
	if (s->n_events && s->len + need > w->packet_size) {
		int rc = stream_flush(w, sid);
		if (rc)
			return rc;
	}
	if (s->len == 0) {
		int rc = stream_begin_packet(w, sid);
		if (rc)
			return rc;
	}
	if (s->len + need > s->cap && stream_reserve(s, need))
		return nf_error_set(&w->err, NF_ENOMEM, "ctf writer: out of memory");
	if (s->n_events == 0)
		s->ts_begin = ev->ts;
	s->ts_last = ev->ts;
	unsigned char *p = s->buf + s->len;
	uint32_t id = ev->id;
	memcpy(p, &id, 4);
	memcpy(p + 4, &ev->ts, 8);
	p += 12;
	/* The fields, packed by code generated per event from the schema. */
	switch (id) {
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) case NF_EV_##ID: { uint32_t f_ = 0;
#define NF_FIELD(ID, TYPE, NAME, DOC) p = nf_ctf_pack_##TYPE(p, ev, f_++);
#define NF_EVENT_END(ID) (void)f_; break; }
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END
	default:
		break;
	}
	s->len = (size_t)(p - s->buf);
	s->n_events++;
	s->used = true;
	w->stats.events++;
	return 0;
}

int nf_ctf_writer_emit(struct nf_ctf_writer *w, const struct nf_event *ev)
{
	return ctf_emit(w, ev);
}

static int sink_emit(void *ctx, const struct nf_event *ev)
{
	return ctf_emit(ctx, ev);
}

struct nf_event_sink nf_ctf_writer_sink(struct nf_ctf_writer *w)
{
	struct nf_event_sink sink = { w, sink_emit };

	return sink;
}

int nf_ctf_writer_flush(struct nf_ctf_writer *w)
{
	for (int s = 0; s < NF_STREAM_COUNT; s++) {
		int rc = stream_flush(w, s);
		if (rc)
			return rc;
	}
	/* The packets are the committer's to write now, not when more come. */
	return w->committer > 0 ? committer_kick(w) : 0;
}

void nf_ctf_writer_get_stats(const struct nf_ctf_writer *w, struct nf_ctf_writer_stats *st)
{
	*st = w->stats;
	/* Count what is still buffered too. */
	for (int s = 0; s < NF_STREAM_COUNT; s++)
		if (w->streams[s].n_events)
			st->bytes += w->streams[s].len;
}

const struct nf_error *nf_ctf_writer_error(const struct nf_ctf_writer *w)
{
	return &w->err;
}

/*
 * The end of the recording, in the metadata: once every stream file is final,
 * the environment gains one line per stream, `recorded_NAME_bytes = N;` (0
 * for a stream never written), and the metadata is replaced atomically. A
 * session without these lines was never closed (its recorder was killed, or
 * the program exited without destroying its runtime); one whose stream is
 * shorter than recorded was cut since. An appended stream (kernel import into
 * a session) updates the lines of a session that has them, and only those.
 * The lines are ordinary integer environment entries, so the metadata stays
 * what core/ctf_meta.c renders. Returns 0 or an errno.
 */
static int mark_end(struct nf_ctf_writer *w)
{
	static const char env_open[] = "\nenv {\n", env_close[] = "};\n";
	char path[4200], tmp[4200], line[128];
	char *m = NULL, *out = NULL;
	size_t len = 0, cap = 0, o = 0;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/metadata", w->dir);
	snprintf(tmp, sizeof(tmp), "%s/.metadata.tmp", w->dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *n = realloc(m, cap = cap ? cap * 2 : 16384);
			if (!n) {
				close(fd);
				free(m);
				return ENOMEM;
			}
			m = n;
		}
		ssize_t n = read(fd, m + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errno;
			close(fd);
			free(m);
			return rc;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	m[len] = '\0';
	char *env = strstr(m, env_open), *end = env ? strstr(env, env_close) : NULL;
	if (!end || (w->append && !strstr(env, "\trecorded_events_bytes = "))) {
		free(m);
		return 0; /* not ours, or a session that never ended: leave it */
	}
	if (!(out = malloc(len + 512))) {
		free(m);
		return ENOMEM;
	}
	/* Everything before the end of the environment, minus older lines. */
	for (char *p = m; p < end;) {
		char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (!(p > env && strncmp(p, "\trecorded_", sizeof("\trecorded_") - 1) == 0)) {
			memcpy(out + o, p, l);
			o += l;
		}
		p += l;
	}
	for (int s = 0; s < NF_STREAM_COUNT; s++) {
		struct stat st;
		uint64_t size = stat(w->streams[s].path, &st) == 0 ? (uint64_t)st.st_size : 0;
		int k = snprintf(line, sizeof(line), "\trecorded_%s_bytes = %llu;\n", w->streams[s].name,
				 (unsigned long long)size);
		memcpy(out + o, line, (size_t)k);
		o += (size_t)k;
	}
	memcpy(out + o, end, strlen(end));
	o += strlen(end);
	free(m);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = errno;
		free(out);
		return rc;
	}
	rc = -write_all(fd, out, o);
	if (rc == 0 && fsync(fd) != 0)
		rc = errno;
	if (close(fd) != 0 && rc == 0)
		rc = errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = errno;
	if (rc)
		unlink(tmp);
	free(out);
	return rc;
}

int nf_ctf_writer_close(struct nf_ctf_writer *w, struct nf_error *err)
{
	int rc;

	if (!w)
		return 0;
	if (!w->err.code)
		nf_ctf_writer_flush(w);
	if (w->committer > 0)
		committer_finish(w);
	for (int s = 0; s < NF_STREAM_COUNT; s++) {
		struct nf_ctf_stream *st = &w->streams[s];

		if (st->fd >= 0) {
			if (!w->err.code && fsync(st->fd) != 0 && errno != EINVAL)
				nf_error_set(&w->err, NF_EIO, "%s: fsync: %s", st->path, strerror(errno));
			if (close(st->fd) != 0 && !w->err.code)
				nf_error_set(&w->err, NF_EIO, "%s: close: %s", st->path, strerror(errno));
		}
		free(st->pbuf);
	}
	if (!w->err.code) {
		int e = mark_end(w);

		if (e)
			nf_error_set(&w->err, NF_EIO, "%s/metadata: cannot record the end of the recording: %s",
				     w->dir, strerror(e));
	}
	rc = w->err.code;
	if (rc)
		nf_error_set(err, rc, "%s", w->err.msg);
	free(w);
	return rc;
}

void nf_ctf_writer_abandon(struct nf_ctf_writer *w)
{
	if (!w)
		return;
	if (w->sock >= 0)
		close(w->sock);
	if (w->shared)
		munmap(w->shared, NF_CTF_MAP_SIZE);
	for (int s = 0; s < NF_STREAM_COUNT; s++) {
		if (w->streams[s].fd >= 0)
			close(w->streams[s].fd);
		free(w->streams[s].pbuf);
	}
	free(w);
}

int nf_ctf_session_wait(const char *dir, struct nf_error *err)
{
	char meta[4200];
	int fd;

	snprintf(meta, sizeof(meta), "%s/metadata", dir);
	fd = open(meta, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", meta,
				    strerror(errno));
	while (flock(fd, LOCK_SH) != 0)
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return nf_error_set(err, NF_EIO, "%s: cannot lock: %s", meta, strerror(e));
		}
	close(fd);
	return 0;
}
