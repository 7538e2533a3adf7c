import type { Knex } from 'knex';

/**
 * `trail_outcome_leaves_match(appended, completed)`: the completion of outcomes (repositories/
 * call-outcomes.ts) appends one leaf per record it locked pending and completes only records still
 * pending; this raises when the two counts differ, so the statement (leaves and completions) rolls
 * back whole instead of leaving a leaf that no record rebuilds, which would make every proof
 * through its block fail. Answers true, for use in the statement's final filter.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function trail_outcome_leaves_match(appended bigint, completed bigint) returns boolean language plpgsql as $$
    begin
      if appended is distinct from completed then
        raise exception 'trail: % outcome leaves appended for % records completed', appended, completed using errcode = 'P0001';
      end if;
      return true;
    end $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function if exists trail_outcome_leaves_match(bigint, bigint)');
}
