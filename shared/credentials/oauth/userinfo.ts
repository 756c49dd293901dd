import type { Database } from '../../db/client.js';
import { AppError } from '../../errors.js';
import * as repo from './repository.js';

/** Who the access token's user is (the userinfo endpoint); a user that no longer exists is 401. */
export async function userInfo(db: Database, userId: string): Promise<{ sub: string; email: string; name: string | null }> {
  const user = await repo.findUserProfile(db, userId);
  if (!user) throw new AppError(401, 'Invalid or revoked OAuth token');
  return { sub: user.id, email: user.email, name: user.name };
}
