"""Running echsd under systemd: the sd_notify protocol and the user unit file."""
