/**
 * `promise`, or `timeoutError()` as a rejection once `ms` have passed, whichever comes first. The
 * timer is cleared either way and never keeps the process up; the promise itself is not cancelled (a late rejection of it is
 * ignored: nobody waits for it any more).
 */
export async function withTimeout<T>(promise: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(timeoutError()), ms).unref(); });
  promise.catch(() => {});
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
