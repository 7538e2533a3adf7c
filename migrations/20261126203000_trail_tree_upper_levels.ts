import type { Knex } from 'knex';

/**
 * The trail's tree keeps only the hashes of levels 8 and up (one per 256 leaves, as a C2SP tile's
 * height): a node below is rebuilt, when a proof needs it, from the leaves of its 256-leaf block,
 * and a leaf from its record (contract §22: the record alone rebuilds it), found by the BRIN
 * indexes on the leaf index columns made here (rows are written in leaf order). What a retained
 * record costs the tree is then its two index columns and a fraction of a byte.
 * When a day is dropped, the maintenance job first keeps the hashes of the largest complete
 * subtrees below level 8 that hold none of the leaves kept (O(log n) at each edge of the day, a
 * few around each held record): proofs that need the dropped leaves read those instead.
 *
 * Existing data: level 0 to 7 hashes are deleted for every block whose leaves all have their
 * records (rebuilt from them), or none (the block's level-8 hash stands for it). A block with some
 * records gone (a day already dropped) keeps them all: a few blocks, at most 255 rows each.
 * trail_append itself stays O(log n) in the records' statement, under the head row's lock.
 */
const LOW = 8;

const append = (stored: string) => `
create or replace function trail_append(leaves bytea[]) returns bigint language plpgsql as $$
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
    ${stored === 'all' ? 'levels := levels || 0::smallint; indices := indices || n; hashes := hashes || h;' : ''}
    lvl := 0;
    idx := n;
    -- A right child completes its parent: fold it with the frontier's last (its left sibling).
    while idx & 1 = 1 loop
      h := sha256('\\x01'::bytea || f[cardinality(f)] || h);
      f := f[1:cardinality(f) - 1];
      lvl := lvl + 1;
      idx := idx >> 1;
      ${stored === 'all' ? '' : `if lvl >= ${LOW} then`}
      levels := levels || lvl; indices := indices || idx; hashes := hashes || h;
      ${stored === 'all' ? '' : 'end if;'}
    end loop;
    f := f || h;
    n := n + 1;
  end loop;
  insert into trail_hashes (level, idx, hash) select * from unnest(levels, indices, hashes);
  update trail_tree set size = n, frontier = f where id = 1;
  return first;
end $$`;

export async function up(knex: Knex): Promise<void> {
  for (const table of ['call_records', 'held_call_records']) {
    for (const column of ['leaf_index', 'outcome_leaf_index']) {
      await knex.raw(
        `create index ${table}_${column}_brin on ${table} using brin (${column}) with (pages_per_range = 16, autosummarize = on)`,
      );
    }
  }
  await knex.raw(append('upper'));
  await knex.raw(`
    with present as (
      select leaf_index as leaf from call_records where leaf_index is not null
      union select outcome_leaf_index from call_records where outcome_leaf_index is not null
      union select leaf_index from held_call_records where leaf_index is not null
      union select outcome_leaf_index from held_call_records where outcome_leaf_index is not null
    ), blocks as (select leaf >> ${LOW} as block, count(*) as present from present group by 1),
    size as (select size from trail_tree where id = 1),
    kept as (
      -- Blocks with some leaves present and some gone keep their lower hashes.
      select b.block from blocks b, size s where b.present < least(${1 << LOW}, s.size - (b.block << ${LOW}))
      union
      -- So does a right-edge block whose records are all gone (no level-8 hash stands for it).
      select s.size >> ${LOW} from size s where s.size % ${1 << LOW} <> 0 and not exists (select 1 from blocks b where b.block = s.size >> ${LOW})
    )
    delete from trail_hashes h where h.level < ${LOW} and (h.idx >> (${LOW} - h.level)) not in (select block from kept)`);
}

export async function down(knex: Knex): Promise<void> {
  // The lower levels are not written back: proofs needing them fail until the tree is rebuilt from the records.
  await knex.raw(append('all'));
  for (const table of ['call_records', 'held_call_records']) {
    for (const column of ['leaf_index', 'outcome_leaf_index']) await knex.raw(`drop index if exists ${table}_${column}_brin`);
  }
}
