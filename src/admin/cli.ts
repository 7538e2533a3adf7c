import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig, publicBaseUrl } from '../config';
import { createLogger } from '../kernel/log';
import { buildService } from '../composition';
import { registerBroker, revokeBrokerTokens } from './brokers';
import { putBrokerRoutes } from './broker-routes';
import { consoleLink } from './console-link';
import { bindInstallation } from '../github-apps/bindings';
import { ApiError } from '../kernel/errors';
import { demoCurlLines, seedDemoWorld, signDemoTokens } from './demo';
import { demoWorldFile, keepDemoWorld, keptDemoWorld } from './demo-world-file';
import { evaluatePolicyFile, UsageError } from './policy-eval';
import { policyImpact } from './policy-impact';
import { trailCommand } from './trail';
import { registerGatewayResource } from '../oauth/resources';

const USAGE = `usage: npm run admin -- <command>
  broker register --name NAME   register a broker; prints its id and token (shown once)
  broker revoke --id BROKER_ID  revoke every token of a broker
  gateway register --broker BROKER_ID --resource URL
                                let MCP hosts get OAuth tokens for a gateway of that broker
                                (its public URL ending in /mcp); idempotent, effective at once
        return 2;
      }
    }
  broker routes --id BROKER_ID --file routes.json
                                replace the broker's route map for Envoy external
                                authorization (as PUT /api/brokers/:brokerId/routes)
  github-app bind --app NAME --installation ID --owner USER_ID
                                bind an installation of a GITHUB_APPS app to the one user who
                                may connect it (its connections then mint per-call tokens)
  demo [--json]                 seed a demo world; prints credentials and curl lines to paste
                                (--json: the world the last demo seeded, as one JSON object;
                                a new one only when there is none in this database)
  console-link --as owner|member | --user USER_ID
                                print a one-time sign-in link to the console (10 min, single use;
                                development: the service must verify HS256 tokens)
  policy eval --entrypoint broker/check/decision --input FILE [--module PATH]
                                evaluate the built policy module (POLICY_WASM_PATH) on an input
  policy impact --bundle CANDIDATE --log FILE [--max-changes N]
                                replay logged decisions through a candidate bundle (or .wasm);
                                prints the decisions that would change, by path and reason, and
                                the allow→deny and deny→allow counts; exits 1 past N changes
  trail hold --grant GRANT_ID   keep that grant tree's call records past retention
  trail release --grant GRANT_ID
                                end the hold (its records past retention go)
  trail export --day YYYY-MM-DD --out FILE
                                write one UTC day of the call trail as gzip JSON lines, and
                                FILE.sha256; prints the record count and the SHA-256`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      broker: { type: 'string' },
      resource: { type: 'string' },
      id: { type: 'string' },
      json: { type: 'boolean', default: false },
      entrypoint: { type: 'string' },
      input: { type: 'string' },
      module: { type: 'string' },
      bundle: { type: 'string' },
      log: { type: 'string' },
      as: { type: 'string' },
      user: { type: 'string' },
      app: { type: 'string' },
      installation: { type: 'string' },
      owner: { type: 'string' },
      'max-changes': { type: 'string' },
      grant: { type: 'string' },
      day: { type: 'string' },
      out: { type: 'string' },
      file: { type: 'string' },
    },
  });
  const config = loadConfig();
  if (positionals[0] === 'policy' && positionals[1] === 'impact' && values.bundle && values.log) {
    try {
      const limit = values['max-changes'];
      if (limit !== undefined && !/^\d{1,9}$/.test(limit)) throw new UsageError('--max-changes takes a whole number of decisions');
      const report = await policyImpact({ candidate: values.bundle, logFile: values.log });
      console.log(JSON.stringify(report, null, 2));
      if (limit !== undefined && report.changed > Number(limit)) {
        console.error(`${report.changed} decisions would change, more than --max-changes ${limit}`);
        return 1;
      }
      return 0;
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      console.error(error.message);
      return 2;
    }
  }
  if (positionals[0] === 'policy' && positionals[1] === 'eval' && values.entrypoint && values.input) {
    try {
      const entrypoint = values.entrypoint.endsWith('/decision') ? values.entrypoint : `${values.entrypoint}/decision`;
      const answer = await evaluatePolicyFile({
        entrypoint,
        inputFile: values.input,
        modulePath: values.module ?? config.POLICY_WASM_PATH,
      });
      console.log(JSON.stringify(answer, null, 2));
      return 0;
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      console.error(error.message);
      return 2;
    }
  }
  const service = await buildService(
    { ...config, POLICY_WATCH: false, DECISION_LOG: 'off' },
    {
      // Logs go to stderr: stdout carries only what the command prints (`demo --json` is parsed).
      logger: createLogger('warn', pino.destination(2)),
      migrate: true,
    },
  );
  try {
    const [command, sub] = positionals;
    if (command === 'broker' && sub === 'register' && values.name) {
      const broker = await registerBroker(service.infrastructure.db, values.name);
      console.log(JSON.stringify(broker));
      return 0;
    }
    if (command === 'broker' && sub === 'revoke' && values.id) {
      // Brokers' tokens are cached with the broker check's facts: make every replica re-verify.
      const brokerId = values.id;
      const revoked = await service.infrastructure.invalidation.change(async (trx, touch) => {
        await touch('broker', brokerId);
        return revokeBrokerTokens(trx, brokerId);
      });
      console.log(JSON.stringify({ revoked }));
      return 0;
    }
    if (command === 'gateway' && sub === 'register' && values.broker && values.resource) {
      try {
        console.log(JSON.stringify(await registerGatewayResource(service.infrastructure.db, values.broker, values.resource)));
        return 0;
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        console.error(error.detail ?? error.message);
        return 2;
      }
    }
    if (command === 'broker' && sub === 'routes' && values.id && values.file) {
      try {
        console.log(JSON.stringify(await putBrokerRoutes(service.infrastructure.db, values.id, values.file, new Date())));
        return 0;
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        console.error(error.message);
        return 2;
      }
    }
    if (command === 'console-link') {
      const link = await consoleLink(service.infrastructure.consoleLinks, config, { as: values.as, user: values.user });
      console.log(link);
      return 0;
    }
    if (command === 'github-app' && sub === 'bind' && values.app && values.installation && values.owner) {
      if (!/^[1-9][0-9]{0,19}$/.test(values.installation)) {
        console.error("--installation is GitHub's installation id, in digits");
        return 2;
      }
      try {
        const { db, policy } = service.infrastructure;
        const bound = await bindInstallation(
          { db, policy, apps: config.githubApps },
          { app: values.app, externalInstallationId: values.installation, ownerId: values.owner },
        );
        console.log(JSON.stringify(bound));
        return 0;
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        console.error(`${error.code}: ${error.message}`);
        return 1;
      }
    }
    if (command === 'trail') {
      const answer = await trailCommand(service.infrastructure.db, sub, values);
      if (answer === undefined) {
        console.error(USAGE);
        return 2;
      }
      console.log(JSON.stringify(answer));
      return 0;
    }
    if (command === 'demo') {
      const { db } = service.infrastructure;
      const file = demoWorldFile(config.DEVELOPMENT_STATE_DIR);
      const kept = values.json ? await keptDemoWorld(file, service.services, db, Date.now()) : undefined;
      const world = kept ? signDemoTokens(kept, config) : await seedDemoWorld(service.services, db, config);
      if (!kept) keepDemoWorld(file, world);
      await service.infrastructure.consoleLinks.rememberDemoUsers({ owner: world.owner.userId, member: world.member.userId });
      if (values.json) {
        console.log(JSON.stringify(world));
      } else {
        console.log(`Demo world seeded (again as JSON: npm run admin -- demo --json). Credentials:\n${JSON.stringify(world, null, 2)}\n`);
        console.log(demoCurlLines(world, publicBaseUrl(config)).join('\n'));
      }
      return 0;
    }
    console.error(USAGE);
    return 2;
  } finally {
    await service.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(error.message);
      process.exit(2);
    }
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
