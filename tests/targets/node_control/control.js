// A target's control as a process of its own, in Node 20 with no npm dependency: it speaks the control
// protocol (docs/control-protocol.md) on stdin and stdout, and RESP to Redis by hand over `net`, keeping
// redis_reliable's key layout (chaos/worker/redis.py), whose Python worker and reconciler run the queue.
"use strict";
const net = require("node:net");
const readline = require("node:readline");

const url = new URL(process.env.CHAOS_BACKEND_URL);
const prefix = process.env.CHAOS_NAMESPACE || "";
const keys = {queue: prefix + "queue", done: prefix + "done", dead: prefix + "dead", attempts: prefix + "attempts",
              processing: prefix + "processing:"};
const globEscape = (text) => text.replace(/[\\*?[\]^]/g, (c) => "\\" + c);
// Everything the snapshot reads, in one atomic script, as RedisQueueControl reads it.
const READ_ALL = `
local lists = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  lists[#lists + 1] = key
  lists[#lists + 1] = redis.call('LRANGE', key, 0, -1)
end
return {redis.call('HGETALL', KEYS[1]), redis.call('HKEYS', KEYS[2]), redis.call('SMEMBERS', KEYS[3]),
        redis.call('LRANGE', KEYS[4], 0, -1), lists}`;

// One connection, one command at a time; a connection that failed is dropped and made again on next use.
let conn = null;

function connect() {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection({host: url.hostname, port: Number(url.port || 6379)});
    const state = {socket, buffer: Buffer.alloc(0), waiting: null};
    socket.setTimeout(5000, () => socket.destroy(new Error("redis: no answer within 5s")));
    socket.once("connect", () => resolve(state));
    socket.on("data", (chunk) => { state.buffer = Buffer.concat([state.buffer, chunk]); pump(state); });
    const fail = (err) => {
      if (conn === state) conn = null;
      if (state.waiting) { const w = state.waiting; state.waiting = null; w.reject(err); }
      reject(err);
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("redis: connection closed")));
  });
}

// A RESP reply parsed from buf at pos: [value, next pos], or null when incomplete.
function parse(buf, pos) {
  const end = buf.indexOf("\r\n", pos);
  if (end < 0) return null;
  const type = String.fromCharCode(buf[pos]), line = buf.toString("utf8", pos + 1, end);
  if (type === "+") return [line, end + 2];
  if (type === "-") return [new Error("redis: " + line), end + 2];
  if (type === ":") return [Number(line), end + 2];
  if (type === "$") {
    const n = Number(line);
    if (n < 0) return [null, end + 2];
    if (buf.length < end + 2 + n + 2) return null;
    return [buf.toString("utf8", end + 2, end + 2 + n), end + 2 + n + 2];
  }
  if (type === "*") {
    const n = Number(line), items = [];
    let at = end + 2;
    for (let i = 0; i < n; i++) {
      const got = parse(buf, at);
      if (got === null) return null;
      items.push(got[0]);
      at = got[1];
    }
    return [n < 0 ? null : items, at];
  }
  throw new Error("redis: unexpected reply type " + JSON.stringify(type));
}

function pump(state) {
  if (!state.waiting) return;
  const got = parse(state.buffer, 0);
  if (got === null) return;
  state.buffer = state.buffer.subarray(got[1]);
  const w = state.waiting;
  state.waiting = null;
  if (got[0] instanceof Error) w.reject(got[0]); else w.resolve(got[0]);
}

async function command(...args) {
  if (conn === null) {
    conn = await connect();
    const db = url.pathname.replace("/", "");
    if (db && db !== "0") await send(conn, ["SELECT", db]);
  }
  return send(conn, args);
}

function send(state, args) {
  return new Promise((resolve, reject) => {
    state.waiting = {resolve, reject};
    const parts = args.map((a) => { const s = String(a); return `$${Buffer.byteLength(s)}\r\n${s}\r\n`; });
    state.socket.write(`*${args.length}\r\n${parts.join("")}`);
  });
}

const ops = {
  async setup() { return {}; },  // the queue is a list: nothing to create
  async enqueue({jobs}) {
    if (jobs.length) {
      const entries = jobs.map((job) => JSON.stringify({id: job.id, payload: {fail: job.fail, handler_s: job.handler_s}}));
      await command("RPUSH", keys.queue, ...entries);
    }
    return {};
  },
  async snapshot() {
    const [flat, done, dead, queue, lists] = await command("EVAL", READ_ALL, 4, keys.attempts, keys.done, keys.dead,
                                                          keys.queue, globEscape(keys.processing) + "*");
    const attempts = {};
    for (let i = 0; i < flat.length; i += 2) attempts[flat[i]] = Number(flat[i + 1]);
    const found = new Map();
    const put = (job, state, owner) => found.set(job, {job, state, owner, attempts: attempts[job] ?? null});
    for (const job of done) put(job, "done", null);
    for (const job of dead) put(job, "dead", null);
    for (const raw of queue) put(JSON.parse(raw).id, "pending", null);
    for (let i = 0; i < lists.length; i += 2) {
      const rest = lists[i].slice(keys.processing.length);
      const owner = rest.slice(0, rest.lastIndexOf(":"));
      for (const raw of lists[i + 1]) put(JSON.parse(raw).id, "claimed", owner);
    }
    return {jobs: [...found.values()].sort((a, b) => (a.job < b.job ? -1 : 1))};
  },
  async completion({job, token}) {
    // The done hash names the token of the claim whose ack completed the job (the last one to).
    return {outcome: (await command("HGET", keys.done, job)) === token ? "accepted" : "unknown"};
  },
  async teardown() {
    if (conn !== null) conn.socket.end();
    conn = null;
    return {};
  },
};

// One request at a time, in order: each line is answered before the next is read.
const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
(async () => {
  for await (const line of lines) {
    let request;
    try {
      request = JSON.parse(line);
    } catch (err) {
      console.error("control.js: a request that is not JSON: " + line);
      process.exit(2);
    }
    let answer;
    try {
      const op = ops[request.op];
      if (!op) throw new Error("unknown op " + JSON.stringify(request.op));
      answer = {id: request.id, result: await op(request)};
    } catch (err) {
      console.error(`control.js: ${request.op} failed: ${err.stack || err}`);
      answer = {id: request.id, error: {message: String(err.message || err)}};
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  if (conn !== null) conn.socket.destroy();
})();
