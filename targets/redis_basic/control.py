"""redis_basic control side: the shared Redis key layout (a queue list, done and dead records)."""

from chaos import RedisQueueControl


class Control(RedisQueueControl):
    pass
