// The floor of a broker check, for `npm run bench`'s latency baseline: a bare Node HTTP server
// that does only what any check promising a durable record and a shared budget must do, one Redis
// round trip (a one-key Lua script) and one Postgres commit (one call_records row, a named
// prepared statement), then answers. No authentication, no policy, no facts, no decision log.
// The service at a steady rate is reported against this server at the same rate in the same run:
// what remains is the service's own cost; what the floor itself takes is the machine's.
// FLOOR_COMMIT=grouped: the rows of concurrent requests share one statement and one commit, as the
// service's group commit does (while one statement is in flight the next rows gather; with none in
// flight, the rows of the event loop's turn leave together): the same work as a check without the
// service's code, its floor. Unset: a statement and a commit per request (the reference server).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Redis } = require('ioredis');
const pg = require('pg');
const { TypeID } = require('typeid-js');

const { PORT, HOST = '127.0.0.1', DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX = '', FLOOR_GRANT_ID, FLOOR_COMMIT } = process.env;

const redis = new Redis(REDIS_URL, { keyPrefix: REDIS_KEY_PREFIX, enableAutoPipelining: false, enableOfflineQueue: false });
redis.defineCommand('take', {
  numberOfKeys: 1,
  lua: "local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], 1000) return n",
});
const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10 });
const INSERT = {
  name: 'bench_floor_insert',
  // The service's row: ids as UUIDs, the digest as 32 bytes, the (tool, principal) pair and the outcome as codes.
  text: `insert into call_records (id, grant_id, shape, outcome, args_digest, requested_at)
         values ($1::uuid, $2::uuid, $3, 0, $4::bytea, now())`,
};
const INSERT_MANY = {
  name: 'bench_floor_insert_many',
  text: `insert into call_records (id, grant_id, shape, outcome, args_digest, requested_at)
         select id, $2::uuid, shape, 0, $4::bytea, now() from unnest($1::uuid[], $3::integer[]) as r(id, shape)`,
};
const GRANT_UUID = Buffer.from(TypeID.fromString(FLOOR_GRANT_ID).toUUIDBytes()).toString('hex');
const DIGEST = Buffer.alloc(32);

/** The code of each tool's (tool, principal) pair, made once per tool as the service does. */
const shapes = new Map();
async function shapeOf(tool) {
  if (!shapes.has(tool)) {
    const { rows } = await pool.query(
      `insert into call_record_shapes (tool, principal_kind, principal_id) values ($1, 1, 'bench-floor')
       on conflict (tool, principal_kind, principal_id) do update set tool = excluded.tool returning code`,
      [tool],
    );
    shapes.set(tool, rows[0].code);
  }
  return shapes.get(tool);
}

async function check(body) {
  const { tool } = JSON.parse(body);
  const taken = await redis.take(`floor:${FLOOR_GRANT_ID}`);
  // Call ids as the service makes them: a UUIDv7 of the time of the check.
  const uuid = randomBytes(16);
  uuid.writeUIntBE(Date.now(), 0, 6);
  const id = uuid.toString('hex');
  const shape = await shapeOf(tool);
  await (FLOOR_COMMIT === 'grouped' ? commitGrouped(id, shape) : pool.query({ ...INSERT, values: [id, GRANT_UUID, shape, DIGEST] }));
  return JSON.stringify({ allowed: true, callId: id, remaining: 1_000_000 - taken });
}

/** The rows waiting for the next statement, and whether one is in flight or about to leave. */
const waiting = [];
let flushing = false;
function commitGrouped(id, shape) {
  return new Promise((resolve, reject) => {
    waiting.push({ id, shape, resolve, reject });
    if (flushing) return;
    flushing = true;
    setImmediate(drain);
  });
}
async function drain() {
  while (waiting.length > 0) {
    const batch = waiting.splice(0, 500);
    try {
      await pool.query({ ...INSERT_MANY, values: [batch.map((w) => w.id), GRANT_UUID, batch.map((w) => w.shape), DIGEST] });
      for (const w of batch) w.resolve();
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
  flushing = false;
}

const server = http.createServer((req, res) => {
  if (req.url === '/healthz') return res.end('ok');
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    check(Buffer.concat(chunks).toString()).then(
      (json) => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) }).end(json),
      (error) => res.writeHead(503, { 'content-type': 'text/plain' }).end(String(error.message)),
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(PORT), HOST);
process.on('SIGTERM', () => {
  server.close();
  void Promise.allSettled([pool.end(), redis.quit()]).then(() => process.exit(0));
});
