import { describe, expect, it } from 'vitest';
import { isGranted } from './agent-permissions.js';

describe('agent permission grants', () => {
  it.each([
    [['GET /my'], 'GET', '/my', true],
    [['GET /my'], 'POST', '/my', false],
    [['GET /my'], 'GET', '/my/credentials/agent-tokens', false],
    [['GET /my/**'], 'GET', '/my/credentials/agent-tokens', true],
    [['POST /api/released-app/*/run'], 'POST', '/api/released-app/abc/run', true],
    [['POST /api/released-app/*/run'], 'POST', '/api/released-app/abc/def/run', false],
    [['* /my'], 'DELETE', '/my', true],
    [['GET /my'], 'GET', '/my?x=1', true],
    [[], 'GET', '/my', false],
    [['garbage'], 'GET', '/my', false],
  ])('%j grants %s %s: %s', (grants, method, path, expected) => {
    expect(isGranted(grants, method, path)).toBe(expected);
  });
});
