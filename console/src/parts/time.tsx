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

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>never</span>;
  return (
    <time dateTime={iso} title={iso}>
      {relative(iso)}
    </time>
  );
}
