import type { ServerResponse } from 'node:http';

/**
 * Lets the transport answer as usual unless, by the time it writes its status, `instead()` names
 * another answer: that one is sent, and what the transport then writes is dropped. (The transport
 * answers a POST with one JSON body after every handler of the request has run, so a handler's
 * finding can still change the status.)
 */
export function answerInstead(response: ServerResponse, instead: () => (() => void) | undefined): void {
  const { writeHead, write, end } = response;
  const restore = () => Object.assign(response, { writeHead, write, end });
  response.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
    const replacement = instead();
    restore();
    if (!replacement) return writeHead.apply(this, args);
    replacement();
    Object.assign(response, { write: () => true, end: () => response });
    return response;
  } as ServerResponse['writeHead'];
}
