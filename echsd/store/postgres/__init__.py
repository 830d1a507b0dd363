"""The PostgreSQL backend: one database shared by several daemons (psycopg 3, blocking
connections driven from worker threads as the SQLite backend drives apsw)."""
