"""The store: one interface, two backends (SQLite, PostgreSQL), the batched writer, reads.

Public surface: ``Store`` (``open_store(path or URL)``, ``read``/``read_sync``, ``writer``,
``run_background``), ``Unit`` and ``StoreWriter`` (atomic groups of writes,
group-committed, published after commit), ``Conn`` (what SQL code may use of a
connection on either backend), the row types, and the ``ops`` (statement builders) and
``queries`` modules. The PostgreSQL backend (and psycopg) is imported only when a
``postgresql://`` store is opened.
"""

from __future__ import annotations

from echsd.store import ops, queries
from echsd.store.conn import Conn
from echsd.store.errors import LeaseLost, StoreClosed, StoreConflict, StoreError
from echsd.store.rows import BlackboardChange, BlackboardRow, Gap, InputRow, ThreadRow
from echsd.store.schema import LATEST_VERSION, MIGRATIONS
from echsd.store.sqlite.checkpointer import run_checkpoints
from echsd.store.opening import open_store
from echsd.store.store import Store
from echsd.store.unit import Statement, Unit
from echsd.store.commit import WriteGuard, WriterStats
from echsd.store.writer import StoreWriter

__all__ = [
    "LATEST_VERSION",
    "LeaseLost",
    "MIGRATIONS",
    "BlackboardChange",
    "BlackboardRow",
    "Conn",
    "Gap",
    "InputRow",
    "Statement",
    "Store",
    "open_store",
    "StoreClosed",
    "StoreConflict",
    "StoreError",
    "StoreWriter",
    "ThreadRow",
    "Unit",
    "WriteGuard",
    "WriterStats",
    "ops",
    "queries",
    "run_checkpoints",
]
