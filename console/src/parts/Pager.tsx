/** "Newer" / "Older" over cursor pages: the cursors of the pages before this one are remembered. */
export function Pager({
  cursors,
  next,
  onPage,
  label,
}: {
  cursors: string[];
  next: string | null;
  onPage: (cursors: string[]) => void;
  label: string;
}) {
  if (cursors.length === 0 && !next) return null;
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" disabled={cursors.length === 0} onClick={() => onPage(cursors.slice(0, -1))}>
        Newer
      </button>
      <span>Page {cursors.length + 1}</span>
      <button type="button" disabled={!next} onClick={() => next && onPage([...cursors, next])}>
        Older
      </button>
    </nav>
  );
}
