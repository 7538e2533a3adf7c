import type { Logger } from '../../kernel/log';
import type { Database } from '../../db/database';
import { keepLeafLookupCurrent } from '../repositories/days';
import { latestCheckpoint, saveCheckpoint, treeHead } from '../repositories/tree';
import { rootOfFrontier } from './leaves';
import type { TrailSigner } from './note';

/**
 * Signs a checkpoint of the trail's tree whenever it has grown, every `intervalMs`: so a record is
 * in a signed checkpoint at most that long after its answer. Every replica runs one; they sign the
 * same tree (the head is one row), and the first checkpoint of a size is kept.
 */
export class Checkpointer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: { db: Database; signer: TrailSigner; intervalMs: number; log: Logger }) {}

  start(): void {
    this.timer ??= setInterval(() => {
      this.running ??= this.signNow()
        .then(() => undefined)
        .catch((error: unknown) => this.deps.log.warn({ err: { message: (error as Error).message } }, 'trail checkpoint not signed'))
        .finally(() => (this.running = undefined));
    }, this.deps.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Signs the tree as it is now if no checkpoint covers it yet: the checkpoint's size. */
  async signNow(): Promise<number> {
    const head = await treeHead(this.deps.db);
    const latest = await latestCheckpoint(this.deps.db);
    if (latest && latest.size >= head.size) return latest.size;
    const note = this.deps.signer.sign(head.size, rootOfFrontier(head.frontier));
    await saveCheckpoint(this.deps.db, { size: head.size, note });
    // Proofs against it then find the records it covers by their leaves' BRIN indexes, not by reading every new page.
    await keepLeafLookupCurrent(this.deps.db).catch((error: unknown) =>
      this.deps.log.debug({ err: { message: (error as Error).message } }, 'call trail leaf lookup not brought up to date'),
    );
    return head.size;
  }
}
