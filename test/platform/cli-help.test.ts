import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { commands } from '../../scripts/cli/commands.js';
import { README_TABLE_END, README_TABLE_START, renderReadmeTable } from '../../scripts/cli/usage.js';
import { runCli } from '../harness/cli.js';

// Help needs no database or Temporal: an empty environment proves it touches neither.
const cli = (...args: string[]) => runCli(args, { PATH: process.env.PATH });

describe('operator CLI help (issue 45)', () => {
  it('--help and help list every command with its summary on stdout and exit 0', async () => {
    for (const args of [['--help'], ['help']]) {
      const res = await cli(...args);
      expect(res.code).toBe(0);
      expect(res.stderr).toBe('');
      expect(res.stdout).toMatch(/^Usage: npm run --silent cli -- <command>/);
      for (const [name, command] of Object.entries(commands)) expect(res.stdout).toMatch(new RegExp(`^  ${name} +${command.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
      expect(res.stdout).toMatch(/^ {2}credits balance +A team's credit balance/m);
    }
  });

  it('help <command> and <command> --help print its flags, required ones marked', async () => {
    for (const args of [['help', 'credits', 'grant'], ['credits', 'grant', '--help']]) {
      const res = await cli(...args);
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('Usage: npm run --silent cli -- credits grant --team TEAM_ID --amount MILLI_CREDITS');
      expect(res.stdout).toMatch(/^ {2}--team TEAM_ID +\(required\) the team$/m);
      expect(res.stdout).toMatch(/^ {2}--amount MILLI_CREDITS +\(required\) milli-credits to add/m);
    }
    const optional = await cli('help', 'jwt', 'issue');
    expect(optional.stdout).toMatch(/^ {2}--ttl SECONDS +lifetime in seconds/m);
    expect(optional.stdout).not.toMatch(/--ttl SECONDS +\(required\)/);
  });

  it('help <group> lists the commands under it', async () => {
    const res = await cli('help', 'credits');
    expect(res.code).toBe(0);
    expect(res.stdout.match(/^ {2}credits \S+/gm)).toEqual(['  credits grant', '  credits balance']);
  });

  it('an unknown command, asked for or helped, exits 2 with the list on stderr', async () => {
    for (const args of [['nope'], ['help', 'nope'], ['--helpme']]) {
      const res = await cli(...args);
      expect(res.code).toBe(2);
      expect(res.stdout).toBe('');
      expect(res.error).toMatchObject({ error: 'unknown_command' });
      expect(String(res.error!.message)).toContain('credits balance');
    }
  });

  it("the README's table is the one the definitions render (scripts/cli/write-readme-table.ts)", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const table = readme.slice(readme.indexOf(README_TABLE_START) + README_TABLE_START.length, readme.indexOf(README_TABLE_END)).trim();
    expect(table).toBe(renderReadmeTable(commands));
  });
});
