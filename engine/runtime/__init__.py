"""The controller runtime: event sources, the work queue, the outcome switch and the manager.

``manager.Manager`` is the entry point (deterministic for ``engine test``, threaded for
``engine run``); ``queue`` holds the retry policy, ``controller`` the one outcome switch,
``watches`` the informers, ``kinds`` what the runtime needs of compiled kinds.
"""
