/**
 * Polls `probe` until it returns something truthy, for what happens elsewhere (a NOTIFY, a
 * schedule firing); throws, naming `what`, once `timeoutMs` has passed.
 */
export async function until<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs: number, what: string, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
