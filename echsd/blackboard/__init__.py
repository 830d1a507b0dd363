"""The shared blackboard: one global keyspace of JSON values, versioned, compare-and-set,
watched.

- ``entries``: what a key and a value may be, and how entries and change events look.
- ``core``: ``BoardCore``, every decision about the state (sans-IO).
- ``board``: ``Blackboard``, the daemon's one owner of that state: decides through the
  core, commits through the store writer, publishes committed changes to listeners.
- ``service``: the wire ops (``blackboard.get|set|list|delete``).
- ``thread_api``: ``ThreadBlackboard``, a thread's handle for the ``blackboard_*`` tools.

Entries and a log of changes (with their own seq space, replayed by ``subscribe
{blackboard}``) live in the store (``blackboard``, ``blackboard_log``), written in one unit
per change, so they survive a crash together.
"""
