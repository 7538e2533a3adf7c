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
