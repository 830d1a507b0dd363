"""echsd: a daemon that runs coding agents (Responses API tool loops) in the background."""

__version__ = "0.1.0"
