"""sqs_visibility control side: the run's queue (VisibilityTimeout = lease_s, a redrive policy with
maxReceiveCount = max_attempts to its dead-letter queue) and the snapshot SQS can honestly give."""

from chaos.backends.sqs.control import SqsQueueControl


class Control(SqsQueueControl):
    pass
