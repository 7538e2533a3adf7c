/**
 * A bounded map that forgets the least recently used entry first (a Map keeps insertion order;
 * a hit re-inserts). Per replica, in memory: enough for the broker's caches.
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();
  /**
   * One iterator over the keys for the whole life of the cache, advanced once per eviction. A Map
   * keeps a deleted entry's slot until it next rehashes, and a fresh iterator walks past every such
   * slot before the first live key: with the oldest entry evicted on every insertion of a full cache
   * (and entries read once and deleted, as the pending calls are), a fresh one per eviction walked
   * thousands of slots each time. Every key behind this iterator has been evicted or deleted (a key
   * set again goes to the end), so its next key is the oldest live one, and each slot is walked once.
   */
  private readonly oldest: Iterator<K> = this.entries.keys();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) {
      const oldest = this.oldest.next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
