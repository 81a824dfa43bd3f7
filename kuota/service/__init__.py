"""Redis mode: the scheduler service, worker pools and the pods they run.

``kuota scheduler`` (:mod:`.scheduler`) runs the admission engine in real time
against the Redis store; ``kuota worker`` (:mod:`.worker`) registers a node of
a pool and runs pods as rq jobs; :mod:`.embedded` runs both inside one process
on an in-process fakeredis. See docs/redis-mode.md.
"""
