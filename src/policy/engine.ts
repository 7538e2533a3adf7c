import { createHash, randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import type { Logger } from '../kernel/log';
import { DependencyUnavailableError } from '../kernel/dependency';
import { digestOf } from '../kernel/digest';
import type { OrgFindings } from '../kernel/decisions/org';
import { loggableResult, reportShadow } from './shadow';
import type { DecisionDefinition, DecisionInput, DecisionOutput } from '../kernel/decisions/catalogue';

/**
 * What a decision returns (CONTRACT §7), as its catalogue entry types it: `{allow, reasons}` and
 * the facts it derived (a grant's status and effective audience, say), so TypeScript never derives
 * them a second time; plus the id that names it in the decision log.
 */
export type Decided<D extends DecisionDefinition> = DecisionOutput<D> & { decisionId: string };

export interface PolicyEngineOptions {
  /** The compiled module. */
  path: string;
  log: Logger;
  decisionLog?: DecisionLogMode;
  /** Decisions a module must have to be loaded (the catalogue, for the service). */
  required?: readonly DecisionDefinition[];
  /** Production: load only a file owned by root or this process's user and writable by no one else. */
  requireTrustedFile?: boolean;
  /** Tests: refuse an input that its catalogue schema refuses (the TypeScript side drifted). */
  validateInputs?: boolean;
}

/** The policy cannot answer: callers fail closed (503), never allow. */
export class PolicyUnavailableError extends DependencyUnavailableError {}

export type DecisionLogMode = 'off' | 'deny' | 'all';

interface LoadedModule {
  policy: LoadedPolicy;
  revision: string;
  entrypoints: ReadonlySet<string>;
}

/**
 * The compiled Rego (one WASM module, one entrypoint per decision). Evaluation is synchronous
 * and in-process; a rebuilt module is picked up without a restart, and a broken one is refused
 * while the module already loaded keeps serving.
 */
export class PolicyEngine {
  private current: LoadedModule | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  /** The file as it was when last read: a poll that sees another file reloads. */
  private lastSeen = '';
  private reloading: Promise<boolean> = Promise.resolve(true);

  private readonly wasmPath: string;
  private readonly log: Logger;
  private readonly decisionLog: DecisionLogMode;
  private readonly requiredEntrypoints: readonly string[];
  private readonly requireTrustedFile: boolean;
  private readonly validateInputs: boolean;

  constructor(options: PolicyEngineOptions) {
    this.wasmPath = options.path;
    this.log = options.log;
    this.decisionLog = options.decisionLog ?? 'all';
    this.requiredEntrypoints = (options.required ?? []).map((decision) => decision.entrypoint);
    this.requireTrustedFile = options.requireTrustedFile ?? false;
    this.validateInputs = options.validateInputs ?? false;
  }

  get revision(): string | undefined {
    return this.current?.revision;
  }

  get ready(): boolean {
    return this.current !== undefined;
  }

  get entrypoints(): string[] {
    return [...(this.current?.entrypoints ?? [])].sort();
  }

  /**
   * Bytes of linear memory of the loaded module (for the soak and metrics). opa-wasm keeps its
   * WebAssembly.Memory on the untyped `mem` field; anything else reads as undefined. No
   * instanceof: the memory may come from another realm (jest's sandbox, say).
   */
  get wasmMemoryBytes(): number | undefined {
    const mem = (this.current?.policy as { mem?: { buffer?: { byteLength?: unknown } } } | undefined)?.mem;
    const bytes = mem?.buffer?.byteLength;
    return typeof bytes === 'number' ? bytes : undefined;
  }

  /**
   * Loads the module at wasmPath; on failure keeps what was loaded before and returns false.
   * Reloads run one after another, so a slow load of an older file can never replace a newer one.
   */
  reload(): Promise<boolean> {
    const next = this.reloading.then(() => this.load());
    this.reloading = next;
    return next;
  }

  private async load(): Promise<boolean> {
    let candidate: LoadedModule;
    let revision: string | undefined;
    try {
      this.lastSeen = await fileSignature(this.wasmPath);
      if (this.requireTrustedFile) await assertTrustedFile(this.wasmPath);
      const bytes = await readFile(this.wasmPath);
      revision = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
      if (revision === this.current?.revision) return true;
      const policy = await loadPolicy(bytes);
      const entrypoints = new Set(Object.keys(policy.entrypoints));
      // A rebuilt module must also keep every decision the running one serves: the code asks for
      // them by name, and a dropped one would turn those requests into 503s.
      const needed = new Set([...this.requiredEntrypoints, ...(this.current?.entrypoints ?? [])]);
      const missing = [...needed].filter((name) => !entrypoints.has(name));
      if (missing.length > 0) throw new Error(`module lacks entrypoints: ${missing.join(', ')}`);
      candidate = { policy, revision, entrypoints };
    } catch (error) {
      this.log.error(
        { err: error, path: this.wasmPath, refusedRevision: revision ?? null, keptRevision: this.current?.revision ?? null },
        'policy module refused; the module already loaded keeps serving',
      );
      return false;
    }
    const previous = this.current?.revision ?? null;
    this.current = candidate;
    this.log.info({ revision: candidate.revision, previous, entrypoints: [...candidate.entrypoints] }, 'policy loaded');
    return true;
  }

  /**
   * Polls the file for a rebuilt module (fs.watch misses atomic renames on some filesystems). Each
   * poll compares the file with the one last read, not with the previous poll, so a module
   * replaced while the watch starts is not missed.
   */
  watch(intervalMs = 1000): void {
    if (this.watchTimer) return;
    this.watchTimer = setInterval(() => {
      fileSignature(this.wasmPath).then(
        (seen) => {
          if (seen !== this.lastSeen) void this.reload();
        },
        () => undefined,
      );
    }, intervalMs);
    this.watchTimer.unref();
  }

  close(): void {
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = undefined;
  }

  /**
   * Evaluates one decision of the catalogue. An answer its output schema refuses (not a
   * consistent `{allow, reasons}` and what it derives) is treated as the policy being unavailable,
   * so a broken rule can never turn into an allow.
   */
  evaluate<D extends DecisionDefinition>(decision: D, input: DecisionInput<D>): Decided<D> {
    const { entrypoint } = decision;
    const loaded = this.current;
    if (!loaded) throw new PolicyUnavailableError('no policy module is loaded');
    if (!loaded.entrypoints.has(entrypoint)) throw new PolicyUnavailableError(`unknown entrypoint ${entrypoint}`);
    if (this.validateInputs) {
      const checked = decision.input.safeParse(input);
      if (!checked.success) throw new Error(`the input of ${entrypoint} breaks its schema: ${checked.error.message}`);
    }
    let result: DecisionOutput<D>;
    try {
      const results = loaded.policy.evaluate(input, entrypoint) as Array<{ result?: unknown }>;
      const parsed = decision.output.safeParse(results[0]?.result);
      if (!parsed.success) throw new Error(`the decision breaks its output schema: ${parsed.error.message}`);
      result = parsed.data as DecisionOutput<D>;
    } catch (error) {
      this.log.error({ err: error, entrypoint, revision: loaded.revision }, 'policy evaluation failed');
      throw new PolicyUnavailableError(`evaluation of ${entrypoint} failed`);
    }
    // The id names this decision in the decision log, and the broker records it on the call it
    // approved, so an audit can go from a call to the exact decision (input digest, revision).
    const decisionId = randomUUID();
    const verdict = result as { allow: boolean; org?: OrgFindings };
    this.logDecision(decisionId, entrypoint, input as object, verdict, loaded.revision);
    reportShadow(this.log, decisionId, entrypoint, verdict.allow, verdict.org);
    return { ...(result as object), decisionId } as Decided<D>;
  }

  private logDecision(
    decisionId: string,
    entrypoint: string,
    input: object,
    result: { allow: boolean; org?: OrgFindings },
    revision: string,
  ): void {
    if (this.decisionLog === 'off' || (this.decisionLog === 'deny' && result.allow)) return;
    this.log.info(
      {
        decision_id: decisionId,
        entrypoint,
        input_digest: digestOf(input),
        result: loggableResult(result),
        revision,
        timestamp: new Date().toISOString(),
      },
      'policy decision',
    );
  }
}

/**
 * Until policies arrive signed, the module file is trusted by who may write it: owned by root or
 * by this process's user, and writable by no group and no one else. Anyone else able to write it
 * could swap in a module that allows everything.
 */
/** Inode, size and mtime: an atomic rename always brings a new inode, even within one mtime tick. */
async function fileSignature(file: string): Promise<string> {
  const info = await stat(file);
  return `${info.ino}:${info.size}:${info.mtimeMs}`;
}

async function assertTrustedFile(file: string): Promise<void> {
  const info = await stat(file);
  const ownUid = process.getuid?.();
  if (info.uid !== 0 && info.uid !== ownUid)
    throw new Error(`module file is owned by uid ${info.uid}, neither root nor this process (${ownUid})`);
  if ((info.mode & 0o022) !== 0)
    throw new Error(`module file is writable by its group or by others (mode ${(info.mode & 0o777).toString(8)})`);
}
