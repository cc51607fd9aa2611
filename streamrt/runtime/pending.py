"""The pending-operation table: one entry per output not yet computed; programs whose input is
not ready are parked on that input's entry and handed back when it completes."""
from __future__ import annotations


class PendingTable:
    def __init__(self):
        self._entries = {}     # port id -> list of parked programs

    def add(self, port):
        self._entries.setdefault(port.id, [])

    def pending(self, port) -> bool:
        return port.id in self._entries

    def park(self, prog, port):
        self._entries[port.id].append(prog)

    def complete(self, port):
        """Remove the entry; return the programs parked on it (to be retried)."""
        return self._entries.pop(port.id, [])

    def __len__(self):
        return len(self._entries)
