/**
 * A feed of messages written in the same transaction as the change they report (an outbox), read
 * by each of its readers once. The domain that writes the messages owns the table; a reader gets
 * its feed through a port filled by composition.ts, and never learns whose table it is.
 */
export interface OutboxFeed<Message, Unit> {
  /** The events waker's key a commit that wrote messages notifies (a hint only: readers also look on a timer). */
  readonly wakeKey: string;
  /**
   * Hands `take` the messages this reader has not taken yet, oldest first, inside the transaction
   * that marks them taken: they are taken exactly when what `take` writes in `unit` commits, and
   * handed again if it throws. Concurrent drains on any replica split the messages. Answers how
   * many it handed over.
   */
  drain(take: (unit: Unit, messages: readonly Message[]) => Promise<void>): Promise<number>;
}
