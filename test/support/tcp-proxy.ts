import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a server (Redis, say) that can blackhole its traffic: while cut, bytes
 * in both directions are held back, as a network partition holds back TCP segments, and they
 * flow again, in order, when restored. The client sees a connection that is up but silent.
 */
export interface TcpProxy {
  url(scheme: string, path?: string): string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let cut = false;
  const pairs = new Set<{ client: Socket; upstream: Socket; held: Array<() => void> }>();

  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    const pair = { client, upstream, held: [] as Array<() => void> };
    pairs.add(pair);
    const forward = (to: Socket) => (data: Buffer) => {
      const send = () => to.write(data);
      if (cut) pair.held.push(send);
      else send();
    };
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: (scheme, path = '') => `${scheme}://127.0.0.1:${port}${path}`,
    cut() {
      cut = true;
    },
    restore() {
      cut = false;
      for (const pair of pairs) for (const send of pair.held.splice(0)) send();
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
