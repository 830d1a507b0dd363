"""Hooks (``[hooks]`` of config.toml): tell a program or a URL when something happens.

``Hooks`` taps the events this node commits (``EventTaps``): for each event type some hook
wants, it builds the JSON once (``payload``) and offers it to the command runner
(``command``) and to each webhook's sender (``webhook``), which queue it and return at
once, so no thread ever waits for a hook (``runner``). ``run`` holds their tasks.
"""
