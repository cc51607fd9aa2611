"""Scheduling: work queue -> C-Scheduler -> E-Scheduler (pending-operation table, flow control)."""
