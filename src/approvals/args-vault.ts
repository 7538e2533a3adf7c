import { canonicalize } from 'json-canonicalize';
import type { KeyRing } from '../credentials/sealed-box';
import { decisions } from '../kernel/decisions/catalogue';
import { maskArgs } from '../policy/args-mask';
import type { MASK } from '../policy/decision-log';
import type { PolicyEngine } from '../policy/engine';

/** Arguments whose canonical JSON is longer than this are not kept: `argsTooLarge`. */
export const ARGS_KEPT_MAX_BYTES = 64 * 1024;

/** The columns of an approval that keep its call's arguments. */
export interface KeptArgsColumns {
  args_sealed: Buffer | null;
  args_key_id: string | null;
  args_too_large: boolean;
}

export type KeptArgs = Record<string, unknown> | typeof MASK;

/** What a decider reads of the arguments of an approval. */
export interface ArgsView {
  /** The masked arguments while pending (all of them withheld: the mask itself), else null. */
  args: KeptArgs | null;
  argsTooLarge: boolean;
  /** Kept, but no key of the ring opens them (rotated away, or altered): shown as null, never as ciphertext. */
  argsUnreadable: boolean;
}

/**
 * Keeps a pending approval's arguments for the humans who decide it: masked by the policy's own
 * mask rule (the decision log's system.log.mask, asked about the broker check that asked for the
 * approval), then sealed with AES-256-GCM bound to the approval's id and argument digest (moved
 * to another approval, the ciphertext does not open). The plaintext lives only in memory.
 */
export class ApprovalArgsVault {
  constructor(
    private readonly keys: KeyRing,
    private readonly policy: PolicyEngine,
  ) {}

  /** `checkInput` is the broker check's input (with the arguments): what the mask rule judges. */
  seal(approvalId: string, argsDigest: string, args: Record<string, unknown>, checkInput: object): KeptArgsColumns {
    const canonical = canonicalize(args);
    // UTF-8 is at most 3 bytes per UTF-16 unit: only a text that long needs measuring.
    if (canonical.length * 3 > ARGS_KEPT_MAX_BYTES && Buffer.byteLength(canonical) > ARGS_KEPT_MAX_BYTES) {
      return { args_sealed: null, args_key_id: null, args_too_large: true };
    }
    const masked = maskArgs(args, this.policy.maskOf(decisions.brokerCheck.entrypoint, checkInput));
    const sealed = this.keys.seal('approval-args', Buffer.from(JSON.stringify(masked), 'utf8'), boundTo(approvalId, argsDigest));
    return { args_sealed: sealed.box, args_key_id: sealed.keyId, args_too_large: false };
  }

  /** The arguments of a row still pending (by the clock); null for any other. */
  open(row: KeptArgsColumns & { id: string; args_digest: string }, pending: boolean): ArgsView {
    const view: ArgsView = { args: null, argsTooLarge: row.args_too_large, argsUnreadable: false };
    if (!pending || !row.args_sealed || !row.args_key_id) return view;
    const plain = this.keys.open('approval-args', { keyId: row.args_key_id, box: row.args_sealed }, boundTo(row.id, row.args_digest));
    if (!plain) return { ...view, argsUnreadable: true };
    return { ...view, args: JSON.parse(plain.toString('utf8')) as KeptArgs };
  }
}

/** The additional data of the seal: the approval it belongs to and the call it allows. */
function boundTo(approvalId: string, argsDigest: string): string {
  return `approval-args\0${approvalId}\0${argsDigest}`;
}
