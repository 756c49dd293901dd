// Rewrites the README's "Operator CLI" table from the commands' one definition:
// `node --import tsx scripts/cli/write-readme-table.ts` after adding or changing a command
// (test/platform/cli-help.test.ts fails while the README and the definitions disagree).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { commands } from './commands.js';
import { renderReadmeTable, withReadmeTable } from './usage.js';

const readmePath = fileURLToPath(new URL('../../README.md', import.meta.url));
writeFileSync(readmePath, withReadmeTable(readFileSync(readmePath, 'utf8'), renderReadmeTable(commands)));
process.stdout.write(`README.md: ${Object.keys(commands).length} commands\n`);
