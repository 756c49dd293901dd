import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addBluetoothFilter } from '../../shared/public-config/bluetooth-filters.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;

describe('GET /public/devices/bluetooth-filters and `bluetooth-filter add` (spec §2.19, §4.10)', () => {
  let stack: TestStack;
  const get = (headers: Record<string, string> = {}) => stack.app.inject({ method: 'GET', url: '/public/devices/bluetooth-filters', headers });
  const filterRows = () => stack.db.selectFrom('bluetooth_filters').select(['name_prefix', 'product_model_id']).execute();

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('answers an empty list before any filter exists', async () => {
    const response = await get();
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ success: true, filters: [] });
  });

  it('lists one filter per prefix, longest prefix first, with generation null for a third-party model and upgrade_only roles', async () => {
    await addBluetoothFilter(stack.db, { namePrefix: 'WFB', productModelId: 'wf-box-2', modelName: 'WF Box 2', generation: 'gen2', requiresInventoryCheck: true });
    await addBluetoothFilter(stack.db, { namePrefix: 'WFBOX2', productModelId: 'wf-box-2', modelName: 'WF Box 2', generation: 'gen2', requiresInventoryCheck: true });
    await addBluetoothFilter(stack.db, { namePrefix: 'ACME-', productModelId: 'acme-s1', modelName: 'Acme S1' });
    await addBluetoothFilter(stack.db, { namePrefix: 'WFB1', productModelId: 'wf-box-1', modelName: 'WF Box 1', generation: 'gen1', role: 'upgrade_only' });

    const response = await get({ origin: 'https://app.example.com' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.headers['cache-control']).toBe('public, max-age=60');
    expect(response.json()).toEqual({
      success: true,
      filters: [
        { namePrefix: 'WFBOX2', productModelId: 'wf-box-2', modelName: 'WF Box 2', requiresInventoryCheck: true, generation: 'gen2', role: 'full' },
        { namePrefix: 'ACME-', productModelId: 'acme-s1', modelName: 'Acme S1', requiresInventoryCheck: false, generation: null, role: 'full' },
        { namePrefix: 'WFB1', productModelId: 'wf-box-1', modelName: 'WF Box 1', requiresInventoryCheck: false, generation: 'gen1', role: 'upgrade_only' },
        { namePrefix: 'WFB', productModelId: 'wf-box-2', modelName: 'WF Box 2', requiresInventoryCheck: true, generation: 'gen2', role: 'full' },
      ],
    });
  });

  it('answers a CORS preflight from any origin', async () => {
    const preflight = await stack.app.inject({
      method: 'OPTIONS', url: '/public/devices/bluetooth-filters',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
  });

  it('`bluetooth-filter add` prints { id } and stores the row; refuses a bad flag and a prefix already present, inserting nothing', async () => {
    const before = await filterRows();
    const [added, badGeneration, duplicate] = await Promise.all([
      runCli(['bluetooth-filter', 'add', '--name-prefix', 'WFPEN', '--product-model-id', 'wf-pen', '--model-name', 'WF Pen',
        '--generation', 'gen2', '--role', 'upgrade_only', '--requires-inventory-check'], stack.env),
      runCli(['bluetooth-filter', 'add', '--name-prefix', 'WFX', '--product-model-id', 'wf-x', '--model-name', 'WF X', '--generation', 'gen3'], stack.env),
      runCli(['bluetooth-filter', 'add', '--name-prefix', 'ACME-', '--product-model-id', 'other', '--model-name', 'Other'], stack.env),
    ]);

    expect(added.code, added.stderr).toBe(0);
    expect(added.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(await stack.db.selectFrom('bluetooth_filters').selectAll().where('id', '=', added.json!.id as string).executeTakeFirst()).toMatchObject({
      name_prefix: 'WFPEN', product_model_id: 'wf-pen', model_name: 'WF Pen', generation: 'gen2', role: 'upgrade_only', requires_inventory_check: true,
    });

    expect(badGeneration.code).not.toBe(0);
    expect(badGeneration.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--generation') });
    expect(duplicate.code).not.toBe(0);
    expect(duplicate.error).toEqual({ error: 'bluetooth_filter_exists', message: "A filter for the name prefix 'ACME-' already exists (model acme-s1)" });

    const after = await filterRows();
    expect(after).toHaveLength(before.length + 1);
    expect(after).toEqual(expect.arrayContaining([...before, { name_prefix: 'WFPEN', product_model_id: 'wf-pen' }]));
    expect(after.filter((row) => row.name_prefix === 'ACME-')).toEqual([{ name_prefix: 'ACME-', product_model_id: 'acme-s1' }]);
  }, CLI_TIMEOUT_MS);

  it('answers 500 INTERNAL_ERROR in the public envelope when the query fails (not an outage)', async () => {
    await sql`ALTER TABLE bluetooth_filters RENAME TO bluetooth_filters_away`.execute(stack.db);
    try {
      const response = await get({ origin: 'https://app.example.com' });
      expect(response.statusCode).toBe(500);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(response.json()).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
    } finally {
      await sql`ALTER TABLE bluetooth_filters_away RENAME TO bluetooth_filters`.execute(stack.db);
    }
    expect((await get()).statusCode).toBe(200);
  });
});
