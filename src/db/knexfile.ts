import { loadConfig } from '../config';
import { knexConfig } from './knex-config';

// Entry point of the knex CLI: `npm run migrate` reads DATABASE_URL like the service does.
module.exports = knexConfig(loadConfig().DATABASE_URL);
