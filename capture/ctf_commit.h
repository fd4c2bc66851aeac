/*
 * The protocol between the CTF writer (ctf_writer.c, in the recording
 * process) and its committer process (ctf_committer.c): the shared control
 * block and its rings, the socket messages both ways, and the committer's
 * entry point. Private to capture/.
 *
 * The committer is forked from a program that may have other threads, so
 * from fork to _exit it may only call async-signal-safe functions
 * (signal-safety(7)). ctf_committer.c holds all of its code and calls
 * nothing else; the functions in this header are the only ones it shares
 * with the writer, and keep to the same rule. The ctest committer_signal_safe
 * (scripts/check-signal-safe.sh) lists what the committer's object file calls
 * and fails on anything outside the allowed list.
 */
#ifndef NF_CAPTURE_CTF_COMMIT_H
#define NF_CAPTURE_CTF_COMMIT_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "nftrace/events.h"

#define NF_CTF_COMMIT_CHUNK (1u << 20)
#define NF_CTF_WRITEBACK_STEP (8u << 20)
/* Packets are handed over through a ring shared with the committer; a packet
 * larger than a quarter of it goes through the socket instead. */
#define NF_CTF_RING_SIZE (8u << 20)
/* Packets handed to the committer are whole blocks of this size. */
#define NF_CTF_BLOCK 4096u
/* Packet descriptors in the shared control block. */
#define NF_CTF_DESCS 1024u
/* The recorder wakes a sleeping committer once this many bytes of packets
 * wait for it (and on flush, close, or when it needs ring space): one
 * wake-up and one large write per few packets, not one per packet. */
#define NF_CTF_KICK_BYTES (2u << 20)
/* The committer's largest single write (contiguous packets of one stream). */
#define NF_CTF_MAX_WRITE (4u << 20)

/* A packet in its stream's ring: stream, length, and its end as a byte count
 * of that ring. */
struct nf_ctf_desc {
	uint32_t sid;
	uint32_t zero;
	uint64_t len;
	uint64_t end;
};

/*
 * The control block shared with the committer, before the ring. The
 * recorder fills a descriptor, then publishes it by advancing desc_head
 * (release); the committer writes the packets and advances desc_tail and
 * ring_tail. A descriptor below desc_head always names a whole packet, so
 * after the recorder's death the committer writes exactly the published ones.
 * Wake-ups go through the socket, only when the other side said it sleeps:
 * committer_idle / recorder_waiting are set by the sleeper before it checks
 * the indexes one last time, and cleared with an exchange by the waker
 * (sequentially consistent on both sides, so no wake-up is lost).
 */
struct nf_ctf_shared {
	_Atomic uint64_t desc_head;
	char pad0[56];
	_Atomic uint64_t desc_tail;
	_Atomic uint64_t ring_tail[NF_STREAM_COUNT];
	char pad1[56 - 8 * NF_STREAM_COUNT];
	_Atomic uint32_t committer_idle;
	char pad2[60];
	_Atomic uint32_t recorder_waiting;
	char pad3[60];
	struct nf_ctf_desc desc[NF_CTF_DESCS];
};
#define NF_CTF_SHARED_SIZE ((sizeof(struct nf_ctf_shared) + NF_CTF_BLOCK - 1) & ~(size_t)(NF_CTF_BLOCK - 1))
#define NF_CTF_MAP_SIZE (NF_CTF_SHARED_SIZE + (size_t)NF_STREAM_COUNT * NF_CTF_RING_SIZE)

/* Recorder -> committer socket messages. */
enum { NF_CTF_MSG_PACKET = 0, NF_CTF_MSG_WAKE = 2 };

/* Recorder -> committer on the socket: a wake-up (ring = NF_CTF_MSG_WAKE), or
 * a packet of len bytes following the message (ring = NF_CTF_MSG_PACKET),
 * to be written after the first `end` ring packets. */
struct nf_ctf_pkt_msg {
	uint32_t sid;
	uint32_t ring;
	uint64_t len;
	uint64_t end;
};

/* Committer -> recorder: an error (with the stream's committed size), ring
 * space handed back to a waiting recorder (ACK), or done. */
enum { NF_CTF_REPLY_OPEN = 1, NF_CTF_REPLY_WRITE, NF_CTF_REPLY_SYNC, NF_CTF_REPLY_DONE,
       NF_CTF_REPLY_ACK };
struct nf_ctf_reply {
	int32_t kind;
	int32_t sid;
	int32_t err;             /* errno */
	int32_t zero;
	uint64_t offset;         /* bytes of whole packets in the stream file */
};

/* Writes len bytes (fewer only on error: *done says how many went out). */
static inline int nf_ctf_write_some(int fd, const void *buf, size_t len, size_t *done)
{
	const unsigned char *p = buf;

	*done = 0;
	while (*done < len) {
		ssize_t n = write(fd, p + *done, len - *done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOSPC;
		*done += (size_t)n;
	}
	return 0;
}

/*
 * The committer's whole life (see ctf_committer.c): in the child after fork,
 * with sock its end of the socket pair, paths[sid] each stream file's path,
 * shared the control block mapped with the writer (NF_CTF_MAP_SIZE bytes,
 * the rings from ring on), buf NF_CTF_COMMIT_CHUNK bytes aligned to
 * NF_CTF_BLOCK for socket packets. Never returns.
 */
__attribute__((noreturn, visibility("hidden")))
void nf_ctf_committer_main(int sock, const char *const paths[NF_STREAM_COUNT], void *shared,
			   unsigned char *ring, unsigned char *buf);

#endif
