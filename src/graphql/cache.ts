/**
 * A bounded least-recently-used map: at most `maxEntries` entries and at most `maxWeight` total
 * weight (the document text's length for the GraphQL query cache, so 500 entries of 100 KB
 * documents cannot pin 50 MB). A Map keeps insertion order; a hit moves the entry to the end.
 */
export class LruCache<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>();
  private weight = 0;
  hits = 0;
  misses = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxWeight = Infinity,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const e = this.map.get(key);
    if (e === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.map.delete(key);
    this.map.set(key, e);
    return e.value;
  }

  set(key: K, value: V, weight = 1): void {
    const old = this.map.get(key);
    if (old !== undefined) {
      this.map.delete(key);
      this.weight -= old.weight;
    }
    if (weight > this.maxWeight) return; // would evict everything else; not worth caching
    this.map.set(key, { value, weight });
    this.weight += weight;
    for (const [k, e] of this.map) {
      if (this.map.size <= this.maxEntries && this.weight <= this.maxWeight) break;
      this.map.delete(k);
      this.weight -= e.weight;
    }
  }

  clear(): void {
    this.map.clear();
    this.weight = 0;
  }
}
