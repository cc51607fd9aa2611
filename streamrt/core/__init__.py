"""The floor of the house: dtypes, settings, errors, the IR, the op table, cache keys, counters
and the hooks tools attach to. Imports nothing above itself."""
