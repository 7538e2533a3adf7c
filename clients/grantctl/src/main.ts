import { Command } from 'commander';
import { activityCommands } from './activity';
import { grantCommands } from './grants';
import { fail } from './failure';
import { podAndConnectionCommands } from './pods-and-connections';
import { policyCommands } from './policy';
import { trailCommands } from './trail';

/**
 * grantctl: GRANT_BROKER_URL says where; GRANT_BROKER_TOKEN (a person's) and
 * GRANT_BROKER_AGENT_TOKEN (an installed agent's) say as whom, each command naming the one it uses.
 * Every command takes --json (stdout is then exactly the API's body); a refusal exits 1, trouble 2.
 */
const program = new Command('grantctl')
  .description('The grant broker from the command line')
  .showHelpAfterError()
  .addHelpText(
    'after',
    '\nEnvironment: GRANT_BROKER_URL (default http://127.0.0.1:8080), GRANT_BROKER_TOKEN (a person), ' +
      'GRANT_BROKER_AGENT_TOKEN (an installed agent: grants attenuate, pods context, and pods list when set; --as person lists yours).\n' +
      'Exit codes: 0 done, 1 refused (the problem document on stderr), 2 service unreachable or failing.',
  );
grantCommands(program);
activityCommands(program);
podAndConnectionCommands(program);
policyCommands(program);
trailCommands(program);

program.parseAsync(process.argv).catch(fail);
