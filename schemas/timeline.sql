-- nftrace timeline schema: the SQLite database the analyzer builds from a session
-- (DIR/.timeline.db) and that `nftrace query`, `nftrace report` and users' own
-- scripts read. All times are nanoseconds since the session start on the CPU
-- clock (the GPU timestamps are moved onto it through the calibration pairs).
-- "queue", "fence" and "value" mean the same in every table, so tables join on
-- them: queue is the hardware queue handle, fence the global fence handle.
-- The analyzer runs this file as it is; the tables are loaded first and the
-- indexes and views created after the load.

-- Facts about the session: key/value pairs: schema_version (event schema the
-- session was analysed with), timeline_version (this file's version),
-- cpu_frequency, start_ticks, duration_ns, source, mode, seed, tool_version,
-- host, ground_truth (1 when truth_ops was recorded), build_id (process id and
-- wall-clock time of the build that wrote this file: two analyses of one
-- session give two values).
-- kernel_all_cpus_from_ns (Linux kernel captures: from this moment every CPU's
-- record is whole -- the latest start of each CPU's last span in coverage, the
-- session start for a CPU the file holds whole; absent when a CPU's record is
-- empty; see jobs.start_reason);
-- session_key: what the session's files were when this file was built (names,
-- sizes, a hash of each file's first and last 64 KiB); nf_timeline_ensure()
-- rebuilds when it no longer matches.
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,   -- name of the fact
  value TEXT                -- its value, as text
);

-- One row per adapter.
CREATE TABLE adapters (
  adapter        INTEGER PRIMARY KEY, -- adapter ordinal
  name           TEXT,                -- adapter name
  vidsch_caps    INTEGER,             -- DXGK_VIDSCHCAPS bits (5 No64BitAtomics, 11 NativeGpuFence, 12 Optimized interrupt)
  native_fence   INTEGER,             -- 1 when the adapter runs native fences (NativeGpuFence and the OS feature)
  gpu_frequency  INTEGER              -- GPU timestamp ticks per second
);

-- One row per hardware queue: every queue the session names, by HWQUEUE_START or
-- only by its operations or logs (a damaged or partial session: then node,
-- engine, name and start_ns are NULL). Readers can take it as the list of queues.
CREATE TABLE queues (
  queue      INTEGER PRIMARY KEY, -- hardware queue handle
  adapter    INTEGER,             -- adapter ordinal
  node       INTEGER,             -- node ordinal
  engine     INTEGER,             -- engine ordinal
  name       TEXT,                -- queue name
  start_ns   INTEGER,             -- when the queue was created
  stop_ns    INTEGER              -- when it was destroyed (NULL: alive at the end)
);

-- One row per global fence; local handles are in fence_handles.
CREATE TABLE fences (
  fence          INTEGER PRIMARY KEY, -- global fence handle
  type           INTEGER,             -- 0 DEFAULT, 1 INTRA_GPU
  shared         INTEGER,             -- 1 when shareable
  cross_adapter  INTEGER,             -- 1 for a cross-adapter fence
  initial_value  INTEGER,             -- value at creation
  created_ns     INTEGER,             -- creation time
  destroyed_ns   INTEGER              -- when the global fence was destroyed (NULL: alive)
);

-- Every local handle bound to a global fence (one per create or open).
CREATE TABLE fence_handles (
  handle     INTEGER PRIMARY KEY, -- local (D3DKMT) handle, as log entries carry it
  fence      INTEGER,             -- global fence handle
  adapter    INTEGER,             -- adapter the handle is on
  process    INTEGER,             -- owning process
  native     INTEGER,             -- 1 native fence, 0 opened as a legacy monitored fence
  opened_ns  INTEGER,             -- when it was created or opened
  closed_ns  INTEGER              -- when it was closed (NULL: open at the end)
);

-- One row per GPU wait or signal: a GPUView box from CPU queued time to GPU end.
CREATE TABLE fence_ops (
  id           INTEGER PRIMARY KEY, -- operation id, in queued order
  queue        INTEGER,             -- hardware queue handle
  adapter      INTEGER,             -- adapter ordinal
  op           TEXT,                -- 'wait' or 'signal'
  fence        INTEGER,             -- global fence handle
  handle       INTEGER,             -- local handle used in the command
  value        INTEGER,             -- value waited for or signaled
  queued_ns    INTEGER,             -- CPU time the UMD queued it (FENCE_*_QUEUED); NULL if no queued event was seen
  observed_ns  INTEGER,             -- GPU time the wait was observed on hardware (waits; NULL otherwise or unknown)
  end_ns       INTEGER,             -- GPU time it completed, on the CPU time base; NULL when unknown (never invented)
  status       TEXT,                -- 'complete', 'lost' (entry overwritten before read), 'zero_timestamp', 'unmatched' (no log entry found), 'legacy' (handled by the OS on the CPU),
                                    -- 'pending' (ETW: no end before the capture ended), 'aborted' (ETW: AbortQueuePacket),
                                    -- 'end_unknown' (ETW hardware queues: done, as later work on its queue completed, but not said when: end_ns NULL),
                                    -- 'repeated_timestamp' (the entry repeats the previous entry's end timestamp, so end_ns is unknown: NULL),
                                    -- 'unsignaled' (a Linux dma_fence signal row whose fence was never signaled before the trace ended: end_ns NULL)
  log_seq      INTEGER,             -- position of its entry in the log's written sequence (NULL if none)
  epoch        INTEGER,             -- log location generation (SetNativeFenceLogBuffer) its entry was in (NULL if none)
  thread       INTEGER              -- CPU thread that queued it (NULL when not queued through FENCE_*_QUEUED)
);

-- Which signal released which wait, and how long the wait stalled its queue:
-- one row per wait that completed (fence_ops.end_ns known). The releasing
-- signal is the first signal of the wait's fence, in end order, to reach a
-- value at or above the wait's (GPU signals on any queue or adapter, and CPU
-- signals); when none with a known end fits, a signal of unknown end (lost,
-- zero timestamp) that may be the real releaser is named instead. Both ids are
-- NULL when the fence's initial value already satisfied the wait.
-- Who queued work where: per queue, the CPU threads that queued operations on it
-- (FENCE_*_QUEUED; for kernel timelines the thread that emitted the dma_fence), per
-- fence, with how many. Small (threads x fences per queue), so the thread rows of a
-- report need not read fence_ops.
CREATE TABLE queue_threads (
  queue   INTEGER, -- hardware queue handle
  fence   INTEGER, -- global fence handle (NULL when the handle was unknown)
  thread  INTEGER, -- CPU thread that queued
  ops     INTEGER  -- operations it queued there on that fence
);

-- The rule is stated once for every source (include/contract/deps.h, timeline/deps.c)
-- with a mode per kind of evidence: native fence logs (below), Windows ETW queue
-- packets and Linux dma_fences (their mappings further down).
-- A releaser ends no later than its wait, within the clock merge's error (2 us,
-- NF_TIMELINE_CAUSALITY_SLACK_NS): the first signal of the fence to reach the
-- wait's value, unless it ended after the wait and a signal of unknown end (its
-- entry lost, a zero timestamp) queued in time could have released it; one that
-- ended past the slack is never named: with no such candidate the wait has no
-- releaser and a 'causality' anomaly says why. Windows ETW captures are the
-- exception (see their mapping below): the OS logs a signal packet's completion
-- after unwaiting the waits it released, so a releaser's end_ns may follow its
-- wait's by tens of microseconds; the critical path takes such a release at the
-- wait's end.
CREATE TABLE deps (
  signal_id  INTEGER,   -- fence_ops.id of the releasing signal (NULL when released from the CPU, or none could be)
  wait_id    INTEGER,   -- fence_ops.id of the wait (one row per wait that ended; rows in no promised order)
  cpu_signal INTEGER,   -- cpu_signals.id when a CPU signal released it, else NULL
  stall_ns   INTEGER,   -- end_ns - observed_ns of the wait (NULL when either is unknown)
  reason     TEXT       -- why no releaser is named (NULL when one is): 'initial_value' (the fence's
                        -- initial value already reached the wait's), 'unknown_fence' (the wait names a
                        -- fence handle the session does not have), 'causality' (the first signal to
                        -- reach the value ended after the wait, beyond the clock merge's error: an
                        -- anomaly says more), 'timeout' (dma_fence: the wait ended before its fence
                        -- signaled: it timed out or was interrupted), 'lost' (no signal in the file
                        -- reaches the value, and events or log entries were lost before the wait
                        -- ended), 'not_covered' (no signal in the file reaches it, and the capture does
                        -- not cover the whole wait: see coverage), 'not_traced' (no signal in the file
                        -- reaches it though the capture covers the wait: the source records no such
                        -- signal, e.g. a value the GPU wrote to a monitored fence's memory, or one
                        -- signaled from outside the capture)
);

-- What the capture holds: per recorded scope (a CPU's trace buffer, an ETW
-- per-CPU buffer stream, a hardware queue's log buffer), the spans during which
-- the file's record of it is whole. Outside them the file says nothing of that
-- scope: an event that would have been recorded there is unknown, never
-- absent. A scope with no row was not recorded; spans are split by lost events.
CREATE TABLE coverage (
  scope    TEXT,    -- 'cpu' (a CPU's kernel trace buffer), 'etw_cpu' (a CPU's ETW buffers), 'log' (a
                    -- hardware queue's log buffer)
  id       INTEGER, -- the CPU, or the queue
  log      TEXT,    -- 'waits' or 'signals' for a log; NULL otherwise
  from_ns  INTEGER, -- the span is whole from here (NULL: the file holds nothing of the scope)
  to_ns    INTEGER, -- to here
  events   INTEGER, -- records of the scope in the span
  detail   TEXT     -- how the span was found ("first record; CPUSTAT: 191345 events read, 2109 in the
                    -- file", "after 12 lost events" ...)
);

-- CPU waits (WaitForSynchronizationObjectFromCpu .. UnwaitCpuWaiter).
CREATE TABLE cpu_waits (
  id         INTEGER PRIMARY KEY, -- wait id
  thread     INTEGER,             -- waiting thread
  adapter    INTEGER,             -- adapter ordinal (NULL: a kernel dma_fence wait)
  fence      INTEGER,             -- global fence handle
  value      INTEGER,             -- value waited for
  start_ns   INTEGER,             -- wait began
  end_ns     INTEGER,             -- waiter released (NULL: still waiting at the end)
  status     TEXT                 -- 'satisfied', 'timeout', 'closed', 'pending'
);

-- CPU signals (SignalSynchronizationObjectFromCpu).
CREATE TABLE cpu_signals (
  id       INTEGER PRIMARY KEY, -- signal id
  thread   INTEGER,             -- signaling thread
  adapter  INTEGER,             -- adapter ordinal
  fence    INTEGER,             -- global fence handle
  value    INTEGER,             -- value signaled
  ts_ns    INTEGER              -- when
);

-- Native fence signaled interrupts and whether any waiter needed them.
CREATE TABLE interrupts (
  id             INTEGER PRIMARY KEY,
  ts_ns          INTEGER, -- when the OS handled it
  adapter        INTEGER, -- adapter ordinal
  node           INTEGER, -- NodeOrdinal
  engine         INTEGER, -- EngineOrdinal
  queue          INTEGER, -- hHWQueue of an optimized interrupt (NULL otherwise)
  optimized      INTEGER, -- 1 optimized interrupt
  fence_count    INTEGER, -- SignaledNativeFenceCount
  waiters_woken  INTEGER, -- CPU waiters released
  needed         INTEGER  -- 1 when it released a waiter or propagated a cross-adapter signal
);

-- MonitoredValue updates (DxgkDdiUpdateMonitoredValues).
CREATE TABLE monitored_values (
  ts_ns            INTEGER, -- when
  adapter          INTEGER, -- adapter ordinal
  fence            INTEGER, -- global fence handle
  monitored_value  INTEGER, -- new MonitoredValue (as signed 64-bit: -1 means UINT64_MAX, no waiter)
  current_value    INTEGER  -- CurrentValue resampled after the barrier
);

-- What the log forensics found: lost spans and timestamp anomalies.
CREATE TABLE anomalies (
  id            INTEGER PRIMARY KEY,
  kind          TEXT,    -- 'lost', 'zero_timestamp', 'repeated_timestamp', 'backwards_timestamp', 'unknown_fence', 'bad_operation', 'out_of_range', 'corrupt', 'os_overrun_flag', 'causality', 'kernel_lost', 'etw_lost' (names and meanings: schemas/anomalies.def; before version 9 lost was called overrun)
  queue         INTEGER, -- hardware queue handle
  log           TEXT,    -- 'waits' or 'signals'
  first_ns      INTEGER, -- start of the span (for 'lost': last entry read before the gap)
  last_ns       INTEGER, -- end of the span (for 'lost': first entry read after the gap)
  lost_entries  INTEGER, -- entries missing (overrun), else 0: the OS's own 'os_overrun_flag' rows
                         -- repeat an overrun's count in detail only, so sum(lost_entries) counts
                         -- each lost entry once
  detail        TEXT     -- a human-readable explanation with where it was found
);

-- Clock calibration pairs, with the fitted CPU time and its residual.
CREATE TABLE calibrations (
  adapter        INTEGER, -- adapter ordinal
  ts_ns          INTEGER, -- CPU time of the pair
  gpu_clock      INTEGER, -- GPU reading
  gpu_frequency  INTEGER, -- GPU ticks per second
  from_cmp       INTEGER, -- 1 CMP clock, 0 engine clock
  residual_ns    REAL     -- pair's CPU time minus the fit's prediction for its GPU reading
);

-- The clock fit per adapter: how far to trust GPU times.
CREATE TABLE clock_fit (
  adapter        INTEGER PRIMARY KEY, -- adapter ordinal
  pairs          INTEGER,             -- calibration pairs used
  ppm            REAL,                -- fitted GPU clock drift against the CPU clock, parts per million
                                      -- (from the first and last pairs); NULL with fewer than 3 pairs,
                                      -- where nothing says how far to trust it
  residual_rms_ns REAL,               -- root mean square of the residuals
  residual_max_ns REAL,               -- largest absolute residual
  ppm_stderr     REAL                 -- standard error of the drift (ppm) from a least-squares line
                                      -- through every pair: drift is ppm +- 2 ppm_stderr; NULL with
                                      -- fewer than 3 pairs
);

-- Ground truth from the simulator (sessions recorded with --ground-truth).
CREATE TABLE truth_ops (
  queue        INTEGER, -- hardware queue handle
  adapter      INTEGER, -- adapter ordinal
  op           TEXT,    -- 'wait' or 'signal'
  fence        INTEGER, -- global fence handle
  value        INTEGER, -- fence value
  queued_ns    INTEGER, -- true queued time
  observed_ns  INTEGER, -- true observed time
  end_ns       INTEGER, -- true completion time
  log_seq      INTEGER, -- position in the log's written sequence
  fate         TEXT,    -- 'read' or 'lost'
  epoch        INTEGER, -- log location generation the entry was written in
  ts_fault     INTEGER, -- 0 none, 1 zero timestamp (LDA skipped write), 2 repeated timestamp
  handle       INTEGER  -- local fence handle the command used
);

-- ---- Linux kernel events (nftrace import, nftrace record --kernel) ----
-- A dma_fence context is a timeline: it gets a queues row and a fences row,
-- both numbered 4294967296 + context (above every native 32-bit handle), named
-- "driver timeline", on adapter 4294967295 (an adapters row named "Linux
-- kernel dma_fence"; node and engine NULL). Each fence (context, seqno)
-- is a fence_ops 'signal' row on that queue with value = seqno, from
-- dma_fence_emit (or init when no emit was seen) to dma_fence_signaled
-- (status 'complete'; 'unsignaled' with end_ns NULL when the trace ends first).
-- Each dma_fence_wait_start .. wait_end is a cpu_waits row on the waiting
-- thread and a fence_ops 'wait' row (queue NULL, thread set, observed_ns =
-- start), and deps ties it to the signal that released it. Lost ring-buffer
-- events are anomalies of kind 'kernel_lost' (queue NULL).

-- One row per dma_fence context.
CREATE TABLE kernel_timelines (
  queue     INTEGER PRIMARY KEY, -- queues.queue and fences.fence of this timeline: 4294967296 + context
  context   INTEGER,             -- dma_fence context
  driver    TEXT,                -- driver name
  timeline  TEXT                 -- timeline name
);

-- When each thread ran on a CPU, from sched_switch (the idle task is left out),
-- stored as blocks: one row holds up to 1024 runs of one thread, in time order,
-- as a JSON array of [cpu, start, end, end_state] whose start and end are
-- nanoseconds after base_ns (null: not known). One SQLite row per context switch
-- cost more than reading the whole session (timeline version 9); read the runs
-- through the cpu_runs view below, or the blocks directly (json_each) when the
-- block span first_ns..last_ns filters most of them out.
CREATE TABLE cpu_run_blocks (
  thread    INTEGER, -- thread id
  first_ns  INTEGER, -- earliest known start or end of its runs (NULL: none known)
  last_ns   INTEGER, -- latest known start or end of its runs
  n         INTEGER, -- runs in the block
  base_ns   INTEGER, -- the times in runs are offsets from it
  runs      TEXT     -- JSON array of [cpu, start - base_ns, end - base_ns, end_state]
);

-- One row per run (a view over cpu_run_blocks, any SQL reader sees rows):
--   thread     thread id
--   cpu        CPU it ran on
--   start_ns   switched in (NULL: already running when the trace began)
--   end_ns     switched out (NULL: still running when the trace ended)
--   end_state  prev_state when switched out: 0 preempted (still runnable), else the sleep bits
-- An INSERT into the view becomes a block of one run (writers that batch use the blocks).
CREATE VIEW cpu_runs(thread, cpu, start_ns, end_ns, end_state) AS
  SELECT b.thread, r.value ->> 0, b.base_ns + (r.value ->> 1), b.base_ns + (r.value ->> 2), r.value ->> 3
  FROM cpu_run_blocks b, json_each(b.runs) r;
CREATE TRIGGER cpu_runs_insert INSTEAD OF INSERT ON cpu_runs BEGIN
  INSERT INTO cpu_run_blocks(thread, first_ns, last_ns, n, base_ns, runs)
  VALUES (NEW.thread, coalesce(min(NEW.start_ns, NEW.end_ns), NEW.start_ns, NEW.end_ns),
          coalesce(max(NEW.start_ns, NEW.end_ns), NEW.start_ns, NEW.end_ns), 1,
          coalesce(NEW.start_ns, NEW.end_ns, 0),
          json_array(json_array(NEW.cpu, NEW.start_ns - coalesce(NEW.start_ns, NEW.end_ns, 0),
                                NEW.end_ns - coalesce(NEW.start_ns, NEW.end_ns, 0), NEW.end_state)));
END;

-- Kernel task names, as the last sched event or cmdline named them.
CREATE TABLE kernel_threads (
  thread  INTEGER PRIMARY KEY, -- thread id
  comm    TEXT,                -- task name
  process INTEGER              -- its process (thread group id) when the file saved TGIDs, else NULL
);

-- Kernel events kept as they came (every event not mapped above, and sched_wakeup).
CREATE TABLE kernel_events (
  id      INTEGER PRIMARY KEY,
  ts_ns   INTEGER, -- when
  cpu     INTEGER, -- CPU it was recorded on
  thread  INTEGER, -- thread that caused it (common_pid)
  name    TEXT,    -- system:event
  fields  TEXT     -- its fields as libtraceevent prints them (at most 4096 bytes: a longer print is cut there)
);

-- ---- GPU jobs, vblanks and user markers (Linux kernel events) ----
-- A job is one submission to a GPU ring, put together from the events of the
-- drivers and of the GPU scheduler (KernelGpuJob in schemas/events.def):
--   amdgpu:    amdgpu_cs_ioctl (submitted, by its thread), amdgpu_sched_run_job
--              (started: the scheduler handed it to the ring);
--   drm_sched: drm_sched_job / drm_sched_job_queue (submitted), drm_run_job /
--              drm_sched_job_run (started), drm_sched_process_job /
--              drm_sched_job_done (finished), drm_sched_job_wait_dep /
--              drm_sched_job_add_dep (a dependency: job_deps);
--   i915:      i915_request_add (submitted), i915_request_submit (ready),
--              i915_request_in (started on the engine), i915_request_out with
--              completed=1 (finished; i915_request_retire when no out was seen);
--   xe:        xe_sched_job_exec (submitted: pushed to the scheduler),
--              xe_sched_job_run (started: handed to the GuC), xe_hw_fence_signal
--              of the job's hardware fence (finished; else that fence's
--              dma_fence_signaled). The fence (context, seqno) is known from
--              xe_hw_fence_create; the ring is the exec queue as xe names it
--              (engine class and GuC id: rcs3, ccs0 ...) from any
--              xe_exec_queue_* event of that queue, else "queue N". xe runs its
--              jobs on the GPU scheduler: a ring whose drm_sched events are in
--              the trace too gets the drm_sched rows only (the same jobs, named
--              by the finished fence other jobs depend on).
--              xe_sched_job_create (its fence does not exist yet) and
--              xe_sched_job_free (after it finished) are kept in kernel_events.
-- Events of one job are joined by the scheduler's job id when they carry one
-- (amdgpu's sched_job_id is drm_sched's id), else by the job's fence (context,
-- seqno). drm_sched before Linux 6.16 names the job's fence in
-- drm_sched_process_job only by its address: it is the fence of the latest
-- drm_sched_job with that address. From Linux 6.16 every drm_sched event names
-- the job by its finished fence (fence_context:fence_seqno), with the device
-- (dev) and the DRM client (client_id) on queue and run; xe's by its exec
-- queue's GuC id and seqno.
--
-- Scheduled and finished fences. The GPU scheduler gives each job two
-- dma_fences with the same seqno on two adjacent contexts: "scheduled"
-- (signaled when the job is handed to the ring) and "finished" (signaled when
-- the GPU is done). Which context is which is decided from the data, per job
-- context C (job_timelines): jobs whose fence on C-1 signaled no later than
-- their fence on C say C-1 is the scheduled fence and C the finished one
-- (amdgpu's events name the finished fence: Linux 4.11 allocates the
-- scheduled context first); jobs whose fence on C signaled no later than the
-- one on C+1 say C is the scheduled fence. The majority decides and both
-- counts are kept; a context whose jobs show neither (no pair of signals in
-- the trace) follows the majority of its driver's other contexts. Without an explicit finish event, a job's finished_ns is
-- its finished fence's dma_fence_signaled, and its started_ns, when no run
-- event was seen, its scheduled fence's.
CREATE TABLE jobs (
  id             INTEGER PRIMARY KEY, -- job row id, in submission order
  driver         TEXT,    -- 'amdgpu', 'drm_sched', 'i915' or 'xe': whose events describe it
  ring           TEXT,    -- ring (amdgpu: gfx, sdma0, comp_1.0.0 ...; i915: rcs0, bcs0, vcs1 ...; NULL unknown)
  job            INTEGER, -- scheduler job id (NULL when the events carry none: i915)
  context        INTEGER, -- dma_fence context of the job's finished fence (NULL unknown)
  seqno          INTEGER, -- its seqno
  sched_context  INTEGER, -- context of its scheduled fence (NULL: none or undecided)
  thread         INTEGER, -- submitting thread (NULL: submitted by the kernel, or before the trace)
  process        INTEGER, -- its process (kernel_threads.process; NULL unknown)
  submitted_ns   INTEGER, -- submitted (amdgpu_cs_ioctl, drm_sched_job, i915_request_add); NULL not in the file
  started_ns     INTEGER, -- started on the ring (run_job, i915_request_in, else the scheduled fence);
                          -- NULL when the file does not hold it (start_reason says why)
  finished_ns    INTEGER, -- finished (process_job, request_out, else the finished fence); NULL when the
                          -- file does not hold it (finish_reason says why). Never a bound: that is
                          -- finished_bound_ns
  status         TEXT,    -- 'complete' (its start and its finish are in the file), 'unfinished' (started;
                          -- its finish is not in the file: finish_reason), 'queued' (it had not started
                          -- when the capture ended, and the capture covers where its start would be),
                          -- 'unknown' (its start is not in the file and the file cannot tell that it
                          -- did not start: start_reason)
  finish_source  TEXT,    -- where finished_ns came from: 'event' (drm_sched_process_job, i915_request_out
                          -- or _retire), 'signaled' (the dma_fence_signaled of its finished fence); NULL
                          -- when finished_ns is NULL
  start_reason   TEXT,    -- why started_ns is NULL (NULL when it is known): 'not_covered' (submitted
                          -- before every CPU was recording, meta kernel_all_cpus_from_ns: its run event
                          -- may be on a CPU whose record begins later; see coverage), 'lost' (the kernel
                          -- lost events after its submission), 'not_traced' (the capture holds no start
                          -- event nor scheduled fence of any job of its driver), 'ended' (the capture,
                          -- covering it, ended before it started: status 'queued')
  finish_reason  TEXT,    -- why finished_ns is NULL (NULL when it is known), first that applies:
                          -- 'not_traced' (no job of its ring has a finish in the file although the
                          -- capture covers one of them: its finished fences or finish events are not
                          -- traced), 'not_covered' (it started before every CPU was recording), 'not_traced'
                          -- (no job of its ring has a finish in the file), 'lost' (events were lost after it
                          -- started), 'not_traced' (it finished while the capture covered it, as a later
                          -- job on its ring did, and its own finish is not in the file), 'ended' (it was
                          -- running when the capture ended); with no start, its start_reason
  finished_bound_ns INTEGER, -- an upper bound on its finish that the file proves, when finished_ns is NULL
                          -- (drawn as a whisker, never counted as a finish): see bound_source
  bound_source   TEXT,    -- 'ring_order' (amdgpu: a ring's fences signal in the order its jobs ran, so a
                          -- job run later on its ring that finished at finished_bound_ns bounds it),
                          -- 'recording_start' (it has a ring-order bound, so it finished before the
                          -- capture ended; it started before meta kernel_all_cpus_from_ns, the moment
                          -- from which every CPU is recorded, and a finish after it would be in the
                          -- file: it finished no later than that moment); NULL: no bound
  device         TEXT,    -- the GPU (dev_name: "0000:03:00.0") when the events name it (drm_sched from
                          -- Linux 6.16, xe from 6.12); NULL unknown. A ring is named within its device.
  client_id      INTEGER  -- the DRM client the job came through (drm_sched from 6.16: the file's
                          -- drm-client-id, as /proc/PID/fdinfo shows it); NULL unknown
);

-- How each job context's two fences were told apart (see above).
CREATE TABLE job_timelines (
  context            INTEGER PRIMARY KEY, -- the context the job events name
  driver             TEXT,
  ring               TEXT,
  scheduled_context  INTEGER, -- the scheduled fence's context (NULL: the data does not say)
  finished_context   INTEGER, -- the finished fence's context
  jobs_prev_first    INTEGER, -- jobs whose fence on context-1 signaled no later than on context
  jobs_next_later    INTEGER  -- jobs whose fence on context signaled no later than on context+1
);

-- A job's dependencies (drm_sched_job_wait_dep / drm_sched_job_add_dep): the
-- fence it waited for before it could run, and the job that fence belongs to
-- when that job is in the trace (else the fence's own signal, a fence_ops
-- 'signal' row of queue 4294967296 + dep_context, when dma_fence events were
-- traced).
CREATE TABLE job_deps (
  job          INTEGER, -- jobs.id of the waiting job
  dep_context  INTEGER, -- the fence waited for
  dep_seqno    INTEGER,
  dep_job      INTEGER, -- jobs.id whose finished (or scheduled) fence it is, NULL when none in the trace
  dep_fence    TEXT,    -- 'finished' or 'scheduled' (which of dep_job's fences), NULL with dep_job
  ts_ns        INTEGER  -- when the dependency was reported
);

-- drm_sched_job_unschedulable (Linux 6.16 on): when the scheduler picked the
-- job, this dependency was not signaled yet, so the job could not run then
-- (`nftrace check` lists those still waiting when the trace ended).
CREATE TABLE job_unschedulable (
  job          INTEGER, -- jobs.id of the job held back
  dep_context  INTEGER, -- the fence not signaled
  dep_seqno    INTEGER,
  dep_job      INTEGER, -- jobs.id whose finished (or scheduled) fence it is, NULL when none in the trace
  dep_fence    TEXT,    -- 'finished' or 'scheduled', NULL with dep_job
  ts_ns        INTEGER  -- when
);

-- Vertical blanks: drm:drm_vblank_event per CRTC (Linux), and a display's
-- blanks in nftrace sessions (VSyncDPC; crtc NULL).
CREATE TABLE vblanks (
  ts_ns    INTEGER, -- when
  crtc     INTEGER, -- CRTC index (Linux; NULL in nftrace sessions)
  seq      INTEGER, -- vblank counter
  display  INTEGER  -- displays.display whose blank it is (Linux: the display of that CRTC)
);

-- User markers (ftrace:print: writes to trace_marker, trace_printk with a plain string).
CREATE TABLE markers (
  id      INTEGER PRIMARY KEY,
  ts_ns   INTEGER, -- when
  thread  INTEGER, -- the thread that wrote it
  cpu     INTEGER, -- CPU
  text    TEXT     -- the text, without its trailing newline
);

-- ---- Windows ETW captures (nftrace import capture.etl) ----
-- An imported .etl is read with etl/ (include/nftrace/etl.h) and decoded with
-- schemas/dxgkrnl.def; times are ns since the capture's start (QPC, system
-- time or cycle counter converted exactly). meta: source 'etw', cpu_frequency
-- 1000000000, start_ticks 0, and etw_* facts (os_build, pointer_size, cpus,
-- clock, clock_frequency, start_time, buffers, buffers_lost, events_lost,
-- buffers_flagged_lost, events, dxgkrnl_events, waits, signals, deps_tied,
-- dma_packets, unmatched_unwaits (unwaits whose wait is not in the capture),
-- file (the path imported), os_version, record_pointer_sizes (of the
-- records: "4", "8" or "4,8"), lacks: what the capture has not,
-- comma-separated, of 'kernel' (no process/thread names nor context
-- switches), 'rundown' (no adapter, device or context rundown), 'dxgkrnl'
-- (no DxgKrnl events)).
-- Mapping of Microsoft-Windows-DxgKrnl:
-- - adapters: one per pDxgAdapter, numbered 0, 1, ... in order of appearance
--   (name "Adapter 0x..."; vidsch_caps, native_fence, gpu_frequency NULL).
-- - queues: every context (hContext) and hardware queue (hHwQueue), numbered
--   1, 2, ... in order of appearance (etw_contexts gives the handle); node
--   from ContextStart/DCStart (30/32), else from the scheduler's
--   SelectContext (23); engine NULL; named like GPUView's rows: "<node name>
--   context 0x<handle>" ("Node N" when no NodeMetadata named the node), or
--   "... hwqueue 0x<handle>", followed by " (<image> <pid>)" or " (process
--   <pid>)" when the device rundown and the kernel's process events say whose.
-- - fences: every sync object (monitored fence, native fence, or the legacy
--   sync objects of D3D9/11), numbered 1, 2, ... (etw_sync_objects);
--   created_ns/destroyed_ns from MonitoredFence/NativeFence start/stop, and
--   initial_value when seen.
-- - fence_ops: a wait queue packet (QueuePacketStart 244) is a 'wait' on its
--   context from queued_ns (the 244) to end_ns (UnwaitQueuePacket 238 of the
--   same pQueuePacket; an unwait stamped up to 100 us before its wait, as
--   records of different CPUs can be, still ends it, at the wait's own
--   time), observed_ns when it
--   reached the head of its context (the previous packet of that context
--   completed, or queued_ns when none was in flight); status 'complete',
--   'aborted' (AbortQueuePacket 361: end_ns is the abort), or 'pending' (no
--   unwait before the capture ended: end_ns NULL). A signal queue packet
--   (245) is one 'signal' per object it signals, from queued_ns (the 245)
--   to end_ns (QueuePacketStop 180 of the same pQueuePacket), status
--   'complete', 'aborted' (AbortQueuePacket: end_ns is the abort; it
--   releases nothing) or 'pending'. A CPU wait (WaitForSynchronizationObjectFromCpu
--   297, one per object) is a cpu_waits row and a 'wait' row with queue NULL
--   (thread set, observed_ns = start), ended by the UnwaitCpuWaiter (300)
--   naming the same object and value. CPU signals (296, 462, 550) are
--   cpu_signals rows. thread is the thread that logged the start event.
-- - deps: per wait with an end (not aborted), the releasing signal is the signal of its
--   fence with the smallest value at or above the wait's (the earliest end
--   among equals): fence values only grow, so that is the first to reach
--   the wait's value (signals of unknown end are not taken); a signal queued
--   to several contexts at once (SignalSynchronizationObject2/FromGpu with
--   ContextCount > 1: one 245 per context, same object and value) signals
--   the object when its last packet completes, so only that packet counts.
--   A CPU signal (cpu_signals, chosen by the same rule) releases it when it
--   came before that GPU signal. None:
--   both NULL (released by a signal outside the capture). stall_ns =
--   end_ns - observed_ns of the wait.
-- - the API calls behind the packets, SignalSynchronizationObject2 and
--   ...FromGpu (230, 294) and WaitForSynchronizationObject2 and ...FromGpu
--   (231, 295), are kept in etw_events (230/294 also group the packets of
--   a multi-context signal): the packets are what the GPU scheduler ran.
-- - hardware scheduling: a queue the OS does not schedule logs no wait or
--   signal packets. A WaitForSynchronizationObjectFromGpu (295) or
--   SignalSynchronizationObjectFromGpu (294) whose hContext is a hardware
--   queue (HwQueue 422-424, DmaPacket 450/451), or a context owning one that
--   no queue packet named, is the operation itself: one 'wait' (295) or
--   'signal' (294, per context it names) per fence on that queue, queued_ns
--   the event, thread its thread. A signal ends at the first
--   VidSchSignalSyncObjectsFromGpuImmediate (551) or VidSchiCompleteSignalCommmand
--   (552) naming its fence (VidSchSyncObjectArray) and value; a 551/552 that
--   ends none is a 'signal' of its own on no queue (queue and queued_ns NULL),
--   unless queue packets signal that fence. A wait's observed_ns is when the
--   work queued before it on its queue completed (that DMA packet's 451 or
--   that wait's end; queued_ns when none was open); its end_ns is when it was
--   both observed and its fence reached the value (a signal of any kind:
--   hardware queue, 551/552, CPU, signal packet, or the fence's initial
--   value), the later of the two. Status 'complete'; with end_ns NULL:
--   'end_unknown' (later work on its queue completed, so it was done by then:
--   etw_gpu_ops.end_bound_ns, a bound, not its end; no later signal or 551/552
--   ends it then) or 'pending' (nothing in the capture shows it ended). deps
--   ties these waits by the rule below.
--   etw_gpu_ops links each to its events.
-- - presents, flips, displays (PresentMon's reading of DxgKrnl without runtime
--   events): a present starts at its thread's first DxgKrnl present event
--   (Blit 166, Flip 168, FlipMultiPlaneOverlay 252 or PresentMultiPlaneOverlay
--   251; else Present 184) and ends at its Present (184), or, for DWM's
--   multi-plane flips, which log no 184, at the next such event after its
--   present packet; its present packet is the first QueuePacketStart (178)
--   with bPresent its thread queued, and ready_ns that packet's completion
--   (180); mode 'flip' (Flip, the multi-plane ones), 'composed' (a redirected
--   Blit, or one followed by PresentHistory 171/215: DWM composes it, and
--   without Microsoft-Windows-Dwm-Core events nothing says which DWM frame
--   showed it: no flip row), 'copy' (a Blit to the front buffer: a flip row
--   shown when its packet completed, no blank). A display per VidPnSourceId
--   and LayerIndex ('VidPnSource 0 layer 0'); a flip is shown at the first
--   VSyncDPC (17) whose FlipFenceId's high 32 bits are its packet's
--   SubmitSequence (vblank_seq its FrameNumber); never shown while a later
--   flip of its display was: 'dropped'; else 'pending'. Present (184)'s own
--   payload is not decoded (schemas/dxgkrnl.def says why); the events stay
--   in etw_events too.
-- - queue_packets, dma_packets, vsyncs: below. Every event not mapped
--   (other providers, and DxgKrnl events no table takes) is an etw_events
--   row; etw_counts counts every event by provider, id and version.
-- - kernel_threads: a thread's name from the kernel's Thread SetName
--   event (group 5, opcode 72) when the capture has it; else every thread
--   that logged a DxgKrnl event is named by its
--   process (from the event headers): "<image> <pid>" when the kernel's
--   process events named it, else "process <pid>" (the System process, 4,
--   is left out: its threads are the kernel's own).
-- - lost buffers and events are anomalies of kind 'etw_lost' (queue NULL);
--   a DxgKrnl payload whose size matches no known layout is counted in
--   etw_counts.size_mismatches and kept only as an etw_events row.

-- Contexts and hardware queues: the handle behind each queues row.
CREATE TABLE etw_contexts (
  queue    INTEGER PRIMARY KEY, -- queues.queue
  handle   TEXT,                -- hContext or hHwQueue, '0x' hexadecimal
  kind     TEXT,                -- 'context' or 'hwqueue'
  adapter  INTEGER,             -- adapters.adapter (NULL when no event tied it to one)
  node     INTEGER,             -- NodeOrdinal (NULL when unknown)
  parent   INTEGER,             -- for a hardware queue: queues.queue of its context
  device   TEXT,                -- hDevice, '0x' hexadecimal (NULL without rundown)
  process  INTEGER              -- owning process id (NULL without rundown)
);

-- Sync objects: the handle behind each fences row.
CREATE TABLE etw_sync_objects (
  fence   INTEGER PRIMARY KEY, -- fences.fence
  handle  TEXT,                -- the sync object's kernel address, '0x' hexadecimal
  kind    TEXT                 -- 'monitored_fence', 'native_fence' or 'sync_object' (only seen in waits and signals)
);

-- GPU nodes (engines) per adapter: the node rows of the picture.
CREATE TABLE etw_nodes (
  adapter      INTEGER, -- adapters.adapter
  node         INTEGER, -- NodeOrdinal
  engine_type  INTEGER, -- DXGK_ENGINE_TYPE from NodeMetadata (NULL without it)
  name         TEXT,    -- NodeMetadata's FriendlyName, else "Node N"
  PRIMARY KEY (adapter, node)
);

-- Every queue packet of a context (GPUView's context rows): render/DMA
-- packets (178), wait (244) and signal (245) packets, from queued to
-- QueuePacketStop (180; for a wait, the unwait).
CREATE TABLE queue_packets (
  id           INTEGER PRIMARY KEY, -- in queued order
  queue        INTEGER,             -- queues.queue of the context
  kind         TEXT,                -- 'render', 'wait' or 'signal'
  packet_type  INTEGER,             -- PacketType of 178 (NULL for waits and signals)
  submit_seq   INTEGER,             -- SubmitSequence
  present      INTEGER,             -- 1 when 178 says bPresent
  queued_ns    INTEGER,             -- queued (178, 244, 245)
  end_ns       INTEGER,             -- completed (180; 238 for a wait); NULL: not before the end
  preempted    INTEGER,             -- 1 when 180 says bPreempted
  thread       INTEGER              -- thread that queued it
);

-- DMA packets: GPU work per node (GPUView's node rows), from DmaPacketStart
-- (175: submitted to the hardware) to DmaPacketStop (176); for hardware
-- queues DmaPacket (450) to DmaPacket451 of the same progress fence value.
CREATE TABLE dma_packets (
  id             INTEGER PRIMARY KEY, -- in start order
  adapter        INTEGER,             -- adapters.adapter
  node           INTEGER,             -- NodeOrdinal of its context (NULL when unknown)
  queue          INTEGER,             -- queues.queue of the context or hardware queue
  packet_type    INTEGER,             -- PacketType (NULL for hardware queues)
  submission_id  INTEGER,             -- uliSubmissionId (hardware queues: ProgressFenceValue)
  queue_seq      INTEGER,             -- ulQueueSubmitSequence: the queue packet it runs
  start_ns       INTEGER,             -- submitted to the hardware
  isr_ns         INTEGER,             -- completion interrupt (177; NULL when not seen)
  end_ns         INTEGER,             -- completed (NULL: not before the end of the capture)
  status         TEXT                 -- 'complete', 'preempted' or 'pending'
);

-- VSync interrupts (VSyncDPC 17): markers.
CREATE TABLE vsyncs (
  id       INTEGER PRIMARY KEY,
  ts_ns    INTEGER, -- when
  adapter  INTEGER, -- adapters.adapter
  target   INTEGER, -- VidPnTargetId
  frame    INTEGER, -- FrameNumber
  display  INTEGER  -- displays.display of its VidPnSourceId (plane 0 of that source)
);

-- Processes named by the kernel's rundown and process events (thread names
-- are in kernel_threads; context switches in cpu_runs).
CREATE TABLE etw_processes (
  process  INTEGER PRIMARY KEY, -- process id
  name     TEXT                 -- image file name
);

-- Every event of the capture that no table above takes.
CREATE TABLE etw_events (
  id        INTEGER PRIMARY KEY,
  ts_ns     INTEGER, -- when
  cpu       INTEGER, -- CPU whose buffer held it
  process   INTEGER, -- process id (NULL for headers without one)
  thread    INTEGER, -- thread id (NULL for headers without one)
  provider  TEXT,    -- provider GUID (the NT kernel logger's event group for classic headers)
  event_id  INTEGER, -- event id (classic headers: HookId's opcode)
  version   INTEGER, -- event version
  opcode    INTEGER, -- opcode
  size      INTEGER  -- payload bytes
);

-- Every DxgKrnl event schemas/dxgkrnl.def decodes (schemas/dxgkrnl.md), mapped
-- or not, with every payload field: a user can ask about what the tables
-- above do not model. fields is a JSON object keyed by the manifest's field
-- names: integers as numbers (64-bit two's complement, as values are stored
-- everywhere), BOOL 0/1, pointers as '0x...' text (as etw_contexts and
-- etw_sync_objects write handles), arrays as arrays, GUIDs and strings as
-- text, binary as hex text; a field the event's version lacks is absent.
--   SELECT ts_ns, fields ->> 'hContext', fields -> 'ObjectArray'
--   FROM dxgkrnl_events WHERE event_id = 295;
-- One JSON text per event costs about what a row of etw_events costs to
-- insert; a row per field would cost one per field (bench/etw).
CREATE TABLE dxgkrnl_events (
  id        INTEGER PRIMARY KEY, -- in time order
  ts_ns     INTEGER, -- when
  cpu       INTEGER, -- CPU whose buffer held it
  process   INTEGER, -- process id of the header
  thread    INTEGER, -- thread id of the header
  event_id  INTEGER, -- DxgKrnl event id (dxgkrnl_names)
  version   INTEGER, -- event version
  fields    TEXT     -- JSON object: every payload field by name
);

-- The DxgKrnl events nftrace decodes (schemas/dxgkrnl.def), by id.
CREATE TABLE dxgkrnl_names (
  event_id  INTEGER PRIMARY KEY,
  name      TEXT,    -- the manifest's event name ('WaitForSynchronizationObjectFromGpu')
  meaning   TEXT
);

-- The GPU waits and signals of hardware queues (see the mapping above): the
-- events behind each fence_ops row.
CREATE TABLE etw_gpu_ops (
  op            INTEGER PRIMARY KEY, -- fence_ops.id
  event         INTEGER, -- dxgkrnl_events.id of the 294/295 that queued it (NULL: a 551/552 alone)
  end_event     INTEGER, -- dxgkrnl_events.id of the 551/552 that ended a signal, else NULL
  end_bound_ns  INTEGER  -- end_ns NULL: when later work on its queue completed (it was done by
                         -- then; an upper bound, not its end); else NULL
);

-- Per provider, event id and version: how many events the capture holds.
CREATE TABLE etw_counts (
  provider         TEXT,    -- provider GUID
  name             TEXT,    -- provider name when known ('Microsoft-Windows-DxgKrnl', ...)
  event_id         INTEGER, -- event id
  version          INTEGER, -- event version
  events           INTEGER, -- events
  size_mismatches  INTEGER  -- DxgKrnl events whose payload size matched no known layout
);

-- ---- Displays, presents, flips and frames ----
-- What reached the screen and when. Every source writes displays, presents
-- and flips the same way (and vblanks or vsyncs with their display); the
-- frames analysis (frames/, `nftrace frames`) reads only these and the
-- generic GPU work (fence_ops, deps, cpu_waits, jobs, job_deps, dma_packets)
-- and writes frames, frame_gpu and frame_path_blocks (the frame_path view). PresentMon's model and metric
-- names: /work/shared/reference/presentmon-frames.md.
--
-- nftrace sessions (scenario `display` and `present`, nf_display_create and
-- nf_present): a display is one output with a hardware flip queue refreshing
-- at a stated rate; a present (Present event) queues a signal of the
-- display's present fence on a hardware queue behind the frame's work
-- (presents.op: that fence_ops signal; ready_ns its end), and the flip waits
-- in the flip queue for it; at each vertical blank (VSyncDPC: vblanks rows)
-- the display shows the next ready flip (DisplayFlip: flips.done_ns and
-- vblank_ns are that blank), or drops the ready flips a newer sync-interval-0
-- flip replaced.
-- Linux (i915 legacy page flips): a display per plane of i915_flip_request /
-- i915_flip_complete, tied to the vblanks of the CRTC of the same index (on
-- the GPUs these events exist for, plane N scans out on pipe N); a flip
-- request is a present (of the requesting thread) and its flip, paired with
-- the next completion of the same plane and framebuffer object; its vblank is
-- the drm_vblank_event of that CRTC at or after the completion, within 1 ms
-- (i915 sends the flip's completion event from that vblank's handler);
-- frames delimited by user markers (`nftrace frames --frame-marker REGEX`)
-- need no table here.
-- Windows ETW: see the ETW block above (Present, Blit, PresentHistory,
-- PresentMultiPlaneOverlay, FlipMultiPlaneOverlay, MMIOFlipMultiPlaneOverlay
-- and VSyncDPC).

-- One row per display: an output or a plane with its own flip queue.
CREATE TABLE displays (
  display     INTEGER PRIMARY KEY, -- display id, from 0
  adapter     INTEGER,             -- adapters.adapter (NULL: not tied to one)
  name        TEXT,                -- the scenario's name, 'plane 0' (i915), 'VidPnSource 0 layer 0' (ETW)
  crtc        INTEGER,             -- the CRTC whose vblanks it shows at (Linux), else NULL
  refresh_ns  REAL,                -- refresh period the source states (NULL: it states none; the
                                   -- frames analysis then measures the median interval of its blanks)
  process     INTEGER              -- the process presenting to it when the source says, else NULL
);

-- One row per present call the capture shows.
CREATE TABLE presents (
  id             INTEGER PRIMARY KEY, -- in CPU order
  display        INTEGER,             -- displays.display it presents to (NULL: not known, e.g. composed by DWM)
  process        INTEGER,             -- presenting process (NULL: unknown)
  thread         INTEGER,             -- presenting thread (NULL: unknown)
  swapchain      TEXT,                -- what names its swap chain: 'display Monitor', 'plane 0', 'hwnd 0x14f00d8'
                                      -- (NULL: the source does not say, e.g. a flip whose plane no event names)
  present_ns     INTEGER,             -- the present call (PresentMon's PresentStartTime)
  present_end_ns INTEGER,             -- when the call returned (NULL: no event says)
  queue          INTEGER,             -- queues.queue it was queued on (NULL: none or unknown)
  op             INTEGER,             -- fence_ops.id of the operation that ends the frame's GPU work (the
                                      -- present fence's signal), NULL: none
  ready_ns       INTEGER,             -- the frame's GPU work was done (PresentMon's ReadyTime: that signal's
                                      -- end, PresentHistory_Info, the flip packet's completion); NULL: unknown
  sync_interval  INTEGER,             -- SyncInterval / FlipInterval, NULL: unknown
  mode           TEXT,                -- 'flip' (a flip of its own), 'composed' (a copy DWM composes), 'flip_request' (i915)
  source         TEXT                 -- the event it comes from
);

-- One row per flip: a frame entering a display's flip queue and leaving it.
CREATE TABLE flips (
  id          INTEGER PRIMARY KEY, -- in queued order
  display     INTEGER,             -- displays.display (its flip queue)
  present     INTEGER,             -- presents.id of the frame it shows (NULL: none in the capture)
  queued_ns   INTEGER,             -- entered the flip queue (present, i915_flip_request, MMIOFlip)
  ready_ns    INTEGER,             -- could be shown from then: its frame's GPU work done (NULL: unknown)
  done_ns     INTEGER,             -- latched: flip complete (NULL: not shown)
  vblank_ns   INTEGER,             -- the vertical blank it was shown at (NULL: not shown, or no blank
                                   -- event of the capture says which: see detail)
  vblank_seq  INTEGER,             -- that blank's counter (NULL with vblank_ns)
  status      TEXT,                -- 'shown', 'dropped' (a newer flip replaced it before a blank),
                                   -- 'pending' (still queued when the capture ended)
  detail      TEXT                 -- how it was tied, and why a time is NULL
);

-- Frames (computed by the frames analysis on demand: `nftrace frames`, a report
-- or an export, or a query naming the table; meta frames_version, and
-- frames_marker when --frame-marker delimited them): one row per present (or
-- per matching marker), per swap chain in present order. Times in ns; the
-- Ms* columns are PresentMon's metrics, in milliseconds, NULL when the
-- capture cannot say (null_reasons says why):
--   MsBetweenPresents      present_ns - the swap chain's previous present_ns
--   MsInPresentAPI         present_end_ns - present_ns
--   MsUntilRenderComplete  ready_ns - present_ns
--   MsUntilDisplayed       screen_ns - present_ns (displayed frames)
--   MsBetweenDisplayChange screen_ns - the previous displayed frame's screen_ns
--   MsGPULatency           gpu_start_ns - cpu_start_ns
--   MsGPUBusy              time its GPU work ran (frame_gpu: busy, as a union over its lanes)
--   MsGPUWait              max(0, ready_ns - gpu_start_ns - busy): the GPU time it was not running
CREATE TABLE frames (
  frame          INTEGER PRIMARY KEY, -- 1, 2, ... in present order
  present        INTEGER,  -- presents.id (NULL: a frame a marker delimits)
  marker         INTEGER,  -- markers.id of the marker that starts it (--frame-marker), else NULL
  display        INTEGER,  -- displays.display (NULL: unknown)
  process        INTEGER,
  thread         INTEGER,
  swapchain      TEXT,     -- the present's; none: 'process P' (its frames form one chain), 'thread T'
  seq            INTEGER,  -- its number on its swap chain, from 1
  present_ns     INTEGER,  -- PresentStartTime (a marker frame: the marker)
  present_end_ns INTEGER,
  cpu_start_ns   INTEGER,  -- CPUStart: the previous frame's present_end_ns, else its present_ns (NULL: first)
  gpu_start_ns   INTEGER,  -- first start of the GPU work it submitted (NULL: none seen)
  ready_ns       INTEGER,  -- ReadyTime: its GPU work done (NULL: unknown)
  screen_ns      INTEGER,  -- ScreenTime: the vertical blank it was shown at (NULL: not shown or unknown)
  vblank_seq     INTEGER,
  status         TEXT,     -- 'displayed', 'dropped', 'pending' (capture ended first), 'unknown' (no flip says)
  MsBetweenPresents       REAL,
  MsInPresentAPI          REAL,
  MsUntilRenderComplete   REAL,
  MsUntilDisplayed        REAL,
  MsBetweenDisplayChange  REAL,
  MsGPULatency            REAL,
  MsGPUBusy               REAL,
  MsGPUWait               REAL,
  interval_ns    INTEGER,  -- the frame's time: screen_ns - previous screen_ns when both shown, else
                           -- present_ns - previous present_ns (NULL: first of its swap chain)
  refresh_ns     REAL,     -- its display's refresh period (stated, else measured; NULL: none)
  late           INTEGER,  -- 1: shown at a later blank than the one it was due at: the first blank after
                           -- its present at which the flip queue could take it (the previous shown
                           -- frame's blank + its sync interval); a frame no flip shows (a marker frame):
                           -- interval_ns above one and a half refresh periods; 0 not; NULL: no refresh
                           -- period to judge by
  missed_vblanks INTEGER,  -- blanks between the one it was due at and the one it was shown at
  late_ns        INTEGER,  -- ready_ns - the blank it was due at (late frames whose GPU work was done after it)
  blame          TEXT,     -- one line: the segment of its critical path that decided it (the longest
                           -- wait on it, else the longest segment), with queue, fence, value and signaler
  blame_kind     TEXT,     -- that segment's kind (frame_path.kind); when the longest segment is the work
                           -- of a signaler a wait on the path was waiting for, the wait's (and blame_queue
                           -- .. blame_by_thread are the wait's)
  blame_ns       INTEGER,  -- the longest segment's duration
  blame_seq      INTEGER,  -- frame_path.seq of that longest segment
  blame_queue    INTEGER,  -- the queue it is on (NULL: a thread, a ring or the display)
  blame_thread   INTEGER,  -- the thread it is on
  blame_fence    INTEGER,  -- the fence waited on (waits)
  blame_value    INTEGER,  -- the value waited for
  blame_by_queue INTEGER,  -- the queue whose signal released it
  blame_by_thread INTEGER, -- the CPU thread whose signal released it, or that queued the releaser
  null_reasons   TEXT      -- 'column: why' for each NULL metric, '; '-separated
);

-- The GPU work each frame submitted (queued between its swap chain's previous
-- present and its own, by its process's threads where the capture says), per
-- lane: a hardware queue (fence_ops), a ring (jobs) or a GPU node (dma_packets).
CREATE TABLE frame_gpu (
  frame           INTEGER, -- frames.frame
  lane            TEXT,    -- 'queue 0x40000040 (Render)', 'ring gfx', 'node 0 (3D)'
  queue           INTEGER, -- queues.queue (fence_ops and ETW packets), else NULL
  ring            TEXT,    -- jobs.ring, else NULL
  items           INTEGER, -- operations, jobs or packets
  first_start_ns  INTEGER, -- first start (fence_ops: when the queue could run it; jobs: started_ns)
  last_end_ns     INTEGER, -- last end
  busy_ns         INTEGER, -- running, as a union (fence_ops: in flight and not stalled in a wait); NULL
                           -- when none of its items has both a start and an end in the capture
  wait_ns         INTEGER  -- waiting: GPU waits' stalls (fence_ops), submitted to started (jobs); NULL
                           -- when none of its items says
);

-- Each frame's critical path, from cpu_start_ns (its first frame: present_ns)
-- to screen_ns (else ready_ns, else present_ns), as segments in time order
-- that add up to that interval exactly (analysis/path.c and jobpath.c, plus
-- the display's part: from ready to the blank it was shown at). A session's
-- path can have a segment per operation, so the segments are stored as blocks,
-- one row per frame: segs is a JSON array of [start - base_ns, end - base_ns,
-- kind, queue, thread, ring, display, op, job, fence, value, release_op,
-- by_queue, by_thread, extra, sub] (null: none); read them through the
-- frame_path view below.
CREATE TABLE frame_path_blocks (
  frame    INTEGER PRIMARY KEY, -- frames.frame
  n        INTEGER,             -- segments
  base_ns  INTEGER,             -- the times in segs are offsets from it
  segs     TEXT                 -- JSON array of segments
);

-- One row per segment (a view over frame_path_blocks):
--   frame, seq (0, 1, ... in time order), start_ns, end_ns,
--   kind        'execute' (a queue or ring ran), 'wait' (a queue or thread waited on a fence),
--               'queue' (a thread ran until it queued or submitted the work), 'job_wait' (a job
--               waited to run), 'gpu' (GPU work the capture has no operation for), 'display'
--               (the flip waited for its blank), 'cpu' (the thread before the present)
--   queue, thread, ring, display   what it is on (NULL: not that kind of actor)
--   op, job     the fence_ops row or job it is about
--   fence, value, release_op, by_queue, by_thread   waits: what was waited for, the signal that
--               released it and its queue (or the CPU thread whose signal did)
--   what        the segment in words
CREATE VIEW frame_path(frame, seq, start_ns, end_ns, kind, queue, thread, ring, display, op, job, fence,
                       value, release_op, by_queue, by_thread, what) AS
SELECT frame, seq, start_ns, end_ns, kind, queue, thread, ring, display, op, job, fence, value, release_op,
       by_queue, by_thread,
       CASE kind
         WHEN 'wait' THEN who || ' waiting on fence ' || printf('0x%x', fence) || ' >= ' || value ||
              CASE WHEN by_queue IS NOT NULL THEN ', signaled by ' || printf('queue 0x%x', by_queue) ||
                        coalesce(' (' || (SELECT name FROM queues q WHERE q.queue = by_queue) || ')', '')
                   WHEN by_thread IS NOT NULL THEN ', signaled by thread ' || by_thread ELSE '' END
         WHEN 'execute' THEN who || ' executing ' || CASE WHEN op IS NOT NULL THEN 'op ' || op ELSE 'job ' || job END
         WHEN 'queue' THEN who || ' running' ||
              CASE WHEN op IS NOT NULL THEN ' until it queued op ' || op
                   WHEN job IS NOT NULL THEN ' until it submitted job ' || job
                   WHEN extra IS NOT NULL THEN ' until it signaled from the CPU (cpu signal ' || extra || ')'
                   ELSE '' END
         WHEN 'job_wait' THEN 'job ' || job ||
              CASE WHEN extra IS NOT NULL THEN ' waiting to run until job ' || extra ||
                        CASE WHEN sub THEN ' was scheduled' ELSE ' finished' END
                   ELSE ' queued on ring ' || coalesce(ring, '?') || ', waiting to run' END
         WHEN 'gpu' THEN 'GPU work of the frame until it was done (the capture has no fence operation or job on it)'
         WHEN 'display' THEN
              CASE WHEN extra IS NOT NULL THEN 'the flip waiting for blank ' || extra || ' of display '
                   ELSE 'the flip waiting to be latched on display ' END ||
              coalesce((SELECT name FROM displays d WHERE d.display = s.display), '?')
         WHEN 'cpu' THEN who || ' until it ' || CASE WHEN sub THEN 'wrote the frame''s marker' ELSE 'presented' END
       END
FROM (SELECT b.frame AS frame, e.key AS seq, b.base_ns + (e.value ->> 0) AS start_ns,
             b.base_ns + (e.value ->> 1) AS end_ns, e.value ->> 2 AS kind, e.value ->> 3 AS queue,
             e.value ->> 4 AS thread, e.value ->> 5 AS ring, e.value ->> 6 AS display, e.value ->> 7 AS op,
             e.value ->> 8 AS job, e.value ->> 9 AS fence, e.value ->> 10 AS value,
             e.value ->> 11 AS release_op, e.value ->> 12 AS by_queue, e.value ->> 13 AS by_thread,
             e.value ->> 14 AS extra, e.value ->> 15 AS sub,
             CASE WHEN e.value ->> 3 IS NOT NULL THEN printf('queue 0x%x', e.value ->> 3) ||
                       coalesce(' (' || (SELECT name FROM queues q WHERE q.queue = e.value ->> 3) || ')', '')
                  WHEN e.value ->> 5 IS NOT NULL THEN 'ring ' || (e.value ->> 5)
                  WHEN e.value ->> 4 IS NOT NULL THEN 'thread ' || (e.value ->> 4)
                  ELSE 'a thread the capture does not name' END AS who
      FROM frame_path_blocks b, json_each(b.segs) e) s;
