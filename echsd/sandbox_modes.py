"""The names of the sandbox's settings, shared by settings, agent types, thread config and
the sandbox itself (``echsd/tools/sandbox``). Light: the thin client loads it."""

READ_ONLY = "read-only"
WORKSPACE_WRITE = "workspace-write"
FULL_ACCESS = "full-access"
MODES = (FULL_ACCESS, WORKSPACE_WRITE, READ_ONLY)  # loosest first, as the other policy scales
NETWORK = ("on", "off")  # loosest first
