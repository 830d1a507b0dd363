"""The web view (``echsd serve --web``): a page shipped in the package, a JSON + SSE API
over the router, ``/metrics``, and the logins ``echs web`` hands out.

- ``door``: the listeners (hypercorn on trio) and ``WebDoor`` (logins for ``echs web``);
- ``app``: the routes and the order of checks; ``api``: the JSON handlers (ops through the
  router); ``streams``: the live streams (Server-Sent Events over the wire's own outbox and
  subscriptions);
- ``guard``: the checks of Host, Origin, cookie and CSRF token (sans-IO); ``sessions``: the
  one-time codes and sessions (sans-IO); ``http``: the little of HTTP the door needs;
- ``static/``: the page (plain JavaScript, no build step, nothing fetched from elsewhere).
"""
