import { useState } from 'react';

/** An id, shortened for reading, copied whole with one click (its full text is the button's name). */
export function CopyId({ id }: { id: string }) {
  const [copied, setCopied] = useState(false);
  const short = id.length > 14 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
  const copy = () => {
    void navigator.clipboard?.writeText(id).then(
      () => {
        setCopied(true);
        window.setTimeout(() => setCopied(false), 1500);
      },
      () => undefined,
    );
  };
  return (
    <button type="button" className="copy-id" onClick={copy} aria-label={`Copy id ${id}`} title={id}>
      <code>{short}</code> <span aria-hidden="true">{copied ? 'copied' : 'copy'}</span>
      {copied && <span className="sr-only"> copied</span>}
    </button>
  );
}
