/** "in 12 min", "3 h ago": how far a time is from now, for a reader. */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const ms = Date.parse(iso) - now;
  const abs = Math.abs(ms);
  const [value, unit] =
    abs < 60_000
      ? [Math.round(abs / 1000), 's']
      : abs < 3_600_000
        ? [Math.round(abs / 60_000), 'min']
        : abs < 86_400_000
          ? [Math.round(abs / 3_600_000), 'h']
          : [Math.round(abs / 86_400_000), 'd'];
  return ms >= 0 ? `in ${value} ${unit}` : `${value} ${unit} ago`;
}

/** "26 Nov 2026, 14:05 UTC": the time itself. */
export function absolute(iso: string): string {
  return `${new Date(iso).toLocaleString('en-GB', { timeZone: 'UTC', dateStyle: 'medium', timeStyle: 'short' })} UTC`;
}

/**
 * A time as how long ago, and the time itself: a tooltip where a pointer can hover, written out
 * beside it where none can (a phone), and always there for a screen reader.
 */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>never</span>;
  const exact = absolute(iso);
  return (
    <time dateTime={iso} title={exact}>
      {relative(iso)}
      <span className="absolute-time"> ({exact})</span>
    </time>
  );
}
