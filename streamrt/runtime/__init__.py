"""The runtime: the per-thread work queue, the C-Scheduler (when to flush, placement, the trace
and macro caches, direct replay), the E-Scheduler thread with its pending-operation table, and
flow control."""
