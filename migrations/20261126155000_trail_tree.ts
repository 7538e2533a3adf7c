import type { Knex } from 'knex';

/**
 * The call trail as a Merkle tree (RFC 9162, docs/trail-verification.md).
 *
 * `trail_tree` is the tree's head, one row: its size and its frontier (the hashes of the complete
 * subtrees its size decomposes into, largest first), which is all an append needs.
 * `trail_hashes` keeps every complete subtree's hash by (level, index), as Go's checksum database
 * stores them: a proof reads O(log n) of them by key, and none ever changes once written.
 * `trail_append(leaf hashes)` appends in the caller's statement: it locks the head row, so
 * concurrent appenders (any number of replicas) queue on it and the leaves take the order of their
 * commits; the tree cannot fork. The lock is held from the call to the commit of that statement only.
 * `trail_checkpoints` keeps every signed checkpoint (the note as signed), by size.
 */
const APPEND = `
create function trail_append(leaves bytea[]) returns bigint language plpgsql as $$
declare
  n bigint;
  f bytea[];
  first bigint;
  h bytea;
  lvl smallint;
  idx bigint;
  levels smallint[] := '{}';
  indices bigint[] := '{}';
  hashes bytea[] := '{}';
begin
  select size, frontier into n, f from trail_tree where id = 1 for update;
  first := n;
  foreach h in array leaves loop
    levels := levels || 0::smallint; indices := indices || n; hashes := hashes || h;
    lvl := 0;
    idx := n;
    -- A right child completes its parent: fold it with the frontier's last (its left sibling).
    while idx & 1 = 1 loop
      h := sha256('\\x01'::bytea || f[cardinality(f)] || h);
      f := f[1:cardinality(f) - 1];
      lvl := lvl + 1;
      idx := idx >> 1;
      levels := levels || lvl; indices := indices || idx; hashes := hashes || h;
    end loop;
    f := f || h;
    n := n + 1;
  end loop;
  insert into trail_hashes (level, idx, hash) select * from unnest(levels, indices, hashes);
  update trail_tree set size = n, frontier = f where id = 1;
  return first;
end $$`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table trail_tree (id smallint primary key check (id = 1), size bigint not null, frontier bytea[] not null)`);
  await knex.raw(`insert into trail_tree (id, size, frontier) values (1, 0, '{}')`);
  await knex.raw(`create table trail_hashes (level smallint not null, idx bigint not null, hash bytea not null, primary key (level, idx))`);
  await knex.raw(
    `create table trail_checkpoints (size bigint primary key, note text not null, signed_at timestamptz not null default now())`,
  );
  await knex.raw(APPEND);
  for (const table of ['call_records', 'held_call_records']) {
    await knex.raw(`alter table ${table} add column leaf_index bigint, add column outcome_leaf_index bigint`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['call_records', 'held_call_records']) {
    await knex.raw(`alter table ${table} drop column if exists leaf_index, drop column if exists outcome_leaf_index`);
  }
  await knex.raw('drop function if exists trail_append(bytea[])');
  await knex.raw('drop table if exists trail_checkpoints, trail_hashes, trail_tree');
}
