"""The SQLite store: schema and migrations, the batched writer, reads.

Public surface: ``Store`` (open a file, ``read``/``read_sync``, ``writer``), ``Unit`` and
``StoreWriter`` (atomic groups of writes, group-committed, published after commit), the
row types, and the ``ops`` (statement builders) and ``queries`` modules.
"""

from __future__ import annotations

from echsd.store import ops, queries
from echsd.store.checkpointer import run_checkpoints
from echsd.store.errors import StoreClosed, StoreError
from echsd.store.rows import BlackboardRow, Gap, InputRow, ThreadRow
from echsd.store.schema import LATEST_VERSION, MIGRATIONS
from echsd.store.store import Store
from echsd.store.unit import Statement, Unit
from echsd.store.writer import StoreWriter, WriterStats

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "BlackboardRow",
    "Gap",
    "InputRow",
    "Statement",
    "Store",
    "StoreClosed",
    "StoreError",
    "StoreWriter",
    "ThreadRow",
    "Unit",
    "WriterStats",
    "ops",
    "queries",
    "run_checkpoints",
]
