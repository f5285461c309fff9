"""nats_jetstream control side: the run's work-queue stream (file or memory storage, the `storage`
parameter) and its durable pull consumer, AckWait and MaxDeliver from the contract."""

from chaos.backends.nats.control import NatsQueueControl


class Control(NatsQueueControl):
    pass
