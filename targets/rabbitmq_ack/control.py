"""rabbitmq_ack control side: the durable jobs queue and its dead-letter queue."""

from chaos.backends.rabbitmq.control import RabbitMQQueueControl


class Control(RabbitMQQueueControl):
    pass
