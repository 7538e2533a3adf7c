import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { EXIT } from './failure';
import { parseDayProofs, verifyArchive } from './trail-archive';
import { leafHash, openCheckpoint, outcomeLeaf, recordLeaf, verifyConsistency, verifyInclusion } from './trail-proofs';

/**
 * `grantctl trail verify` and `trail consistency`: an auditor's checks, offline, with the verifier
 * key pinned in a file (`GET /api/trail/key`). 0: proven; 1: not proven (named on stderr); 2: a
 * file that cannot be read as what it should be.
 */
export function trailCommands(program: Command): void {
  const trail = program.command('trail').description("prove the call trail offline, holding only the trail's public key");
  trail
    .command('verify')
    .description('is this call record in the tree of this signed checkpoint?')
    .requiredOption('--key <file>', 'the verifier key (GET /api/trail/key)')
    .requiredOption('--checkpoint <file>', 'a signed checkpoint (GET /api/trail/checkpoint)')
    .requiredOption('--record <file>', 'the call record as the API reads it (JSON)')
    .requiredOption('--proof <file>', "its inclusion proof, or its outcome's (GET /api/trail/proofs/inclusion[?leaf=outcome])")
    .action((options: { key: string; checkpoint: string; record: string; proof: string }) => {
      const key = readText(options.key);
      const record = readJson(options.record) as Record<string, unknown>;
      const proof = readJson(options.proof) as {
        leafIndex?: unknown;
        treeSize?: unknown;
        hashes?: unknown;
        code?: unknown;
        detail?: unknown;
      };
      // The proof of the record's leaf, or (GET …/inclusion?leaf=outcome) of its outcome's.
      const ofOutcome = typeof record.outcomeLeafIndex === 'number' && proof.leafIndex === record.outcomeLeafIndex;
      const index = ofOutcome ? record.outcomeLeafIndex : record.leafIndex;
      const named = `call ${String(record.id)}${ofOutcome ? "'s outcome" : ''} at leaf ${String(index)}`;
      const checkpoint = opened(readText(options.checkpoint), key);
      const refused = refusal(proof);
      if (refused) return finish(false, '', `${named} is not proven in the checkpoint of size ${checkpoint.size}: ${refused}`);
      const leaf = ofOutcome ? outcomeLeaf(record) : recordLeaf(record);
      const proven =
        typeof index === 'number' &&
        proof.leafIndex === index &&
        proof.treeSize === checkpoint.size &&
        verifyInclusion(index, checkpoint.size, leafHash(leaf), hashesOf(proof.hashes), checkpoint.root);
      finish(
        proven,
        `${named} is in the checkpoint of size ${checkpoint.size}`,
        `${named} is not proven in the checkpoint of size ${checkpoint.size}`,
      );
    });
  trail
    .command('consistency')
    .description("does the newer checkpoint's tree extend the older one's?")
    .requiredOption('--key <file>', 'the verifier key (GET /api/trail/key)')
    .requiredOption('--old <file>', 'the older signed checkpoint, as kept')
    .requiredOption('--new <file>', 'the newer signed checkpoint')
    .requiredOption('--proof <file>', 'the consistency proof (GET /api/trail/proofs/consistency?from=OLD&to=NEW)')
    .action((options: { key: string; old: string; new: string; proof: string }) => {
      const key = readText(options.key);
      const [older, newer] = [opened(readText(options.old), key), opened(readText(options.new), key)];
      const proof = readJson(options.proof) as { hashes?: unknown; code?: unknown; detail?: unknown };
      const sizes = `size ${older.size} to size ${newer.size}`;
      if (older.size > newer.size) finish(false, '', `rollback: the newer checkpoint is smaller (${sizes})`);
      const refused = refusal(proof);
      if (refused) return finish(false, '', `not proven consistent from ${sizes}: ${refused}`);
      finish(verifyConsistency(older, newer, hashesOf(proof.hashes)), `consistent from ${sizes}`, `not consistent from ${sizes}`);
    });
  trail
    .command('verify-archive')
    .description('is every record of this exported day in the tree of its signed checkpoint, and nothing else?')
    .requiredOption('--key <file>', 'the verifier key (GET /api/trail/key)')
    .requiredOption('--archive <file>', 'the exported day (trail export: gzip JSON lines)')
    .option('--checkpoint <file>', 'the signed checkpoint (default: <archive>.checkpoint)')
    .option('--proofs <file>', 'the leaf and border hashes (default: <archive>.proofs)')
    .action(async (options: { key: string; archive: string; checkpoint?: string; proofs?: string }) => {
      const key = readText(options.key);
      const checkpoint = opened(readText(options.checkpoint ?? `${options.archive}.checkpoint`), key);
      let proofs;
      try {
        proofs = parseDayProofs(readText(options.proofs ?? `${options.archive}.proofs`));
      } catch (error) {
        return unreadable(`the proofs: ${(error as Error).message}`);
      }
      const verdict = await verifyArchive(options.archive, proofs, checkpoint).catch((error: Error) =>
        unreadable(`${options.archive}: ${error.message}`),
      );
      if (verdict.ok) {
        finish(true, `${verdict.records} records (${verdict.leaves} leaves) are in the checkpoint of size ${checkpoint.size}`, '');
        return;
      }
      const at = verdict.leafIndex !== undefined && verdict.leafIndex >= 0 ? ` at leaf ${verdict.leafIndex}` : '';
      const who = verdict.callId ? `call ${verdict.callId}${at}` : `leaf ${verdict.leafIndex ?? '?'}`;
      finish(false, '', verdict.leafIndex === undefined && !verdict.callId ? `not proven: ${verdict.why}` : `${who} ${verdict.why}`);
    });
}

function finish(proven: boolean, yes: string, no: string): void {
  if (proven) {
    process.stdout.write(`${yes}\n`);
    return;
  }
  process.stderr.write(`${no}\n`);
  process.exit(EXIT.refused);
}

function opened(note: string, key: string) {
  try {
    return openCheckpoint(note, key);
  } catch (error) {
    process.stderr.write(`checkpoint refused: ${(error as Error).message}\n`);
    return process.exit(EXIT.refused);
  }
}

/**
 * The service's problem document saved in place of a proof (`curl -s … > proof.json` keeps an error
 * answer too, e.g. 409 `not_provable` once a leaf has no record): no proof, so not proven, and why.
 */
function refusal(proof: { hashes?: unknown; code?: unknown; detail?: unknown }): string | undefined {
  if (proof.hashes !== undefined || typeof proof.code !== 'string') return undefined;
  return `the service gave no proof (${proof.code}${typeof proof.detail === 'string' ? `: ${proof.detail}` : ''})`;
}

function hashesOf(hashes: unknown): Buffer[] {
  if (!Array.isArray(hashes) || hashes.some((hash) => typeof hash !== 'string')) unreadable('the proof holds no hashes');
  return (hashes as string[]).map((hash) => Buffer.from(hash, 'base64'));
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    return unreadable(`${file}: ${(error as Error).message}`);
  }
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readText(file));
  } catch {
    return unreadable(`${file} is not JSON`);
  }
}

function unreadable(why: string): never {
  process.stderr.write(`${why}\n`);
  process.exit(EXIT.unavailable);
}
