import pino, { type Logger } from 'pino';

/**
 * Paths that must never reach a log line. Tool arguments, tokens and secrets are never logged
 * on purpose; the redaction is a second net should a future change pass one in by mistake.
 */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.token',
  '*.subjectToken',
  '*.args',
  '*.secret',
  '*.password',
  'token',
  'subjectToken',
  'args',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'grant-broker' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };

/**
 * Writes records, each already a JSON object's text, as JSON lines where `log` writes, in pino's
 * line shape (`level` 30, `time`, the logger's bindings, the record's members, `msg`), in one write
 * for all of them. For an audit stream whose records are large, frequent and already masked
 * (decision events): pino's per-record serialisation and redaction walk were about a tenth of a
 * broker check's CPU, and one write per batch replaces a system call per record.
 */
export function jsonLineWriter(log: Logger, msg: string): (records: readonly string[]) => void {
  const stream = (log as unknown as Record<symbol, { write(text: string): unknown }>)[pino.symbols.streamSym]!;
  const bindings = JSON.stringify(log.bindings()).slice(1, -1);
  const head = `{"level":30,"time":`;
  const tail = `,"msg":${JSON.stringify(msg)}}\n`;
  return (records) => {
    if (records.length === 0) return;
    const time = `${head}${JSON.stringify(new Date().toISOString())}${bindings ? `,${bindings}` : ''}`;
    let text = '';
    for (const record of records) {
      const members = record.slice(1, -1);
      text += `${time}${members ? `,${members}` : ''}${tail}`;
    }
    stream.write(text);
  };
}
