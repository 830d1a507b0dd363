"""The shared blackboard (keys, versions, compare-and-set, watches): not built yet.

The store already has its table (``blackboard`` in migration 1) and the wire protocol
reserves its ops (``blackboard.get/set/list/delete`` answer ``unknown_op`` until then).
"""
