import { describe, expect, it } from 'vitest';
import { blockTexts, describeDocument, describeFile, extractEpisode } from './extract.js';
import { orQuery } from './search.js';

describe('built-in graph extractor', () => {
  it('makes each sentence or line of an episode a fact linking the names it mentions', () => {
    const { entities, facts } = extractEpisode('Notes', 'Ada Lovelace met Charles Babbage. They talked!\nThe "Analytical Engine" was never built.');
    expect(entities.map((e) => e.name)).toEqual(['Ada Lovelace', 'Charles Babbage', 'Analytical Engine']);
    expect(facts).toEqual([
      { fact: 'Ada Lovelace met Charles Babbage.', relation: 'states', source: 'Ada Lovelace', target: 'Charles Babbage' },
      { fact: 'They talked!', relation: 'states', source: null, target: null },
      { fact: 'The "Analytical Engine" was never built.', relation: 'states', source: 'Analytical Engine', target: null },
    ]);
  });

  it('quotes a document\'s name and the text of every block', () => {
    const graph = { blocks: [{ id: 'a', type: 'template', name: 'greet', config: { template: 'hello {{q}}' } }, { id: 'b', type: 'llm', config: { model: 'm', prompt: 'summarise' } }] };
    expect(blockTexts(graph)).toEqual(['[template greet] hello {{q}}', '[llm b] m summarise']);
    expect(describeDocument('Greeter', graph).fact).toBe('Document "Greeter" has blocks: [template greet] hello {{q}}; [llm b] m summarise');
    expect(describeDocument('Empty', { blocks: [] }).fact).toBe('Document "Empty" has no blocks');
    expect(describeDocument('Broken', 'not a graph').fact).toBe('Document "Broken" has no blocks');
  });

  it('names a file and quotes its text when it has some', () => {
    expect(describeFile('a.txt', 'text/plain', 5, 'hi\nthere').fact).toBe('File "a.txt" (text/plain, 5 bytes) contains: hi there');
    expect(describeFile('b.pdf', 'application/pdf', 9, null).fact).toBe('File "b.pdf" (application/pdf, 9 bytes)');
  });

  it('turns a search query into an OR of its words that cannot carry tsquery syntax', () => {
    expect(orQuery('Invoice & helper | !x')).toBe('invoice | helper | x');
    expect(orQuery("'); DROP --")).toBe('drop');
    expect(orQuery('!!!')).toBeNull();
  });
});
