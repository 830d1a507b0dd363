"""The daemon's authenticated connections by id: the path from daemon code to one client.

Events go to every subscriber of a thread; some messages are for one connection only
(an approval prompt for the client that asked to approve, a ``tool.call`` for the client
that registered the tool). A connection registers here once authenticated and leaves when
it closes; daemon code holds a ``Peer`` (``echsd.tools.capabilities``) and calls
``send_direct``. Such a message is an event envelope with ``seq`` null: it belongs to no
thread's numbered log and is never stored or replayed.
"""

from __future__ import annotations

from typing import Iterator

from echsd.tools.capabilities import Peer


class Peers:
    def __init__(self) -> None:
        self._by_id: dict[int, Peer] = {}

    def add(self, peer: Peer) -> None:
        self._by_id[peer.peer_id] = peer
        peer.on_close(lambda: self._by_id.pop(peer.peer_id, None))

    def get(self, peer_id: int) -> Peer | None:
        return self._by_id.get(peer_id)

    def __iter__(self) -> Iterator[Peer]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)
