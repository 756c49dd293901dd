// Seeded randomness, so a chaos run's kill order can be replayed with `--seed` (the moments still
// vary with machine timing, which is the point of killing "at random moments").

export type Rng = () => number;

/** mulberry32: tiny, fast, and good enough to pick targets and pauses. */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [min, max]. */
export function between(rng: Rng, min: number, max: number): number {
  return min + Math.floor(rng() * (max - min + 1));
}

export function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)]!;
}

/** A kill target's name (scripts/chaos/layout.ts). */
export type KillTarget = string;

/**
 * The order of the kills: a seeded shuffle of an even share per target (the remainder picked at
 * random). Still a random order, but a short run (6 kills) is sure to hit each target twice
 * instead of, by bad luck, never touching one of them.
 */
export function killPlan(kills: number, rng: Rng, targets: readonly KillTarget[]): KillTarget[] {
  const plan: KillTarget[] = [];
  for (let i = 0; i < Math.floor(kills / targets.length); i++) plan.push(...targets);
  while (plan.length < kills) plan.push(pick(rng, targets));
  for (let i = plan.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [plan[i], plan[j]] = [plan[j]!, plan[i]!];
  }
  return plan;
}
