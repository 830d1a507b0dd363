"""Command-line entry points: ``echsd`` (daemon and admin verbs) and ``echs`` (thin client)."""
