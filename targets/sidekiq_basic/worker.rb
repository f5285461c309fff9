# frozen_string_literal: true

# sidekiq_basic worker: Sidekiq 6.4 itself (its CLI, processor, basic fetch, retry and dead sets), with a
# server middleware and a job class that report the job's life to the suite over the probe protocol
# (docs/probe-protocol.md). Loaded by `sidekiq -r`; needs nothing but Ruby's standard library, Sidekiq and
# redis-namespace (Debian's ruby-sidekiq and ruby-redis-namespace).
#
# Sidekiq's basic fetch is a BRPOP: the job leaves Redis the moment a processor takes it, and nothing in
# Redis remembers it while it runs. A clean shutdown pushes unfinished jobs back; a process killed
# between the fetch and the end of the job loses it.

require "json"
require "net/http"
require "uri"
require "sidekiq"
require "sidekiq/job_retry"
require "sidekiq/scheduled"

module Chaos
  # The variable names of chaos/events.py.
  SINK_URL = ENV.fetch("CHAOS_SINK_URL")
  RUN_TOKEN = ENV.fetch("CHAOS_RUN_TOKEN", "")
  WORKER_ID = ENV.fetch("CHAOS_WORKER_ID", "pid#{Process.pid}")
  CONTRACT = JSON.parse(ENV.fetch("CHAOS_CONTRACT", "{}"))
  BACKEND_URL = ENV.fetch("CHAOS_BACKEND_URL")  # this worker's own way to Redis (a proxy under network faults)
  NAMESPACE = ENV.fetch("CHAOS_NAMESPACE", "")  # the run's key prefix, such as "chaos:<run>:"
  TOKEN_HEADER = "X-Chaos-Token"
  PROBE_PATH = "/probe/"

  MAX_ATTEMPTS = (CONTRACT["max_attempts"] || 1).to_i
  RETRY_DELAY_S = 0.2  # a failed job is due again this soon: retries within the run's time scale
  POLL_S = 0.2  # how often the scheduler moves due retries back to the queue
  NETWORK_TIMEOUT_S = 3.0  # a Redis reply past this is an error, not a hang (a black-holed link)

  def self.log(message)
    Sidekiq.logger.info("#{WORKER_ID}: #{message}")
  end

  # The probe client: one keep-alive HTTP/1.1 connection per thread (a Sidekiq processor is a thread), a
  # POST per probe, and no read timeout: a gate may hold the answer for as long as a scenario needs.
  module Probe
    def self.connection
      http = Thread.current[:chaos_probe]
      return http if http&.started?

      uri = URI(SINK_URL)
      http = Net::HTTP.new(uri.host, uri.port)
      http.read_timeout = nil  # block until the sink answers, however long a gate holds it
      http.write_timeout = nil
      http.keep_alive_timeout = 3600  # keep the one connection between probes
      http.max_retries = 0  # a probe is never sent twice
      http.start
      Thread.current[:chaos_probe] = http
    end

    def self.reset
      http = Thread.current[:chaos_probe]
      Thread.current[:chaos_probe] = nil
      http&.finish if http&.started?
    rescue IOError
      nil
    end

    # POST one probe and return the sink's answer. A sink that refuses or cannot be reached is fatal, as
    # for the suite's own workers: the process exits, and the run names its log's last lines.
    def self.send_probe(point, job, fields)
      body = fields.merge(worker: WORKER_ID, pid: Process.pid, clock: Time.now.to_f,
                          sent: Process.clock_gettime(Process::CLOCK_MONOTONIC))
      body[:job] = job unless job.nil?  # `ready` names no job
      request = Net::HTTP::Post.new(PROBE_PATH + point, "Content-Type" => "application/json",
                                                        TOKEN_HEADER => RUN_TOKEN)
      request.body = JSON.generate(body)
      begin
        response = connection.request(request)
      rescue Exception # rubocop:disable Lint/RescueException -- Sidekiq::Shutdown too: the connection is spent
        reset
        raise
      end
      answer = response.body.to_s.empty? ? {} : JSON.parse(response.body)
      return answer if response.code == "200"

      fatal("sink refused probe #{point} for job #{job}: #{response.code} #{answer["error"]}")
    rescue IOError, SystemCallError, JSON::ParserError, Net::HTTPBadResponse, Net::ProtocolError => e
      fatal("probe #{point} for job #{job} failed: #{e.class}: #{e.message}")
    end

    def self.fatal(message)
      warn("#{WORKER_ID}: #{message}")
      $stderr.flush
      exit!(70)
    end

    def self.claim(job, token, attempt) = send_probe("claim", job, {token: token, attempt: attempt})

    # fence: the execution's attempt, which grows with every claim of the job: the fenced sink mode refuses an
    # effect whose fence is older than one it has seen.
    def self.effect(job, token, fence) = send_probe("effect", job, {token: token, key: job, fence: fence})

    def self.ack(job, token, ok) = send_probe("ack", job, {token: token, ok: ok})

    def self.abandon(job, token, reason) = send_probe("abandon", job, {token: token, reason: reason})

    # The worker is idle: sent once per process (a restarted worker is a new one), on its first empty fetch.
    def self.ready
      return if @ready_pid == Process.pid

      send_probe("ready", nil, {})
      @ready_pid = Process.pid
    end
  end

  class HandlerFailed < StandardError; end

  # The job's life around Sidekiq's own processing: `claim` when Sidekiq hands the processor the job,
  # `abandon` when the handler raised (before Sidekiq's retry, which this middleware sits inside, puts it
  # in the retry set where another worker may take it), `ack` once perform returned. Basic fetch has
  # nothing to acknowledge (the job left Redis at the fetch), so the ack is always accepted; completion is
  # recorded in the done hash first, for the suite's final snapshot.
  class ProbeMiddleware
    def call(_worker, job, _queue)
      id, token = job["args"].first, job["jid"]
      # retry_count is absent on the first execution, 0 on the first retry, 1 on the second...
      attempt = job["retry_count"].nil? ? 1 : job["retry_count"] + 2
      Probe.claim(id, token, attempt)
      Thread.current[:chaos_attempt] = attempt  # the job's effect fences by it
      begin
        yield
      rescue StandardError => e
        Probe.abandon(id, token, "handler failed")
        Chaos.log("#{id} failed (#{e.message})")
        raise
      end
      record_done(id, token)
      Probe.ack(id, token, true)
    end

    def record_done(id, token)
      Sidekiq.redis { |conn| conn.hset("done", id, token) }
    rescue Redis::BaseError => e
      Chaos.log("#{id}: could not record its completion (#{e.class}: #{e.message})")
    end
  end

  # `ready` at the processor's first empty fetch: basic fetch's BRPOP timed out (after BasicFetch::TIMEOUT,
  # 2 s) with nothing to take. Sidekiq has no start-up recovery for basic fetch (nothing remembers a
  # fetched job) and no hook at the fetch, so the fetch itself is extended.
  module ReadyFetch
    def retrieve_work
      work = super
      Probe.ready if work.nil?
      work
    end
  end

  # Sidekiq's retry delay is (count**4) + 15 seconds plus up to 9 * (count + 1) seconds of jitter, even
  # with a custom sidekiq_retry_in: minutes, far past a run. Retries here are due after RETRY_DELAY_S.
  module SoonRetry
    private

    def delay_for(_worker, _count, _exception) = RETRY_DELAY_S
  end

  # The scheduler's first poll waits 0-5 s after boot (10 more without poll_interval_average); a run's
  # first retry may be due sooner.
  module NoInitialWait
    private

    def initial_wait = nil
  end
end

# The job class the control's Sidekiq-format jobs name: args are [the suite's job id, its payload].
class ChaosJob
  include Sidekiq::Worker

  def perform(id, payload)
    duration = payload["handler_s"].to_f
    sleep(duration) if duration.positive?
    raise Chaos::HandlerFailed, "poison job: its handler fails every time" if payload["fail"]

    Chaos::Probe.effect(id, jid, Thread.current[:chaos_attempt])
  end
end

namespace = Chaos::NAMESPACE
unless namespace.empty? || namespace.end_with?(":")
  abort("#{Chaos::WORKER_ID}: CHAOS_NAMESPACE #{namespace.inspect} does not end with ':'; redis-namespace " \
        "joins its namespace to each key with one")
end

# redis-namespace 1.9 calls redis-rb 4.8 the pre-5.0 way (brpop's timeout as a positional argument, sadd's
# boolean), and redis-rb would warn about it on every fetch.
Redis.silence_deprecations = true
Sidekiq::BasicFetch.prepend(Chaos::ReadyFetch)
Sidekiq::JobRetry.prepend(Chaos::SoonRetry)
Sidekiq::Scheduled::Poller.prepend(Chaos::NoInitialWait)
Sidekiq.options[:max_retries] = Chaos::MAX_ATTEMPTS - 1  # a job is dead after MAX_ATTEMPTS executions
Sidekiq.options[:poll_interval_average] = Chaos::POLL_S

Sidekiq.configure_server do |config|
  redis = {url: Chaos::BACKEND_URL, network_timeout: Chaos::NETWORK_TIMEOUT_S}
  redis[:namespace] = namespace.delete_suffix(":") unless namespace.empty?
  config.redis = redis
  config.server_middleware { |chain| chain.add(Chaos::ProbeMiddleware) }
end

Chaos.log("Sidekiq #{Sidekiq::VERSION} on #{RUBY_DESCRIPTION}, max_attempts #{Chaos::MAX_ATTEMPTS}, " \
          "keys under #{namespace.inspect}")
