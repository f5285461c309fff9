"""rabbitmq_ack control side: the durable jobs queue and its dead-letter queue."""

from chaos import RabbitMQQueueControl


class Control(RabbitMQQueueControl):
    pass
