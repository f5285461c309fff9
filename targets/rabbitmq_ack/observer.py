"""rabbitmq_ack's own record, from the broker's firehose: each delivery of the jobs queue is a claim by the
worker whose connection it went to (named for its CHAOS_WORKER_ID), each publish routed to jobs.dead a
failure. RabbitMQ shows no ack, nack or requeue, so the record covers claims and failures only: completions
are judged from the workers' probes."""

from chaos.backends.rabbitmq.observer import FirehoseObserver


class Observer(FirehoseObserver):
    pass
