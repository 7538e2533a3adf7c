// An open-loop load at a steady rate, for `npm run bench`'s latency figures.
//
// Why not autocannon's overallRate: it gives each connection a quota per second that the
// connection spends back to back at the start of every second, then idles (httpClient.js,
// `reqsMadeThisSecond`). At 1 000/s over 20 connections that is a burst at full speed every
// second, so its percentiles are those of a saturated service for part of each second, not of a
// service receiving 1 000 evenly spaced checks a second. Here request i is due at start + i/rate
// and its latency counts from that moment (not from when it could be sent), so a stall of the
// service or of this process shows in the tail instead of being omitted (coordinated omission).
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { refusalTally } from './bench-refusals.mjs';

/** POST `body` to `${base}${path}` at `rate`/s for `seconds`, over at most `connections` sockets. */
export async function steadyRate({ base, path, token, body, rate, seconds, connections }) {
  const url = new URL(path, base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const payload = Buffer.from(body);
  const total = Math.round(rate * seconds);
  const intervalMs = 1000 / rate;
  const latencies = [];
  let ok2xx = 0;
  let non2xx = 0;
  const refusals = refusalTally();
  let errors = 0;
  let inFlight = 0;
  let maxInFlight = 0;

  const send = (dueAt) =>
    new Promise((resolve) => {
      // A request sent before its due time (see the sleep below) counts from when it was sent, one
      // sent late from its due time: never shorter than the service took, never negative.
      const from = Math.min(dueAt, performance.now());
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': payload.length },
        },
        (res) => {
          const ok = res.statusCode >= 200 && res.statusCode < 300;
          // A refusal's body is kept for its problem code; a 2xx answer's is not read.
          const chunks = [];
          if (ok) res.resume();
          else res.on('data', (chunk) => chunks.push(chunk));
          res.once('end', () => {
            latencies.push(performance.now() - from);
            if (ok) ok2xx += 1;
            else {
              non2xx += 1;
              refusals.count(res.statusCode, Buffer.concat(chunks).toString());
            }
            inFlight -= 1;
            resolve();
          });
        },
      );
      req.once('error', () => {
        errors += 1;
        inFlight -= 1;
        resolve();
      });
      req.end(payload);
    });

  // This process's own stalls (its GC, the other processes on its cores) delay sends and reads as
  // much as the service's: reported beside the percentiles so a reader can tell them apart.
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  const pending = [];
  for (let i = 0; i < total; i += 1) {
    const dueAt = started + i * intervalMs;
    const wait = dueAt - performance.now();
    // Timers are coarse (about 1 ms): sleep while far from the due time, then send.
    if (wait > 1.5) await new Promise((resolve) => setTimeout(resolve, wait - 1));
    pending.push(send(dueAt));
  }
  await Promise.all(pending);
  const elapsedS = (performance.now() - started) / 1000;
  loop.disable();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (p) => +(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN).toFixed(2);
  return {
    requestsPerSec: Math.round(latencies.length / elapsedS),
    p50: at(50),
    p90: at(90),
    p99: at(99),
    max: +(latencies.at(-1) ?? NaN).toFixed(2),
    ok2xx,
    non2xx,
    errors,
    maxInFlight,
    refusals: refusals.counts,
    generatorLoopDelayP99: +(loop.percentile(99) / 1e6).toFixed(2),
    generatorLoopDelayMax: +(loop.max / 1e6).toFixed(2),
  };
}
