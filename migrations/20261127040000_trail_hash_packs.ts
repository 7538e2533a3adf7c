import type { Knex } from 'knex';

/**
 * Packs of the trail tree's stored hashes: 256 consecutive hashes of one level (level 8 and up),
 * concatenated (8 KB), where one row a hash would cost ~120 bytes of tuple header and index entry
 * to keep 32. The maintenance job moves complete groups lying before the live days here
 * (repositories/tree.ts packHashes); readers take a hash missing from trail_hashes from its pack.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table trail_hash_packs (
      level smallint not null,
      first_idx bigint not null,
      hashes bytea not null,
      primary key (level, first_idx),
      check (first_idx % 256 = 0 and octet_length(hashes) = 8192)
    )`);
  // Already-compressed random bytes: stored inline-or-toasted without a futile compression attempt.
  await knex.raw('alter table trail_hash_packs alter column hashes set storage external');
}

export async function down(knex: Knex): Promise<void> {
  // The packed hashes go back to one row each before the table goes.
  await knex.raw(`
    insert into trail_hashes (level, idx, hash)
    select p.level, p.first_idx + i, substring(p.hashes from i * 32 + 1 for 32)
      from trail_hash_packs p cross join generate_series(0, 255) as i
    on conflict do nothing`);
  await knex.raw('drop table trail_hash_packs');
}
