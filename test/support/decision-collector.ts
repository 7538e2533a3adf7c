import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** A batch as the collector received it: the gzip JSON array of OPA decision events, and its headers. */
export interface ReceivedBatch<Event = Record<string, unknown>> {
  encoding?: string;
  contentType?: string;
  events: Event[];
  raw: string;
}

/**
 * A collector speaking OPA's decision log API: a real HTTP server that records each batch. It can
 * answer 503 (`failing`), or hold every request unanswered (`holding`), as a collector slower than
 * the uploader's timeout does; `close` ends held requests too.
 */
export function decisionCollector<Event = Record<string, unknown>>() {
  const received: Array<ReceivedBatch<Event>> = [];
  let failing = false;
  let holding = false;
  let held = 0;
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (holding) {
        held += 1;
        return;
      }
      if (failing) {
        res.writeHead(503).end();
        return;
      }
      const raw = gunzipSync(Buffer.concat(chunks)).toString('utf8');
      received.push({ encoding: req.headers['content-encoding'], contentType: req.headers['content-type'], events: JSON.parse(raw), raw });
      res.writeHead(204).end();
    });
  }).listen(0, '127.0.0.1');
  return {
    received,
    setFailing: (value: boolean) => (failing = value),
    setHolding: (value: boolean) => (holding = value),
    /** How many requests were held unanswered. */
    held: () => held,
    url: async () => {
      if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/logs`;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A collector that is down: it accepts each connection and closes it at once, before any answer. */
export function closingCollector() {
  const server = createTcpServer((socket) => socket.destroy()).listen(0, '127.0.0.1');
  return {
    url: async () => {
      if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/logs`;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * The value of a metric in Prometheus text: the sum of its series (every label set), or undefined
 * when the text holds none, so a test of a metric that does not exist fails rather than reads 0.
 */
export function metricValue(text: string, name: string): number | undefined {
  const values = text
    .split('\n')
    .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
  return values.length > 0 ? values.reduce((sum, value) => sum + value, 0) : undefined;
}
