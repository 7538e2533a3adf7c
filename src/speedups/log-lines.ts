/**
 * Speed-up: JSON lines written straight to the logger's destination.
 *
 * Trades: pino's public API for its internals (`pino.symbols.streamSym`, the only use of them), and
 * the logger's level and redaction for records that bring their own masking. In return, a batch of
 * records is one write to the destination instead of one pino call (serialisation, redaction walk,
 * write) per record: decision events are large, frequent and already JSON, so pino serialised each
 * a second time and the log made a system call per event.
 *
 * Off (SPEEDUPS=off): kernel/log.ts's plainLineWriter, one `log.info` per record.
 */
import pino from 'pino';
import type { LineWriterFactory } from '../kernel/log';

/**
 * Writes the records in pino's line shape (`level` 30, `time`, the logger's bindings, the record's
 * members, `msg`), all of them in one write.
 */
export const jsonLineWriter: LineWriterFactory = (log, msg) => {
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
};
