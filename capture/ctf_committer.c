/*
 * The committer process of the CTF writer (see ctf_writer.c for why it
 * exists): forked when the writer is created, it appends the whole packets
 * the recorder publishes in the shared rings (or sends on the socket), cuts
 * a stream back to its last whole packet on a write error or a torn socket
 * packet, fsyncs, reports and exits.
 *
 * RULE: everything in this file runs in the child of a fork() from a
 * program that may have other threads, so it calls only async-signal-safe
 * functions (signal-safety(7): read, send, write, open, fcntl, ftruncate,
 * fsync, close, sigaction, memset, _exit; plus sync_file_range, a bare
 * system call) and no malloc/free, stdio or locks. Nothing here may call
 * into the rest of nftrace. The ctest committer_signal_safe checks the
 * object file's undefined symbols against that list
 * (scripts/check-signal-safe.sh); extend the list there only with a
 * function signal-safety(7) names.
 */
#define _GNU_SOURCE /* sync_file_range, O_DIRECT */
#include "ctf_commit.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Reads exactly len bytes; returns len, or fewer at end-of-file or error. */
static size_t read_full(int fd, void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static void committer_reply(int sock, int kind, int sid, int e, uint64_t offset)
{
	struct nf_ctf_reply r = { kind, sid, e, 0, offset };
	const unsigned char *p = (const unsigned char *)&r;
	size_t left = sizeof(r);

	while (left) {
		ssize_t n = send(sock, p, left, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the recorder is gone; nobody to tell */
		p += n;
		left -= (size_t)n;
	}
}

/* write_some, and if direct I/O turns out not to work here, without it. */
static int committer_write(int fd, const void *buf, size_t len, size_t *done)
{
	int rc = nf_ctf_write_some(fd, buf, len, done);
	int fl;

	if (rc == -EINVAL && *done == 0 && (fl = fcntl(fd, F_GETFL)) >= 0 && (fl & O_DIRECT) &&
	    fcntl(fd, F_SETFL, fl & ~O_DIRECT) == 0)
		rc = nf_ctf_write_some(fd, buf, len, done);
	return rc;
}

/* The committer's state (its own memory, after the fork). */
struct nf_ctf_committer {
	int sock;
	const char *const *paths;
	struct nf_ctf_shared *sh;
	unsigned char *ring;
	int fds[NF_STREAM_COUNT];
	uint64_t committed[NF_STREAM_COUNT], started[NF_STREAM_COUNT];
	uint64_t tail;           /* descriptors done */
	bool failed;
};

/* Opens stream sid's file on first use; false when it cannot. */
static bool committer_open(struct nf_ctf_committer *c, uint32_t sid)
{
	if (c->failed)
		return false;
	if (c->fds[sid] >= 0)
		return true;
	/* Direct I/O from the ring: no copy into the page cache and no
	 * writeback later; where the filesystem refuses it, ordinary writes. */
	c->fds[sid] = open(c->paths[sid], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			   O_CLOEXEC | O_DIRECT, 0644);
	if (c->fds[sid] < 0 && errno == EINVAL)
		c->fds[sid] = open(c->paths[sid],
				   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (c->fds[sid] < 0) {
		committer_reply(c->sock, NF_CTF_REPLY_OPEN, (int)sid, errno, 0);
		c->failed = true;
		return false;
	}
	return true;
}

/* Whole packets of len bytes are on disk in stream sid. */
static void committer_committed(struct nf_ctf_committer *c, uint32_t sid, uint64_t len)
{
	c->committed[sid] += len;
	/* Start the disk on what is written so far, so that the fsync at the
	 * end has little left to wait for. */
	if (c->committed[sid] - c->started[sid] >= NF_CTF_WRITEBACK_STEP) {
		sync_file_range(c->fds[sid], (off_t)c->started[sid],
				(off_t)(c->committed[sid] - c->started[sid]), SYNC_FILE_RANGE_WRITE);
		c->started[sid] = c->committed[sid];
	}
}

/* A write error: cut the stream back to its last whole packet, report. */
static void committer_write_failed(struct nf_ctf_committer *c, uint32_t sid, int rc)
{
	if (ftruncate(c->fds[sid], (off_t)c->committed[sid]) != 0) {
		/* the write error below is the one to report */
	}
	committer_reply(c->sock, NF_CTF_REPLY_WRITE, (int)sid, -rc, c->committed[sid]);
	c->failed = true;
}

/*
 * Writes the published packets up to descriptor `limit`: runs of packets of
 * one stream that follow each other in the ring go out in one write. Space
 * is handed back after each run (and the recorder woken if it waits for it).
 * Returns false on a descriptor that cannot be the recorder's (not a packet).
 */
static bool committer_drain(struct nf_ctf_committer *c, uint64_t limit)
{
	while (c->tail < limit) {
		struct nf_ctf_desc d = c->sh->desc[c->tail % NF_CTF_DESCS];
		uint64_t off = (d.end - d.len) % NF_CTF_RING_SIZE, run = d.len, end = d.end;
		uint64_t n = 1;

		if (d.sid >= NF_STREAM_COUNT || d.len > NF_CTF_RING_SIZE || d.end < d.len ||
		    off + d.len > NF_CTF_RING_SIZE)
			return false;
		while (c->tail + n < limit && run < NF_CTF_MAX_WRITE) {
			const struct nf_ctf_desc *e = &c->sh->desc[(c->tail + n) % NF_CTF_DESCS];

			if (e->sid != d.sid || e->end < e->len || e->end - e->len != end ||
			    off + run != end % NF_CTF_RING_SIZE || off + run + e->len > NF_CTF_RING_SIZE)
				break;
			run += e->len;
			end = e->end;
			n++;
		}
		if (committer_open(c, d.sid)) {
			size_t done;
			int rc = committer_write(c->fds[d.sid], c->ring + (size_t)d.sid * NF_CTF_RING_SIZE + off,
						 (size_t)run, &done);

			if (rc) {
				/* Keep the whole packets that went out before the error. */
				for (uint64_t k = 0; k < n; k++) {
					uint64_t len = c->sh->desc[(c->tail + k) % NF_CTF_DESCS].len;

					if (len > done)
						break;
					done -= (size_t)len;
					c->committed[d.sid] += len;
				}
				committer_write_failed(c, d.sid, rc);
			} else {
				committer_committed(c, d.sid, run);
			}
		}
		c->tail += n;
		atomic_store(&c->sh->ring_tail[d.sid], end);
		atomic_store(&c->sh->desc_tail, c->tail);
		if (atomic_load(&c->sh->recorder_waiting) && atomic_exchange(&c->sh->recorder_waiting, 0))
			committer_reply(c->sock, NF_CTF_REPLY_ACK, (int)d.sid, 0, end);
	}
	return true;
}

/*
 * The committer's whole life: append whole packets, cut off a torn one, sync,
 * report, exit. Only async-signal-safe calls from here on.
 *
 * Ring packets are published in the shared control block (whole before they
 * are published). It sleeps on the socket when there is nothing to write: the
 * recorder wakes it, or closes the socket (end of the recording, or its
 * death): then it writes every published packet and ends. A socket packet
 * (one too large for the ring) follows its message and is written as it
 * arrives, after the ring packets published before it; if the recorder dies
 * before its end, the stream is cut back to its last whole packet.
 */
void nf_ctf_committer_main(int sock, const char *const paths[NF_STREAM_COUNT], void *shared,
			   unsigned char *ring, unsigned char *buf)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ };
	struct sigaction sa;
	struct nf_ctf_committer c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		sigaction(ignored[i], &sa, NULL);
	memset(&c, 0, sizeof(c));
	c.sock = sock;
	c.paths = paths;
	c.sh = (struct nf_ctf_shared *)shared;
	c.ring = ring;
	for (int s = 0; s < NF_STREAM_COUNT; s++)
		c.fds[s] = -1;
	for (;;) {
		struct nf_ctf_pkt_msg m;
		uint64_t head = atomic_load_explicit(&c.sh->desc_head, memory_order_acquire);

		if (c.tail != head) {
			if (!committer_drain(&c, head))
				goto out;
			continue;
		}
		/* Nothing to write: say so, look once more, then sleep. */
		atomic_store(&c.sh->committer_idle, 1);
		if (atomic_load(&c.sh->desc_head) != c.tail) {
			atomic_store(&c.sh->committer_idle, 0);
			continue;
		}
		size_t got = read_full(sock, &m, sizeof(m));
		atomic_store(&c.sh->committer_idle, 0);
		head = atomic_load_explicit(&c.sh->desc_head, memory_order_acquire);
		if (got != sizeof(m)) {
			/* The end of the recording, or its death: every published
			 * packet is whole. */
			committer_drain(&c, head);
			break;
		}
		if (m.ring == NF_CTF_MSG_WAKE)
			continue;
		if (m.ring != NF_CTF_MSG_PACKET || m.sid >= NF_STREAM_COUNT || m.end > head ||
		    m.end < c.tail || !committer_drain(&c, m.end))
			break; /* a torn message: not a packet */
		/* A socket packet, after the ring packets published before it. */
		bool ok = committer_open(&c, m.sid);
		int fd = c.fds[m.sid], rc = 0;
		for (uint64_t left = m.len; left;) {
			size_t want = left < NF_CTF_COMMIT_CHUNK ? (size_t)left : NF_CTF_COMMIT_CHUNK;
			size_t n = read_full(sock, buf, want), done; /* whole blocks for O_DIRECT */

			if (n < want) {
				/* The recorder died mid-packet: keep only whole packets. */
				if (ok && !rc && ftruncate(fd, (off_t)c.committed[m.sid]) != 0)
					c.failed = true;
				goto out;
			}
			left -= (uint64_t)n;
			if (ok && !rc)
				rc = committer_write(fd, buf, n, &done);
		}
		if (!ok)
			continue; /* drain until the recorder closes */
		if (rc)
			committer_write_failed(&c, m.sid, rc);
		else
			committer_committed(&c, m.sid, m.len);
	}
out:
	for (int s = 0; s < NF_STREAM_COUNT; s++) {
		if (c.fds[s] < 0)
			continue;
		if (!c.failed && fsync(c.fds[s]) != 0 && errno != EINVAL) {
			committer_reply(sock, NF_CTF_REPLY_SYNC, s, errno, c.committed[s]);
			c.failed = true;
		}
		if (close(c.fds[s]) != 0 && !c.failed) {
			committer_reply(sock, NF_CTF_REPLY_SYNC, s, errno, c.committed[s]);
			c.failed = true;
		}
	}
	committer_reply(sock, NF_CTF_REPLY_DONE, 0, 0, 0);
	/* buf is a mapping (not malloc'ed: free is not async-signal-safe):
	 * it goes with the process. */
	_exit(0);
}
