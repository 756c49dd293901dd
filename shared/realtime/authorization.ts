import { projectAccess, requireDocumentAccess, teamLevel } from '../access/service.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { isWellFormedMemberTopic, type MemberTopic } from './topics.js';

/**
 * May this user broadcast and see presence on a member topic? Members of the topic's team only
 * (any role), asked of the access module like every other capability; the anon role never.
 */
export async function mayJoinMemberTopic(db: Database, userId: string | null, topic: MemberTopic): Promise<boolean> {
  if (!userId || !isWellFormedMemberTopic(topic)) return false;
  const caller = { kind: 'jwt' as const, userId };
  switch (topic.kind) {
    case 'team':
      return (await teamLevel(db, caller, topic.id)) !== 'none';
    case 'project': {
      const project = await projectAccess(db, caller, topic.id);
      return project !== undefined && project.access !== 'none';
    }
    case 'document':
      try {
        await requireDocumentAccess(db, caller, topic.id);
        return true;
      } catch (error) {
        if (error instanceof AppError && error.status === 404) return false;
        throw error;
      }
  }
}
