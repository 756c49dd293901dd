import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { grantCredits } from '../../shared/billing/service.js';
import { publishDirect } from '../harness/apps.js';
import { startRealtimeTestStack, type RealtimeTestStack } from '../harness/realtime.js';
import { statuses, waitFor } from '../realtime/clients.js';

// `run_approvals` on the data API and realtime (CONTRACTS.md "Long runs"): a frontend's approval
// inbox with the unmodified supabase-js — members of the run's team read it, nobody else, nobody
// writes, secrets stay out, and the row's status changes arrive live.

type Change = { eventType: string; table: string; new: Record<string, unknown> };

const graph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
    { id: 'ok', type: 'approval', name: 'ok', config: { prompt: 'Publish {{q}}?', fields: { type: 'object', properties: { note: { type: 'string' } } } } },
  ],
  edges: [{ from: 'q', to: 'ok' }],
};

describe('the approval inbox: run_approvals on the data API and realtime', () => {
  let rt: RealtimeTestStack;

  beforeAll(async () => {
    rt = await startRealtimeTestStack();
    await rt.stack.startWorker();
  });
  afterEach(() => rt.removeClients());
  afterAll(() => rt?.stack.close());

  async function tenant(label: string) {
    const owner = await rt.make.user(`${label}-owner`);
    const team = await rt.make.team(owner.id, label);
    const member = await rt.make.user(`${label}-member`);
    await addTeamMember(rt.stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    await grantCredits(rt.stack.db, { teamId: team.id, amountMilli: 100_000 });
    const apiKey = (await rt.make.apiKey(team.id, owner.id)).token;
    const { deploymentId } = await publishDirect(rt.stack.db, graph, { teamId: team.id });
    return { owner, member, team, apiKey, deploymentId };
  }
  const startWaiting = async (t: Awaited<ReturnType<typeof tenant>>) => {
    const res = await rt.stack.app.inject({
      method: 'POST', url: `/api/released-app/${t.deploymentId}/run`, headers: { authorization: `Bearer ${t.apiKey}` }, payload: { inputs: { q: 'the post' }, stream: false },
    });
    expect(res.statusCode).toBe(202);
    return res.json().runId as string;
  };
  const clientOf = async (userId: string) => rt.client(await rt.make.jwt(userId));
  async function listen(client: SupabaseClient) {
    const got: Change[] = [];
    const channel: RealtimeChannel = client.channel(`inbox-${Math.random().toString(36).slice(2)}`)
      .on('postgres_changes' as never, { event: '*', schema: 'public', table: 'run_approvals' } as never, (change: Change) => { got.push(change); });
    await statuses(channel).ready;
    return got;
  }

  it('members read their team\'s approvals (the contract\'s columns only); strangers and anon read none; nobody writes', async () => {
    const a = await tenant('inbox-a');
    const stranger = await tenant('inbox-b');
    const runId = await startWaiting(a);

    const member = await clientOf(a.member.id);
    const { data, error } = await member.from('run_approvals').select('*').eq('run_id', runId);
    expect(error).toBeNull();
    expect(data).toEqual([{
      id: expect.any(String), run_id: runId, team_id: a.team.id, block_id: 'ok', prompt: 'Publish the post?', status: 'pending',
      decided_by: null, decided_at: null, expires_at: expect.any(String), created_at: expect.any(String),
    }]);
    const secret = await member.from('run_approvals').select('token_hash').eq('run_id', runId);
    expect(secret.error).toMatchObject({ code: '42501' });

    const other = await clientOf(stranger.owner.id);
    expect((await other.from('run_approvals').select('id').eq('run_id', runId)).data).toEqual([]);
    const anon = await rt.client(null);
    expect((await anon.from('run_approvals').select('id').eq('run_id', runId)).data ?? []).toEqual([]);

    const write = await member.from('run_approvals').update({ status: 'approved' }).eq('run_id', runId).select();
    expect(write.error).toMatchObject({ code: '42501' });
    const insert = await member.from('run_approvals').insert({ run_id: runId, team_id: a.team.id, block_id: 'x', prompt: 'p' });
    expect(insert.error).toMatchObject({ code: '42501' });
    const row = await rt.stack.db.selectFrom('run_approvals').select(['status', 'decided_by']).where('run_id', '=', runId).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'pending', decided_by: null });
  });

  it('realtime: a member sees the approval arrive and its status change live; another team\'s member sees neither', async () => {
    const a = await tenant('live-a');
    const b = await tenant('live-b');
    const memberGot = await listen(await clientOf(a.member.id));
    const strangerGot = await listen(await clientOf(b.member.id));

    const runId = await startWaiting(a);
    await waitFor(() => memberGot.find((c) => c.eventType === 'INSERT' && c.new.run_id === runId), 'the INSERT');
    expect(memberGot.find((c) => c.new.run_id === runId)!.new).toMatchObject({ status: 'pending', prompt: 'Publish the post?', block_id: 'ok' });
    expect(memberGot.find((c) => c.new.run_id === runId)!.new).not.toHaveProperty('token_hash');

    const decided = await rt.stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/approvals/ok`, headers: { authorization: `Bearer ${a.apiKey}` }, payload: { approved: true } });
    expect(decided.statusCode).toBe(200);
    await waitFor(() => memberGot.find((c) => c.eventType === 'UPDATE' && c.new.run_id === runId && c.new.status === 'approved'), 'the UPDATE to approved');

    // The stranger's own team's next approval is delivered to it after a's changes (commit order):
    // once it has arrived, a's would have too, had they been owed.
    const ownRun = await startWaiting(b);
    await waitFor(() => strangerGot.find((c) => c.new.run_id === ownRun), 'the stranger\'s own approval');
    expect(strangerGot.filter((c) => c.new.run_id === runId)).toEqual([]);
  });
});
