"""What leading means to a shard member: the keys-only view of every order is open only while it leads.

The leader places orders from keys-only views of every order kind on every engaged cluster
(``watches.KEYS_ONLY``). A follower has no use for them, and keeping them would make every member decode every
order's events. So the views open when the member becomes leader and close (their store dropped) when it stops
(decision 0039). A view answers ``Sources.keys_of`` only once it has listed, so a new leader places nothing of a
kind before it holds every order of it, as listed after its tenure began.
"""

from __future__ import annotations

import threading

from engine.runtime.watches import Sources


class Leadership:
    """The leader election's callbacks for a shard member: open the views, then lead; stop leading, then close."""

    def __init__(self, sources: Sources) -> None:
        self._sources = sources
        self.leading = threading.Event()
        """Set while this replica leads (the assigner's rounds run only then)."""

    def started(self) -> None:
        """Became leader: open the keys-only views (they list on their own threads), then lead."""
        self._sources.show_keys(True)
        self.leading.set()

    def stopped(self) -> None:
        """No longer leader: stop leading, then close the views and drop what they held."""
        self.leading.clear()
        self._sources.show_keys(False)
