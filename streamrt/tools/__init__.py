"""Tools that observe a run -- the profiler (and its streamrt-prof CLI) and the debugger --
attached through the hooks core/hooks.py declares."""
