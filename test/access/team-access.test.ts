import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { isTeamMember, teamRole as memberRole } from '../../shared/access/service.js';
import { memberTeamIds } from '../../shared/access/repository.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

describe('team membership (shared/access/service.ts)', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
  });
  afterAll(() => stack?.close());

  it('answers the role in a live team, and nothing once the team is deleted', async () => {
    const owner = await make.user('owner');
    const member = await make.user('member');
    const stranger = await make.user('stranger');
    const kept = await make.team(owner.id, 'Kept');
    const deleted = await make.team(owner.id, 'Deleted');
    for (const team of [kept, deleted]) await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });

    expect(await memberRole(stack.db, kept.id, owner.id)).toBe('owner');
    expect(await memberRole(stack.db, deleted.id, member.id)).toBe('member');
    expect(await memberRole(stack.db, kept.id, stranger.id)).toBeUndefined();
    expect(await memberRole(stack.db, 'not-a-uuid', owner.id)).toBeUndefined();

    await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', deleted.id).execute();
    expect(await memberRole(stack.db, deleted.id, member.id)).toBeUndefined();
    expect(await isTeamMember(stack.db, deleted.id, member.id)).toBe(false);
    expect(await isTeamMember(stack.db, kept.id, member.id)).toBe(true);
    expect((await memberTeamIds(stack.db, member.id).execute()).map((row) => row.team_id)).toEqual([kept.id]);
    expect(await memberTeamIds(stack.db, stranger.id).execute()).toEqual([]);
  });
});
