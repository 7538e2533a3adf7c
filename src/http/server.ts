import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, type ProblemCode } from '../kernel/errors';
import type { HttpApp } from './app';
import { problemBody } from './problem';

/** Node's HTTP parser errors that a client caused, as the problem they are. */
const PARSER_PROBLEMS: Record<string, ProblemCode> = {
  HPE_HEADER_OVERFLOW: 'headers_too_large',
};

/**
 * Requests Node refuses before Koa sees them (headers over 16 KiB, a malformed request line)
 * get a problem document too, not Node's bare plain-text answer.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const problem = new ApiError(PARSER_PROBLEMS[error.code ?? ''] ?? 'invalid_request', 'the request could not be parsed');
  const body = JSON.stringify(problemBody(problem, '/'));
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
      'Content-Type: application/problem+json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** The HTTP server of the service (and of the tests): the app's handler plus problem-shaped parser errors. */
export function createHttpServer(app: HttpApp): Server {
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  return server;
}
