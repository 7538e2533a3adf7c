import { randomUUID } from 'node:crypto';
import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { evaluateOn } from './candidate';
import type { LineWriterFactory, Logger } from '../kernel/log';
import { DependencyUnavailableError } from '../kernel/dependency';
import type { OrgFindings } from '../kernel/decisions/org';
import { loggableResult, reportShadow } from './shadow';
import { loadErrorKind, PolicyLoadError, revisionLabel } from './load-error';
import { policyLastLoadFailureInfo, policyLastLoadFailureTime, policyLoadFailures, policyRevisionInfo } from './metrics';
import { WasmFileSource, type PolicySource } from './sources';
import {
  DecisionLog,
  MASK,
  MASKED_FIELDS,
  RESOURCE_VALUE_MAX_CHARS,
  TRUNCATED,
  type DecisionEvent,
  type DecisionLogMode,
  type MaskOp,
} from './decision-log';
import { evaluateTextPlainly, type EvaluateText } from './evaluate-text';
import { NO_JSON_MEMO, writeInputJson, type InputJson, type JsonMemo } from './input-json';

/** OPA's decision log mask policy (a package `system.log` with a `mask` rule), when compiled in. */
const MASK_ENTRYPOINT = 'system/log/mask';
/** A decision event carries at most this much of each resource value read from `args`. */
const RESOURCE_CUT = { key: 'resource', maxChars: RESOURCE_VALUE_MAX_CHARS, marker: TRUNCATED };

export type { DecisionLogMode } from './decision-log';
import type { DecisionDefinition, DecisionInput, DecisionOutput } from '../kernel/decisions/catalogue';

/**
 * What a decision returns, as its catalogue entry types it: `{allow, reasons}` and
 * the facts it derived (a grant's status and effective audience, say), so TypeScript never derives
 * them a second time; plus the id that names it in the decision log.
 */
export type Decided<D extends DecisionDefinition> = DecisionOutput<D> & { decisionId: string };

export interface PolicyEngineOptions {
  /** Where the policy comes from; `path` is short for a bare module file. */
  source?: PolicySource;
  /** The compiled module (development). */
  path?: string;
  /** How often `path` is looked at for a rebuilt module. */
  pollMs?: number;
  log: Logger;
  /** Where decisions are logged (OPA's event format), or just a mode for one that writes to `log`. */
  decisionLog?: DecisionLogMode | DecisionLog;
  /** Decisions a module must have to be loaded (the catalogue, for the service). */
  required?: readonly DecisionDefinition[];
  /**
   * Load only a file owned by root or this process's user and writable by no one else. Production
   * never loads a bare module (src/config.ts asks for a signed bundle); this is the second net.
   */
  requireTrustedFile?: boolean;
  /** Tests: refuse an input that its catalogue schema refuses (the TypeScript side drifted). */
  validateInputs?: boolean;
  /** Keeps the JSON of inputs' unchanging members (none kept unless a speed-up is given). */
  jsonMemo?: JsonMemo;
  /** How the module evaluates an input's JSON text (opa-wasm's own `evaluate` unless a speed-up is given). */
  evaluateText?: EvaluateText;
  /** The line writer of the decision log made for a `decisionLog` mode. */
  lineWriter?: LineWriterFactory;
}

/** The policy cannot answer: callers fail closed (503), never allow. */
export class PolicyUnavailableError extends DependencyUnavailableError {}

interface LoadedModule {
  policy: LoadedPolicy;
  revision: string;
  digest: string;
  entrypoints: ReadonlySet<string>;
  signed: boolean;
}

/** The last load that was refused, for /readyz and the logs. */
export interface LoadFailure {
  message: string;
  at: string;
}

/**
 * The compiled Rego (one WASM module, one entrypoint per decision). Evaluation is synchronous
 * and in-process; a rebuilt module is picked up without a restart, and a broken one is refused
 * while the module already loaded keeps serving.
 */
export class PolicyEngine {
  private current: LoadedModule | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  private reloading: Promise<boolean> = Promise.resolve(true);
  private failure: LoadFailure | undefined;

  readonly source: PolicySource;
  private readonly log: Logger;
  readonly decisionLog: DecisionLog;
  private readonly requiredEntrypoints: readonly string[];
  private readonly validateInputs: boolean;
  private readonly jsonMemo: JsonMemo;
  private readonly evaluateText: EvaluateText;

  constructor(options: PolicyEngineOptions) {
    if (!options.source && !options.path) throw new Error('a policy engine needs a source or a path');
    this.source = options.source ?? new WasmFileSource(options.path!, options.requireTrustedFile ?? false, options.pollMs);
    this.log = options.log;
    this.decisionLog =
      options.decisionLog instanceof DecisionLog
        ? options.decisionLog
        : new DecisionLog({ mode: options.decisionLog ?? 'all', log: options.log, lineWriter: options.lineWriter, version: 'embedded' });
    this.decisionLog.useMasker(() => this.currentMask());
    this.requiredEntrypoints = (options.required ?? []).map((decision) => decision.entrypoint);
    this.validateInputs = options.validateInputs ?? false;
    this.jsonMemo = options.jsonMemo ?? NO_JSON_MEMO;
    this.evaluateText = options.evaluateText ?? evaluateTextPlainly;
  }

  get revision(): string | undefined {
    return this.current?.revision;
  }

  /**
   * system.log.mask of the loaded policy, evaluated on one decision event as OPA does; undefined
   * when the loaded policy has no mask rule (then nothing is asked of an event).
   */
  private currentMask(): ((event: DecisionEvent) => MaskOp[]) | undefined {
    const loaded = this.current;
    if (!loaded?.entrypoints.has(MASK_ENTRYPOINT)) return undefined;
    return (event) => {
      const result = (loaded.policy.evaluate(event, MASK_ENTRYPOINT) as Array<{ result?: unknown }>)[0]?.result;
      return Array.isArray(result) ? (result as MaskOp[]) : [];
    };
  }

  /**
   * What the loaded policy's system.log.mask names for a decision `path` on `input` (the same
   * rule the decision log applies, asked here about a value the service keeps rather than logs):
   * [] when the policy has no mask rule. A mask rule that fails is the policy being unavailable:
   * the caller keeps nothing rather than something unmasked.
   */
  maskOf(path: string, input: object): MaskOp[] {
    const mask = this.currentMask();
    if (!mask) return [];
    const event = { decision_id: randomUUID(), path, input, result: {}, timestamp: new Date().toISOString() } as unknown as DecisionEvent;
    try {
      return mask(event);
    } catch (error) {
      this.log.error({ err: { message: (error as Error).message }, path }, 'mask rule evaluation failed');
      throw new PolicyUnavailableError('the mask rule could not be evaluated');
    }
  }

  /** The last refused load since the last successful one, if any. */
  get lastFailure(): LoadFailure | undefined {
    return this.failure;
  }

  /** Whether the policy serving now came in a bundle whose signature was verified; undefined before a load. */
  get signed(): boolean | undefined {
    return this.current?.signed;
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
    let fetched = false;
    try {
      const artifact = await this.source.fetch();
      // Nothing new (a bundle server's 304 for the ETag of what is serving): nothing refused either.
      if (!artifact) return this.loadSucceeded();
      fetched = true;
      revision = artifact.revision;
      if (artifact.digest === this.current?.digest && revision === this.current.revision) {
        this.source.settled?.(true);
        return this.loadSucceeded();
      }
      let policy: LoadedPolicy;
      try {
        policy = await loadPolicy(artifact.wasm);
        if (artifact.data) policy.setData(artifact.data);
      } catch (error) {
        throw new PolicyLoadError('invalid_module', `not a loadable policy module: ${(error as Error).message}`);
      }
      const entrypoints = new Set(Object.keys(policy.entrypoints));
      // A rebuilt module must also keep every decision the running one serves: the code asks for
      // them by name, and a dropped one would turn those requests into 503s.
      const needed = new Set([...this.requiredEntrypoints, ...(this.current?.entrypoints ?? [])].filter((e) => e !== MASK_ENTRYPOINT));
      const missing = [...needed].filter((name) => !entrypoints.has(name));
      if (missing.length > 0) throw new PolicyLoadError('missing_entrypoints', `module lacks entrypoints: ${missing.join(', ')}`);
      candidate = { policy, revision, digest: artifact.digest, entrypoints, signed: artifact.signed === true };
    } catch (error) {
      if (fetched) this.source.settled?.(false);
      // A bundle refused before it was opened still names the revision its manifest claims.
      const refused = revision ?? (error instanceof PolicyLoadError ? error.revision : undefined);
      const at = new Date();
      this.failure = { message: (error as Error).message, at: at.toISOString() };
      policyLoadFailures.inc();
      policyLastLoadFailureTime.set(at.getTime() / 1000);
      policyLastLoadFailureInfo.reset();
      policyLastLoadFailureInfo.labels(revisionLabel(refused), loadErrorKind(error)).set(1);
      this.log.error(
        { err: error, source: this.source.location, refusedRevision: refused ?? null, keptRevision: this.current?.revision ?? null },
        'policy module refused; the module already loaded keeps serving',
      );
      return false;
    }
    this.source.settled?.(true);
    this.loadSucceeded();
    const previous = this.current?.revision ?? null;
    this.current = candidate;
    policyRevisionInfo.reset();
    policyRevisionInfo.labels(candidate.revision).set(1);
    this.log.info(
      {
        revision: candidate.revision,
        digest: candidate.digest,
        previous,
        source: this.source.location,
        entrypoints: [...candidate.entrypoints],
      },
      'policy loaded',
    );
    return true;
  }

  /** The last refusal is over, in /readyz and /metrics alike. */
  private loadSucceeded(): true {
    this.failure = undefined;
    policyLastLoadFailureTime.set(0);
    policyLastLoadFailureInfo.reset();
    return true;
  }

  /**
   * Looks for a new policy: a file source compares the file with the one last read (fs.watch
   * misses atomic renames on some filesystems); a bundle server is asked with its ETag, less often
   * after failures.
   */
  watch(): void {
    if (this.watchTimer) return;
    const poll = () => {
      this.watchTimer = setTimeout(() => {
        this.source.changed().then(
          async (changed) => {
            if (changed) await this.reload();
            if (this.watchTimer) poll();
          },
          () => this.watchTimer && poll(),
        );
      }, this.source.nextPollMs());
      this.watchTimer.unref();
    };
    poll();
  }

  close(): void {
    if (this.watchTimer) clearTimeout(this.watchTimer);
    this.watchTimer = undefined;
  }

  /**
   * The serving policy's answer to one decision with no side effect (the policy playground): no
   * decision event, no shadow report, no decision id. Unavailable as evaluate() is.
   */
  tryOut<D extends DecisionDefinition>(decision: D, input: DecisionInput<D>): { revision: string; output: DecisionOutput<D> } {
    const loaded = this.current;
    if (!loaded) throw new PolicyUnavailableError('no policy module is loaded');
    return { revision: loaded.revision, output: evaluateOn(loaded.policy, decision, input) };
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
    let json: InputJson;
    const started = process.hrtime.bigint();
    let evalNs = 0;
    try {
      json = writeInputJson(input as object, MASKED_FIELDS, MASK, this.jsonMemo, RESOURCE_CUT);
      const results = this.evaluateText(loaded.policy, json.text, entrypoint, json.split);
      evalNs = Number(process.hrtime.bigint() - started);
      const parsed = decision.output.safeParse(results[0]?.result);
      if (!parsed.success) throw new Error(`the decision breaks its output schema: ${parsed.error.message}`);
      result = parsed.data as DecisionOutput<D>;
    } catch (error) {
      this.log.error({ err: error, entrypoint, revision: loaded.revision }, 'policy evaluation failed');
      throw new PolicyUnavailableError(`evaluation of ${entrypoint} failed`);
    }
    // The id names this decision in the decision log, and the broker records it on the call it
    // approved, so an audit can go from a call to the exact decision (masked input, result, revision).
    const decisionId = randomUUID();
    const verdict = result as { allow: boolean; org?: OrgFindings };
    if (this.decisionLog.wants(verdict.allow)) {
      this.decisionLog.record(decisionId, entrypoint, json, loggableResult(verdict), loaded.revision, evalNs);
    }
    reportShadow(this.log, decisionId, entrypoint, verdict.allow, verdict.org);
    // A copy (the decision log keeps `result` as it is): Object.assign, as an object spread
    // followed by a member takes V8's slow path.
    return Object.assign({}, result, { decisionId }) as Decided<D>;
  }
}
