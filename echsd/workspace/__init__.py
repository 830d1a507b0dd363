"""Workspaces: git worktrees for threads, turn snapshots, diffs, undo and merges.

All of it goes through the ``git`` command (``git.py``), off the event loop, on private
refs (``refs/echsd/<thread>/...``): never the user's branch, index or stash, except where
the user asked for it (``echs merge`` merges into their branch).

- ``git``: running git, bounded output, clear errors (git missing, not a repository).
- ``repo``: which repository a directory is in; HEAD, branches, refs.
- ``snapshot``: a work tree's state as a commit on a private ref (untracked files too).
- ``diff``: what changed between two snapshots within a cwd (paths, stat, unified diff).
- ``restore``: files put back as a snapshot recorded them (undo).
- ``worktree``: a thread's worktree and branch (add, commit its work, remove).
- ``merge``: a branch merged into a work tree, or refused with the files, changing nothing.

It imports nothing of threads; ``echsd.threads.workspaces`` is what threads use.
"""
