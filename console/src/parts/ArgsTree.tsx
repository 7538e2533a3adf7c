import { useState, type ReactNode } from 'react';

/** Shown at first of a long string; the rest on request, so a 60 KB value cannot bury the page. */
const SHOWN_CHARS = 2000;
const MAX_DEPTH = 32;

/**
 * Characters that change how text reads without being seen: C0/C1 controls, zero-width marks,
 * bidirectional embeddings, overrides and isolates (an RTL override can make `evil.sh` read
 * `hs.live`), the BOM, and lone surrogate halves.
 */
const INVISIBLE =
  // eslint-disable-next-line no-control-regex -- finding control characters is what this is for
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const codePoint = (char: string) => `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * A string as text with every invisible character shown as a visible, labelled mark. React puts
 * it in the page as text nodes: markup in it stays characters on screen.
 */
export function VisibleText({ text }: { text: string }) {
  const parts: ReactNode[] = [];
  let last = 0;
  for (const found of text.matchAll(INVISIBLE)) {
    const at = found.index;
    if (at > last) parts.push(text.slice(last, at));
    const name = codePoint(found[0]);
    parts.push(
      <abbr key={at} className="invisible" title={`invisible character ${name}`}>
        {`⟨${name}⟩`}
      </abbr>,
    );
    last = at + found[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return <>{parts}</>;
}

function LongString({ value }: { value: string }) {
  const [all, setAll] = useState(false);
  if (value.length <= SHOWN_CHARS) {
    return (
      <span className="string" dir="ltr">
        “<VisibleText text={value} />”
      </span>
    );
  }
  return (
    <span className="string long" dir="ltr">
      <span className="scroll">
        “<VisibleText text={all ? value : value.slice(0, SHOWN_CHARS)} />
        {all ? '”' : '…'}
      </span>
      <button type="button" className="link" onClick={() => setAll(!all)} aria-expanded={all}>
        {all ? 'Show less' : `Show all ${value.length.toLocaleString('en')} characters`}
      </button>
    </span>
  );
}

function Value({ value, depth }: { value: unknown; depth: number }) {
  if (value === null) return <span className="literal">null</span>;
  if (typeof value === 'string') return <LongString value={value} />;
  if (typeof value === 'number' || typeof value === 'boolean') return <span className="literal">{String(value)}</span>;
  if (depth >= MAX_DEPTH) return <span className="literal">… nested deeper than {MAX_DEPTH} levels</span>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span className="literal">[ ]</span>;
    return (
      <ol className="tree" start={0}>
        {value.map((item, i) => (
          <li key={i}>
            <span className="key">{i}</span> <Value value={item} depth={depth + 1} />
          </li>
        ))}
      </ol>
    );
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return <span className="literal">{'{ }'}</span>;
    return (
      <ul className="tree">
        {entries.map(([key, item]) => (
          <li key={key}>
            <span className="key">
              <VisibleText text={key} />
            </span>{' '}
            <Value value={item} depth={depth + 1} />
          </li>
        ))}
      </ul>
    );
  }
  return <span className="literal">{String(value)}</span>;
}

/** A call's arguments as a tree a person reads: keys, values, nothing interpreted. */
export function ArgsTree({ args, label }: { args: unknown; label: string }) {
  return (
    <div className="args" role="group" aria-label={label}>
      <Value value={args} depth={0} />
    </div>
  );
}
