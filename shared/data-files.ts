import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Reads a private file under DATA_DIR, creating it with `create()` on first start (directory 0700,
 * file 0600). `wx` makes concurrent first starts (API and worker together) agree on one content.
 */
export async function readOrCreatePrivateFile(file: string, create: () => Promise<string> | string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const content = await create();
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    await writeFile(file, content, { mode: 0o600, flag: 'wx' });
    return content;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readFile(file, 'utf8');
  }
}
