"""redis_basic control side: the shared Redis key layout (a queue list, done and dead records)."""

from chaos.backends.redis.control import RedisQueueControl


class Control(RedisQueueControl):
    # A blocking pop leaves no trace of a job being worked: it is in no key from its pop to its done record.
    # So the snapshot cannot show a claimed job, and a job counts as drained only once dead or acked.
    shows_deliveries = False
