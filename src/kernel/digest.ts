import { hash } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';

/** `sha256:<hex>` of the RFC 8785 canonical JSON of a value: stable under key reordering. */
export function digestOf(value: unknown): string {
  return `sha256:${hash('sha256', canonicalize(value), 'hex')}`;
}
