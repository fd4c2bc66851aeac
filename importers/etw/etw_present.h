/*
 * Presents, flips and VSyncs of a Windows ETW capture (Microsoft-Windows-DxgKrnl)
 * into displays, presents and flips (schemas/timeline.sql, "Windows ETW
 * captures" and "Displays, presents, flips and frames"), as PresentMon reads
 * the DxgKrnl events when the capture has no runtime (DXGI) events: the first
 * DxgKrnl event of a present on a thread starts it (Blit 166, Flip 168,
 * PresentMultiPlaneOverlay 251; Present 184 when none did), the present
 * packet its thread queues next (QueuePacketStart 178 with bPresent) ends it:
 * the frame's GPU work is done when that packet completes (180). A flip is
 * shown at the VSyncDPC (17) whose FlipFenceId names the packet's submit
 * sequence in its high half; a copy to the front buffer is on screen when its
 * packet completes; a composed present (a redirected blit, or one with a
 * PresentHistory) is handed to DWM, and without Dwm-Core events nothing says
 * which DWM frame showed it.
 */
#ifndef NF_IMPORTERS_ETW_PRESENT_H
#define NF_IMPORTERS_ETW_PRESENT_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"
#include "etw_ingest.h"

struct ew_presents;

/* NULL with err set on failure (NF_ESQL, NF_ENOMEM). */
struct ew_presents *ew_presents_create(sqlite3 *db, struct nf_error *err);
void ew_presents_destroy(struct ew_presents *p);

/* A DxgKrnl event (decoded or not: ev->dx may be NULL): what it says of a
 * present. 0, NF_ESQL or NF_ENOMEM. */
int ew_presents_event(struct ew_presents *p, const struct nf_etwi_event *ev, struct nf_error *err);

/* A present packet (178 with bPresent) queued by thread tid at ns: queue_packets
 * row packet, submit sequence seq. 0, NF_ESQL. */
int ew_presents_packet(struct ew_presents *p, uint32_t tid, int64_t packet, uint32_t seq, int64_t ns,
		       struct nf_error *err);

/* The display of a VidPnSource's plane 0 (made when new): its id, or -1 on
 * failure (err set). */
int64_t ew_presents_display(struct ew_presents *p, uint32_t source, uint32_t layer, struct nf_error *err);

/* After queue_packets is complete: presents' ready times, the flips and their
 * VSyncs. 0 or NF_ESQL. */
int ew_presents_finish(struct ew_presents *p, struct nf_error *err);

#endif
