import { z } from 'zod';

/** One binding as both sides see it. */
export const bindingView = z.object({
  id: z.uuid(), name: z.string(),
  ownerTeamId: z.uuid(), ownerTeamName: z.string(), granteeTeamId: z.uuid(), granteeTeamName: z.string(),
  documentId: z.uuid(), documentName: z.string(),
  deploymentId: z.uuid().nullable().describe('what a call without `version` runs: the pin, else the newest version; null when none is live'),
  pinned: z.boolean(), createdAt: z.string(),
});
