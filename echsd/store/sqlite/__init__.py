"""The SQLite backend: the embedded default (apsw, one file in WAL mode)."""
