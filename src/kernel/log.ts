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
 * Writes records, each already the JSON text of an object (and already masked: decision events),
 * as `msg` lines of `log` at level info, in pino's line shape (`level`, `time`, the logger's
 * bindings, the record's members, `msg`).
 */
export type LineWriter = (records: readonly string[]) => void;

export type LineWriterFactory = (log: Logger, msg: string) => LineWriter;

/**
 * The plain line writer: each record through pino's own API. Redaction is off for these lines, as
 * their records are masked by their writer (a path such as `*.args` would otherwise replace the
 * mask that says what was masked).
 */
export const plainLineWriter: LineWriterFactory = (log, msg) => {
  const unredacted = log.child({}, { redact: { paths: [] } });
  return (records) => {
    for (const record of records) unredacted.info(JSON.parse(record) as object, msg);
  };
};
