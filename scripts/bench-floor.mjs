// The floor of a broker check, for `npm run bench`'s latency baseline: a bare Node HTTP server
// that does only what any check promising a durable record and a shared budget must do, one Redis
// round trip (a one-key Lua script) and one Postgres commit (one call_records row, a named
// prepared statement), then answers. No authentication, no policy, no facts, no decision log.
// The service at a steady rate is reported against this server at the same rate in the same run:
// what remains is the service's own cost; what the floor itself takes is the machine's.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Redis } = require('ioredis');
const pg = require('pg');
const { TypeID } = require('typeid-js');

const { PORT, HOST = '127.0.0.1', DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX = '', FLOOR_GRANT_ID } = process.env;

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
  await pool.query({ ...INSERT, values: [id, GRANT_UUID, await shapeOf(tool), DIGEST] });
  return JSON.stringify({ allowed: true, callId: id, remaining: 1_000_000 - taken });
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
