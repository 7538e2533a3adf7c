// Preloaded (`node -r`) into an MCP server nobody here wrote, so that it listens where a test
// server must: a spare port on 127.0.0.1, whatever port and host it asks for. The port it got is
// written to stderr as `LISTENING <port>` for the test to read.
const net = require('node:net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
  this.once('listening', () => process.stderr.write(`LISTENING ${this.address().port}\n`));
  return listen.call(this, 0, '127.0.0.1', callback);
};
