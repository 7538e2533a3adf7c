/**
 * The wall-clock time of an instant in one IANA time zone, for rules such as "write tools only
 * in working hours": the policy's WASM target has neither a clock nor a zone database, so the
 * service works it out (daylight saving included) and hands it over as a fact.
 */
export interface LocalTime {
  time_zone: string;
  /** ISO 8601: 1 is Monday, 7 is Sunday. */
  weekday: number;
  hour: number;
  minute: number;
}

const WEEKDAYS: Record<string, number> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 };

/** Throws a RangeError for a zone Intl does not know: config validation uses that. */
export function localTimeIn(timeZone: string): (nowMs: number) => LocalTime {
  const format = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: 'numeric', minute: 'numeric', hourCycle: 'h23' });
  // One formatting per minute: a broker check asks thousands of times a second.
  let cachedMinute = Number.NaN;
  let cached: LocalTime | undefined;
  return (nowMs) => {
    const minute = Math.floor(nowMs / 60_000);
    if (minute === cachedMinute && cached) return cached;
    const parts = Object.fromEntries(format.formatToParts(nowMs).map((part) => [part.type, part.value]));
    cached = {
      time_zone: timeZone,
      weekday: WEEKDAYS[parts.weekday ?? ''] ?? 1,
      hour: Number(parts.hour),
      minute: Number(parts.minute),
    };
    cachedMinute = minute;
    return cached;
  };
}
