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
