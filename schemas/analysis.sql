-- nftrace analysis tables: added to a session's timeline (DIR/.timeline.db) on
-- demand by the analysis module (include/nftrace/analysis.h), not by the
-- analyzer's build: `nftrace query` creates stall_blame the first time a query
-- names it (and a rebuilt timeline gets it again the same way). meta holds
-- analysis_version; a stall_blame of another version is computed again.

-- Who made my queue wait: for each waiting hardware queue (or CPU thread) and
-- fence it waited on, how much of its stall time each queue or CPU thread
-- caused, and through which fence. Each wait's stall (deps.stall_ns: observed_ns .. end_ns) is walked
-- back like a critical path (nftrace critical-path): the wait's own time after
-- its releasing signal and the releaser's time on the path are direct; the
-- time of queues and threads that held the releaser up (through the waits it
-- did, the work queued before it, the CPU thread that queued it) is chain.
-- Per waiting queue, sum(stall_ns) is the sum of its waits' deps.stall_ns.
--   select * from stall_blame order by stall_ns desc limit 10
CREATE TABLE stall_blame (
  queue      INTEGER, -- the waiting hardware queue (NULL: a CPU thread waited, see thread)
  thread     INTEGER, -- the waiting CPU thread (NULL when a queue waited)
  fence      INTEGER, -- the fence waited on
  by_queue   INTEGER, -- the hardware queue blamed (NULL when a CPU thread is)
  by_thread  INTEGER, -- the CPU thread blamed (NULL when a queue is, or the thread is unknown)
  by_fence   INTEGER, -- through which fence it held the wait up: the fence waited on for the
                      -- releaser; further back, the fence of the wait the chain went through
  direct_ns  INTEGER, -- stall caused directly: by the queue or thread that released the waits
  chain_ns   INTEGER, -- stall caused through the chain: by holding up the releaser
  stall_ns   INTEGER, -- direct_ns + chain_ns
  waits      INTEGER  -- how many waits of queue on fence this row's time comes from
);
