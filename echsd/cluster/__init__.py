"""Several daemons over one PostgreSQL store: leases, fencing, forwarding, event relay.

See docs/cluster.md. Imported only when the store is PostgreSQL.
"""
