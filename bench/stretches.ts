/**
 * Figures per named stretch of a run (a slice of the isolation scenario, a phase of the saturation
 * one): `enter(name)` takes a sample, adds what changed since the last sample to the stretch that
 * just ended, and opens the next (undefined: none). A name entered again adds to what it had.
 */
export class Stretches<K extends string, S, A> {
  readonly byKind = new Map<K, A>();
  private last: { kind: K; sample: S } | undefined;

  constructor(
    private readonly sample: () => S,
    /** What the stretch `before`…`after` adds to `acc` (undefined: the name's first stretch). */
    private readonly add: (acc: A | undefined, before: S, after: S) => A,
  ) {}

  enter(kind: K | undefined): void {
    const now = this.sample();
    if (this.last !== undefined) this.byKind.set(this.last.kind, this.add(this.byKind.get(this.last.kind), this.last.sample, now));
    this.last = kind === undefined ? undefined : { kind, sample: now };
  }
}
