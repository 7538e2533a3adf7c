import type { Knex } from 'knex';
import type { Database } from '../../db/database';
import type { ShapeMemo } from '../shape-memo';
import { PRINCIPAL_KIND_CODES, type PrincipalKind } from './codec';

type Queryable = Database | Knex.Transaction;

/**
 * `call_record_shapes`: each (tool, principal) pair a call record names, stored once and named by
 * a number in every record (`call_records.shape`). A trail repeats the same few tools and
 * principals millions of times; this is what keeps a record small. Codes are never deleted or
 * reused, so a code once read stays right: a memo (src/speedups/memo.ts) may keep the ones
 * committed.
 */

export interface Shape {
  tool: string;
  principal_kind: PrincipalKind;
  principal_id: string;
}

const keyOf = (shape: Shape) => `${shape.principal_kind}\u0000${shape.principal_id}\u0000${shape.tool}`;

/**
 * The code of each row's shape, in order. Shapes not seen yet are made (or found) in one
 * statement; `do update` makes it answer the existing row too, so a shape another replica made a
 * moment ago is found, never missed. With a memo, the codes it keeps are taken from it and the new
 * ones kept: only outside a unit of work, whose rollback would take the shape with it.
 */
export async function shapeCodes(db: Queryable, shapes: readonly Shape[], memo?: ShapeMemo): Promise<number[]> {
  const known = (shape: Shape) => memo?.get(keyOf(shape));
  const missing = new Map<string, Shape>();
  for (const shape of shapes) if (known(shape) === undefined) missing.set(keyOf(shape), shape);
  const made = new Map<string, number>();
  if (missing.size > 0) {
    // In one order everywhere, so two writers making the same shapes never wait on each other in a circle.
    const sorted = [...missing.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, shape]) => shape);
    const { rows } = await db.raw<{ rows: Array<{ code: number; tool: string; principal_kind: number; principal_id: string }> }>(
      `insert into call_record_shapes (tool, principal_kind, principal_id)
       select * from unnest(?::text[], ?::smallint[], ?::text[])
       on conflict (tool, principal_kind, principal_id) do update set tool = excluded.tool
       returning code, tool, principal_kind, principal_id`,
      [sorted.map((s) => s.tool), sorted.map((s) => PRINCIPAL_KIND_CODES[s.principal_kind]), sorted.map((s) => s.principal_id)] as never,
    );
    const kinds = Object.keys(PRINCIPAL_KIND_CODES) as PrincipalKind[];
    for (const row of rows)
      made.set(keyOf({ tool: row.tool, principal_kind: kinds[row.principal_kind]!, principal_id: row.principal_id }), row.code);
    memo?.keep(made);
  }
  return shapes.map((shape) => {
    const code = known(shape) ?? made.get(keyOf(shape));
    if (code === undefined) throw new Error('a call record shape was not made');
    return code;
  });
}
