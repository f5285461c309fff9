"""redis_streams's own record, from the server's replication stream: each delivery and XCLAIM reaches a
replica naming its consumer and delivery counter, each XACK with the done record of its script
(chaos.backends.redis.streams). A claim is an XCLAIM that hands the entry to another consumer or raises its
counter; a completion is the done hash's write in the XACK's transaction, by the consumer its token names,
whatever that consumer's worker reported."""

from chaos.backends.redis.streams import StreamObserver


class Observer(StreamObserver):
    pass
