import type { MouseEvent, ReactNode } from 'react';
import { href, navigate } from '../router';

/** An ordinary link (open in a new tab, copy) that the console follows without a reload. */
export function Link({ to, children, current }: { to: string; children: ReactNode; current?: boolean }) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={href(to)} onClick={follow} aria-current={current ? 'page' : undefined}>
      {children}
    </a>
  );
}
