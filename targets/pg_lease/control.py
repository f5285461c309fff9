"""pg_lease control side: the jobs table of the visibility-timeout seed, and the result table of its
`report = "result-store"` variant."""

from chaos.backends.postgres.control import TableQueueControl

RESULTS_DDL = "CREATE TABLE results (job text NOT NULL, token text NOT NULL, PRIMARY KEY (job, token))"


class Control(TableQueueControl):
    DDL = """
    CREATE TABLE jobs (
        id               text PRIMARY KEY,
        payload          jsonb NOT NULL,
        status           text NOT NULL DEFAULT 'pending',
        available_at     timestamptz NOT NULL DEFAULT now(),
        lease_expires_at timestamptz,
        claim_token      text,
        claimed_by       text,
        attempts         integer NOT NULL DEFAULT 0
    )"""
    SNAPSHOT_SQL = """
    SELECT id, status, claimed_by, attempts,
           json_build_object('lease_expired', lease_expires_at < now(), 'claim_token', claim_token)
    FROM jobs ORDER BY id"""

    def setup(self) -> None:
        super().setup()
        self.execute(RESULTS_DDL)

    def completion(self, job: str, token: str) -> str | tuple[str, str]:
        """Under `report = "result-store"`, from the result table: a row is an execution that ran to its
        ack, which a result store records whether or not the queue took the ack (a stale owner's too), so
        the answer names that source. Otherwise the workers vouch for their acks and nothing is asked."""
        if self.params["report"] != "result-store":
            return "unknown"
        stored = self.execute("SELECT 1 FROM results WHERE job = %s AND token = %s", (job, token))
        return ("accepted" if stored else "unknown"), "result-store"
