-- nftrace timeline: indexes and ready-made views, created after the tables of
-- schemas/timeline.sql are loaded (load first, index after: much faster).

-- Each index costs build time, so there are only small ones. fence_ops has
-- no secondary index: it is keyed by id (joins from deps are rowid lookups),
-- the viewer and the views read it in one pass in storage order, and an
-- index by queue would cost nearly as much to build as loading the table
-- (SQLite sorts every row; see docs/PERFORMANCE.md). A query by queue scans
-- the table (about 30 ms per million operations); for many such queries,
-- CREATE INDEX in a copy of the database. For other access paths SQLite
-- builds a transient automatic index when a join needs one.
CREATE INDEX anomalies_queue ON anomalies(queue, kind);
-- Joining operations with the ground truth: by queue, op and log position.
CREATE INDEX truth_ops_seq ON truth_ops(queue, op, epoch, log_seq);

-- Waits with the signal that released them, longest stall first.
CREATE VIEW longest_stalls AS
SELECT w.id AS wait_id, w.queue AS wait_queue, w.fence, w.value,
       w.observed_ns, w.end_ns, d.stall_ns,
       s.id AS signal_id, s.queue AS signal_queue, s.end_ns AS signal_end_ns,
       -- the handles as people write them (hex text), for reading by hand
       CASE WHEN w.queue IS NULL THEN NULL ELSE printf('0x%x', w.queue) END AS wait_queue_hex, CASE WHEN w.fence IS NULL THEN NULL ELSE printf('0x%x', w.fence) END AS fence_hex,
       CASE WHEN s.queue IS NULL THEN NULL ELSE printf('0x%x', s.queue) END AS signal_queue_hex
FROM deps d
JOIN fence_ops w ON w.id = d.wait_id
LEFT JOIN fence_ops s ON s.id = d.signal_id
WHERE d.stall_ns IS NOT NULL
ORDER BY d.stall_ns DESC;

-- Per queue: operations, time busy between queued and end, time stalled in waits.
-- (One pass over fence_ops grouped by queue, then the queues joined to it.)
CREATE VIEW queue_summary AS
SELECT q.queue, q.adapter, q.name,
       coalesce(o.ops, 0) AS ops,
       o.waits, o.signals, o.lost,
       coalesce(o.stalled_ns, 0) AS stalled_ns,
       coalesce(o.span_ns, 0) AS span_ns,
       printf('0x%x', q.queue) AS queue_hex
FROM queues q LEFT JOIN
     (SELECT queue,
             count(*) AS ops,
             sum(op = 'wait') AS waits,
             sum(op = 'signal') AS signals,
             sum(status = 'lost') AS lost,
             sum(CASE WHEN op = 'wait' AND end_ns IS NOT NULL AND observed_ns IS NOT NULL
                      THEN end_ns - observed_ns END) AS stalled_ns,
             max(end_ns) - min(queued_ns) AS span_ns
      FROM fence_ops WHERE queue IS NOT NULL GROUP BY queue) o ON o.queue = q.queue
ORDER BY q.queue;

-- Per queue, what the GPUView-style boxes cover, with the stalls told apart:
--   in_flight_ns  the union of the queue's operations from CPU-queued to GPU-completed
--                 (work queued and not finished: it includes time the CPU ran ahead
--                 and time waits stalled the queue; it is not GPU execution time);
--   stalled_ns    the union of its waits' stalls, GPU-observed to end (inside in_flight_ns);
--   in_flight_not_stalled_ns  the difference: in flight and not held by a wait.
-- Operations without both times are left out. Windows over every operation: slower
-- than queue_summary on large sessions.
CREATE VIEW queue_busy AS
SELECT f.queue, f.ops, f.in_flight_ns, coalesce(s.stalled_ns, 0) AS stalled_ns,
       f.in_flight_ns - coalesce(s.stalled_ns, 0) AS in_flight_not_stalled_ns,
       f.span_ns, printf('0x%x', f.queue) AS queue_hex
FROM (SELECT queue, count(*) AS ops,
             sum(max(0, end_ns - max(queued_ns, coalesce(prev_end, queued_ns)))) AS in_flight_ns,
             max(end_ns) - min(queued_ns) AS span_ns
      FROM (SELECT queue, queued_ns, end_ns,
                   max(end_ns) OVER (PARTITION BY queue ORDER BY queued_ns, id
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
            FROM fence_ops WHERE queue IS NOT NULL AND queued_ns IS NOT NULL AND end_ns IS NOT NULL)
      GROUP BY queue) f
LEFT JOIN
     (SELECT queue, sum(max(0, end_ns - max(observed_ns, coalesce(prev_end, observed_ns)))) AS stalled_ns
      FROM (SELECT queue, observed_ns, end_ns,
                   max(end_ns) OVER (PARTITION BY queue ORDER BY observed_ns, id
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
            FROM fence_ops WHERE queue IS NOT NULL AND op = 'wait' AND queued_ns IS NOT NULL
                 AND observed_ns IS NOT NULL AND end_ns IS NOT NULL AND end_ns > observed_ns)
      GROUP BY queue) s ON s.queue = f.queue
ORDER BY f.queue;

-- Spans of time on each queue's log where entries were lost.
CREATE VIEW lost_spans AS
SELECT queue, log, first_ns, last_ns, lost_entries, detail,
       printf('0x%x', queue) AS queue_hex
FROM anomalies WHERE kind = 'lost' ORDER BY queue, first_ns;

-- Every display's vertical blanks, whichever table the source wrote them to
-- (vblanks: Linux and nftrace sessions; vsyncs: Windows ETW).
CREATE VIEW display_vblanks(display, ts_ns, seq) AS
SELECT display, ts_ns, seq FROM vblanks WHERE display IS NOT NULL
UNION ALL
SELECT display, ts_ns, frame FROM vsyncs WHERE display IS NOT NULL;

-- The blanks of a CRTC in time order (flips are tied to them).
CREATE INDEX vblanks_crtc ON vblanks(crtc, ts_ns);

-- ---- What readers draw, whatever the source ----
-- The viewer, the HTML page and the export read the rows that only some
-- sources write (GPU jobs, DMA packets, vblanks, VSyncs, user markers) through
-- the views below, never through those tables, so that they name no source and
-- a new source shows in all three by adding its rows here. Queues, CPU threads,
-- fence operations, CPU waits and signals, deps and anomalies are every
-- source's own tables and are read as they are; so are the frames analysis's
-- tables (displays, presents, flips, frames, frame_path: nftrace frames fills
-- them the same way from every source), with each display's blanks read
-- through display_blanks below.

-- The kinds of items, in the order readers draw and write them: what one is
-- called (noun, plural), the legend's words for it, and the colours the
-- pictures give it ('#RRGGBB': its fill, box edges, and the fill of the part
-- spent queued before it started). A new kind is one row here and its rows
-- in items below.
CREATE VIEW item_kinds(kind, ord, noun, plural, legend, colour, edge_colour, wait_colour) AS
VALUES ('job', 1, 'job', 'jobs', 'GPU job (submitted ' || char(8594) || ' started shaded, started ' || char(8594) ||
        ' finished solid)', '#2E7D32', '#1B5E20', '#B9DDBB'),
       ('vblank', 2, 'vblank', 'vblanks', 'vblank', '#1E88E5', NULL, NULL),
       ('marker', 3, 'marker', 'markers', 'user marker', '#EF6C00', NULL, NULL),
       ('dma', 4, 'DMA packet', 'DMA packets', 'DMA packet (node rows)', '#4F9D69', '#2E6B43', NULL),
       ('vsync', 5, 'VSync', 'VSyncs', 'VSync', '#7E57C2', NULL, NULL);

-- Lanes: where items are drawn (an item on no lane is on its CPU thread's row).
--   lane       the lane's key (text, as items.lane names it; compare, do not parse)
--   kind       'engine': a lane of its own, drawn as a row of its group (a GPU
--              ring's jobs); 'node': the lane of a node (engine) of an adapter,
--              drawn as the header row of that node's queues when they are drawn
--              (an ETW node's DMA packets); 'display': points in time drawn
--              across every row (vblanks of a CRTC, VSyncs of a display target)
--   item_kind  the kind of its items (item_kinds.kind)
--   grp        the group it belongs to ('GPU jobs', 'Display'; NULL: its adapter's)
--   grp_ord    the group's place among groups (NULL with grp)
--   label      what it is ('amdgpu gfx', 'Node 0', 'CRTC 0'); NULL: nothing more
--              than its items say ('DMA packets' of an unknown node)
--   what       its items, plural (item_kinds.plural)
--   adapter    the adapter it belongs to (adapters.adapter; NULL: none known):
--              a node's and a display target's
--   node       the node ordinal of a 'node' lane
--   ord        its place among lanes (1, 2, ...)
CREATE VIEW lanes(lane, kind, item_kind, grp, grp_ord, label, what, adapter, node, ord) AS
SELECT l.lane, l.kind, l.item_kind, l.grp, l.grp_ord, l.label, k.plural, l.adapter, l.node,
       row_number() OVER (ORDER BY k.ord, l.lane)
FROM (SELECT json_array('job', driver, ring) AS lane, 'engine' AS kind, 'job' AS item_kind,
             'GPU jobs' AS grp, 0 AS grp_ord, driver || ' ' || coalesce(nullif(ring, ''), 'ring ?') AS label,
             NULL AS adapter, NULL AS node
      FROM (SELECT DISTINCT driver, coalesce(ring, '') AS ring FROM jobs)
      UNION ALL
      -- every node of an ETW capture's queues, and of its DMA packets
      SELECT json_array('dma', x.adapter, x.node), 'node', 'dma', 'Display', 1,
             CASE WHEN x.node IS NOT NULL THEN coalesce(n.name, 'Node ' || x.node) END, x.adapter, x.node
      FROM (SELECT q.adapter, q.node FROM queues q JOIN etw_contexts c ON c.queue = q.queue
            WHERE q.node IS NOT NULL
            UNION SELECT adapter, node FROM dma_packets) x
      LEFT JOIN etw_nodes n ON n.adapter = x.adapter AND n.node = x.node
      UNION ALL
      SELECT json_array('vblank', crtc), 'display', 'vblank', 'Display', 1,
             CASE WHEN crtc IS NOT NULL THEN 'CRTC ' || crtc END, NULL, NULL
      FROM (SELECT DISTINCT crtc FROM vblanks)
      UNION ALL
      SELECT json_array('vsync', adapter, target), 'display', 'vsync', 'Display', 1,
             CASE WHEN target IS NOT NULL THEN 'target ' || target END, adapter, NULL
      FROM (SELECT DISTINCT adapter, target FROM vsyncs)) l
JOIN item_kinds k ON k.kind = l.item_kind;

-- Items: one row per job, DMA packet, vblank, VSync and user marker.
--   kind          item_kinds.kind
--   id            its row in its own table (unique within its kind; the
--                 vblanks' rowid): kind and id name an item
--   lane          lanes.lane; NULL: drawn on its thread's row
--   thread        the CPU thread it belongs to (a job's submitter, a marker's
--                 writer; NULL: none known)
--   queued_ns     when it was queued to run (a job's submission), NULL: no
--                 queued part
--   start_ns      when it started (NULL: not seen)
--   end_ns        when it ended, a time the capture shows; NULL: unknown
--   end_known     1 when end_ns is known, 0 when not
--   end_reason    why end_ns is NULL (jobs.finish_reason: 'not_covered',
--                 'not_traced', 'lost', 'ended'; a DMA packet still running
--                 at the end: 'ended'); NULL when known
--   bound_ns      when the end is unknown but bounded: it ended no later than
--                 this (jobs.finished_bound_ns); a bound, to be drawn as a
--                 whisker and never drawn or counted as the end
--   bound_reason  why the bound holds, in words (jobs.bound_source), NULL
--                 without a bound
--   instant       1: a point in time at start_ns (end_ns = start_ns)
--   status        its table's status ('complete', 'pending' ...; NULL for points)
--   label         its name ('gfx' for a job on ring gfx, a marker's text)
--   queue, fence, value   what it is tied to: a DMA packet's context
--                 (queues.queue); a job's finished fence (fences.fence of its
--                 dma_fence context, with value = seqno)
--   detail        its fields as a JSON object in a fixed order, for tooltips
--                 and export arguments: integers, text, or {"hex": n} for a
--                 handle written in hexadecimal; null: not known
CREATE VIEW items(kind, id, lane, thread, queued_ns, start_ns, end_ns, end_known, end_reason, bound_ns,
                  bound_reason, instant, status, label, queue, fence, value, detail) AS
SELECT 'job', j.id, json_array('job', j.driver, coalesce(j.ring, '')), j.thread, j.submitted_ns, j.started_ns,
       j.finished_ns, j.finished_ns IS NOT NULL, j.finish_reason, j.finished_bound_ns,
       CASE j.bound_source WHEN 'ring_order' THEN 'when a job run later on its ring finished'
                           WHEN 'recording_start' THEN 'when every CPU was recording' END,
       0, j.status, coalesce(nullif(j.ring, ''), 'job'), NULL, k.queue, CASE WHEN k.queue IS NOT NULL THEN j.seqno END,
       json_object('job id', j.id, 'driver', j.driver, 'job', j.job, 'context', j.context, 'seqno', j.seqno,
                   'thread', j.thread, 'process', j.process, 'status', coalesce(j.status, ''),
                   'finish source', j.finish_source, 'finished no later than ns', j.finished_bound_ns,
                   'bound source', j.bound_source)
FROM jobs j LEFT JOIN kernel_timelines k ON k.context = j.context
UNION ALL
SELECT 'vblank', v.rowid, json_array('vblank', v.crtc), NULL, NULL, v.ts_ns, v.ts_ns, 1, NULL, NULL, NULL, 1, NULL,
       'vblank', NULL, NULL, NULL, json_object('crtc', v.crtc, 'seq', v.seq)
FROM vblanks v
UNION ALL
SELECT 'marker', m.id, NULL, m.thread, NULL, m.ts_ns, m.ts_ns, 1, NULL, NULL, NULL, 1, NULL,
       coalesce(nullif(m.text, ''), 'marker'), NULL, NULL, NULL,
       json_object('marker id', m.id, 'cpu', m.cpu, 'text', coalesce(m.text, ''))
FROM markers m
UNION ALL
SELECT 'dma', d.id, json_array('dma', d.adapter, d.node), NULL, NULL, d.start_ns, d.end_ns, d.end_ns IS NOT NULL,
       CASE WHEN d.end_ns IS NULL THEN 'ended' END, NULL, NULL, 0, d.status, 'dma packet', d.queue, NULL, NULL,
       json_object('dma packet id', d.id, 'queue', CASE WHEN d.queue IS NOT NULL THEN json_object('hex', d.queue) END,
                   'packet type', d.packet_type, 'submission id', d.submission_id, 'queue seq', d.queue_seq,
                   'isr_ns', d.isr_ns, 'status', coalesce(d.status, ''))
FROM dma_packets d
UNION ALL
SELECT 'vsync', s.id, json_array('vsync', s.adapter, s.target), NULL, NULL, s.ts_ns, s.ts_ns, 1, NULL, NULL, NULL, 1,
       NULL, 'vsync', NULL, NULL, NULL, json_object('vsync id', s.id, 'frame', s.frame)
FROM vsyncs s;

-- What an item waited for before it could run (a job's dependencies, job_deps):
--   link            a number for the link (unique)
--   kind, id        the item that waited
--   dep_kind, dep_id  the item it waited for; NULL: not in the capture
--   what            which of that item's ends it waited for ('finished', 'scheduled')
--   label           what it waited for, in words, when it is no item ('fence 12/345')
--   ts_ns           when the dependency was reported
CREATE VIEW item_links(link, kind, id, dep_kind, dep_id, what, label, ts_ns) AS
SELECT d.rowid, 'job', d.job, CASE WHEN d.dep_job IS NOT NULL THEN 'job' END, d.dep_job, d.dep_fence,
       'fence ' || coalesce(d.dep_context, '?') || '/' || coalesce(d.dep_seqno, '?'), d.ts_ns
FROM job_deps d;

-- How readers name and group each queue:
--   label      its full name ('gfx 0x40000040'; a Linux dma_fence timeline:
--              'amdgpu gfx (context 7)')
--   handle     the queue as a person finds it: 'hw queue 0x...' for a
--              hardware queue handle, 'queue N (etw_contexts)' for a number
--              an importer gave it (the table named holds the handle)
--   hidden     1 when its operations are drawn as another lane's items (the
--              dma_fence timelines of GPU jobs' fences: the jobs' ring lanes),
--              so readers leave its row out unless it is asked for
--   group_label  the title of its adapter's group ('Adapter 0 <middle dot> name',
--              'Unknown adapter', 'Linux kernel dma_fence timelines')
CREATE VIEW queue_labels(queue, label, handle, hidden, group_label) AS
SELECT q.queue,
       CASE WHEN k.queue IS NOT NULL
            THEN coalesce(k.driver, '?') || ' ' || coalesce(k.timeline, '?') || ' (context ' || k.context || ')'
            WHEN q.name IS NOT NULL THEN q.name || printf(' 0x%x', q.queue)
            ELSE printf('queue 0x%x', q.queue) END,
       CASE WHEN c.queue IS NOT NULL THEN 'queue ' || q.queue || ' (etw_contexts)'
            ELSE printf('hw queue 0x%x', q.queue) END,
       k.context IS NOT NULL AND k.context IN (SELECT context FROM job_timelines
                                               UNION ALL SELECT finished_context FROM job_timelines
                                               UNION ALL SELECT scheduled_context FROM job_timelines),
       CASE WHEN q.adapter IS NULL THEN 'Unknown adapter'
            WHEN a.name IS NOT NULL AND q.adapter IN (SELECT q2.adapter FROM queues q2
                                                      JOIN kernel_timelines k2 ON k2.queue = q2.queue)
            THEN a.name || ' timelines'
            WHEN a.name IS NOT NULL THEN 'Adapter ' || q.adapter || ' ' || char(183) || ' ' || a.name
            ELSE 'Adapter ' || q.adapter END
FROM queues q
LEFT JOIN kernel_timelines k ON k.queue = q.queue
LEFT JOIN etw_contexts c ON c.queue = q.queue
LEFT JOIN adapters a ON a.adapter = q.adapter;

-- CPU threads with their names: thread, its name (the task name), its
-- process (NULL: unknown) and that process's name.
CREATE VIEW threads(thread, name, process, process_name) AS
SELECT t.thread, t.comm, t.process, p.comm
FROM kernel_threads t LEFT JOIN kernel_threads p ON p.thread = t.process;

-- Events the recorder lost, on no queue (a kernel ring buffer's, an ETW
-- capture's buffers): when (ts_ns), how many (NULL: not said), and why.
CREATE VIEW lost_events(ts_ns, lost, kind, detail) AS
SELECT first_ns, lost_entries, kind, detail FROM anomalies
WHERE queue IS NULL AND (kind = 'kernel_lost' OR kind = 'etw_lost');

-- ---- The display rows, whatever the source ----
-- The readers draw and write the frames analysis's results (nftrace frames:
-- displays, flips, frames, frame_gpu, frame_path) through the views below,
-- which name the display's blanks and each path segment's lane in the readers'
-- words.

-- A display's vertical blanks (display_vblanks above, whichever table the
-- source wrote them to): the display (displays.display), when, its counter.
CREATE VIEW display_blanks(display, ts_ns, seq) AS
SELECT display, ts_ns, seq FROM display_vblanks;

-- Each flip with its frame: when it entered the flip queue (queued_ns), could
-- be shown (ready_ns: its frame's GPU work done; NULL: unknown) and was
-- latched (done_ns; NULL: never), its status ('shown', 'dropped', ...), the
-- blank it was shown at (blank_seq), and its frame (frames.frame; NULL: none)
-- with whether it was late (late: 0 or 1), by how much (late_ns) and how
-- many blanks it missed.
CREATE VIEW display_flips(id, display, present, queued_ns, ready_ns, done_ns, status, blank_seq, frame, late,
                          late_ns, missed_blanks) AS
SELECT l.id, l.display, l.present, l.queued_ns, l.ready_ns, l.done_ns, l.status, l.vblank_seq, f.frame,
       coalesce(f.late, 0), f.late_ns, f.missed_vblanks
FROM flips l LEFT JOIN frames f ON f.present = l.present;

-- The frames as the readers show them: every column of frames, with the
-- blanks a late one missed as missed_blanks.
CREATE VIEW display_frames AS
SELECT f.*, f.missed_vblanks AS missed_blanks FROM frames f;

-- Each frame's critical path (frame_path), with the lane (lanes.lane) of a
-- segment on a GPU job's engine (NULL: none; its queue and thread as in
-- frame_path).
CREATE VIEW frame_path_lanes(frame, seq, start_ns, end_ns, kind, queue, thread, lane, what) AS
SELECT p.frame, p.seq, p.start_ns, p.end_ns, p.kind, p.queue, p.thread,
       CASE WHEN p.ring IS NOT NULL THEN
            coalesce((SELECT json_array('job', j.driver, coalesce(j.ring, '')) FROM jobs j WHERE j.id = p.job),
                     (SELECT json_array('job', j.driver, coalesce(j.ring, '')) FROM jobs j WHERE j.ring = p.ring
                      LIMIT 1)) END,
       p.what
FROM frame_path p;

-- ---- What the capture does not cover ----
-- The spans the file says nothing of (coverage), for the readers to shade:
-- queue NULL concerns every row (a CPU's trace or ETW buffers: any event of
-- any row may have been recorded there), else that queue's row (a gap in its
-- log). A CPU's gap runs from the session start to its first whole span, and
-- between two spans of one scope (lost events split them); a log's, only
-- between its spans (before its queue was created there was nothing to log).
-- what says whose record is missing, in words: "quiet or not recorded" for a
-- trace-cmd CPU whose file has no CPUSTAT (coverage.detail), whose first
-- record may come late only because it was idle.
CREATE VIEW coverage_gaps(queue, from_ns, to_ns, what) AS
SELECT CASE WHEN scope = 'log' THEN id END, gap_from, from_ns,
       CASE WHEN scope = 'cpu' AND detail LIKE 'no CPUSTAT%' THEN 'CPU ' || id || ' quiet or not recorded'
            WHEN scope = 'cpu' THEN 'CPU ' || id || ' not recorded'
            WHEN scope = 'etw_cpu' THEN 'CPU ' || id || '''s ETW buffers not recorded'
            ELSE 'the queue''s ' || coalesce(log, '') || ' log not recorded' END
FROM (SELECT scope, id, log, from_ns, detail,
             CASE WHEN prev_to IS NOT NULL THEN prev_to WHEN scope != 'log' THEN 0 END AS gap_from
      FROM (SELECT scope, id, log, from_ns, detail,
                   lag(to_ns) OVER (PARTITION BY scope, id, log ORDER BY from_ns) AS prev_to
            FROM coverage WHERE from_ns IS NOT NULL))
WHERE gap_from IS NOT NULL AND from_ns > gap_from;
