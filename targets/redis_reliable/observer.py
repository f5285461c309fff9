"""redis_reliable's own record, from the server's replication stream: a job moved from the queue into a
worker process's processing list is a claim by that worker; its entry removed from the list in the same
transaction as its done entry a completion (with the dead set: a failure; pushed back on the queue, or
moved back by the reconciler: a release). The actor is the worker the processing list is named for,
the identity it registered in the queue's own keys; a completion's token is the one its ack wrote."""

from chaos.backends.redis.observer import ReplicaObserver


class Observer(ReplicaObserver):
    pass
