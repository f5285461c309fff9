"""redis_reliable control side: the shared Redis key layout (queue, processing lists, done and dead)."""

from chaos.backends.redis.control import RedisQueueControl


class Control(RedisQueueControl):
    pass
