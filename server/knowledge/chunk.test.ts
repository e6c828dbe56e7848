import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkText, countTokens } from './chunk.ts';

const markdown = { maxTokens: 60, overlapTokens: 8, headings: true };

const sentence = (i: number) => `Sentence number ${i} says something about topic ${i}.`;
const paragraph = (from: number, count: number) => Array.from({ length: count }, (_, i) => sentence(from + i)).join(' ');

describe('chunkText', () => {
  it('starts a chunk at every heading and carries the heading path into its text', () => {
    const chunks = chunkText('# Guide\n\nIntro text.\n\n## Returns\n\nWithin 30 days.\n\n### Refunds\n\nTo the card.\n\n## Shipping\n\nTwo days.', markdown);
    expect(chunks.map((c) => c.headings)).toEqual([['Guide'], ['Guide', 'Returns'], ['Guide', 'Returns', 'Refunds'], ['Guide', 'Shipping']]);
    expect(chunks[2]!.text).toBe('Guide › Returns › Refunds\n\nTo the card.');
    expect(chunks[3]!.text).toBe('Guide › Shipping\n\nTwo days.');
  });

  it('understands setext headings and skips headings with nothing under them', () => {
    const chunks = chunkText('Title\n=====\n\nSub\n---\n\nBody text.', markdown);
    expect(chunks).toEqual([{ text: 'Title › Sub\n\nBody text.', headings: ['Title', 'Sub'], tokens: countTokens('Title › Sub\n\nBody text.') }]);
  });

  it('packs paragraphs up to the budget and repeats the tail of a chunk at the head of the next', () => {
    const text = Array.from({ length: 8 }, (_, i) => paragraph(i * 3, 3)).join('\n\n');
    const chunks = chunkText(text, markdown);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) expect(chunk.tokens).toBeLessThanOrEqual(60);
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1]!.text;
      const head = chunks[i]!.text.split('\n\n')[0]!;
      expect(previous.endsWith(head)).toBe(true);
      expect(countTokens(head)).toBeLessThanOrEqual(8);
    }
    // Nothing is lost: every sentence is in some chunk.
    for (let i = 0; i < 24; i++) expect(chunks.some((c) => c.text.includes(sentence(i)))).toBe(true);
  });

  it('splits a paragraph longer than the budget at sentence ends, and a sentence longer than it between words', () => {
    const long = paragraph(0, 30);
    const chunks = chunkText(long, { maxTokens: 40, overlapTokens: 0, headings: false });
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) {
      expect(chunk.tokens).toBeLessThanOrEqual(40);
      expect(chunk.text).toMatch(/^Sentence number \d+/);
    }
    const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    const pieces = chunkText(words, { maxTokens: 50, overlapTokens: 0, headings: false });
    expect(pieces.map((c) => c.tokens)).toEqual([50, 50, 50, 50]);
    expect(pieces.map((c) => c.text).join(' ')).toBe(words);
  });

  it('counts an unbroken run of characters as many tokens, so it cannot make a giant chunk', () => {
    const blob = 'A'.repeat(16 * 100);
    expect(countTokens(blob)).toBe(100);
    const chunks = chunkText(blob, { maxTokens: 30, overlapTokens: 0, headings: false });
    expect(chunks.every((c) => c.tokens <= 30)).toBe(true);
    expect(chunks.map((c) => c.text).join('')).toBe(blob);
  });

  it('leaves `#` lines alone in plain text and inside fenced code', () => {
    const plain = chunkText('# not a heading\n\nbody', { ...markdown, headings: false });
    expect(plain.map((c) => c.headings)).toEqual([[]]);
    expect(plain[0]!.text).toBe('# not a heading\n\nbody');
    const fenced = chunkText('# Script\n\n```sh\n# a comment\necho hi\n```\n\nAfter.', markdown);
    expect(fenced.map((c) => c.headings)).toEqual([['Script']]);
    expect(fenced[0]!.text).toContain('# a comment\necho hi');
  });

  it('gives no chunks for text without words, and normalises Windows line ends', () => {
    expect(chunkText('  \n\n\t ', markdown)).toEqual([]);
    expect(chunkText('# A\r\n\r\nB', markdown)[0]!.text).toBe('A\n\nB');
  });

  it('keeps every chunk within the budget, whatever the text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom('# H', '## Sub', '', '```', 'x'.repeat(40)), fc.lorem({ maxCount: 40, mode: 'sentences' })), { maxLength: 40 }),
        fc.integer({ min: 32, max: 120 }),
        fc.integer({ min: 0, max: 30 }),
        (lines, maxTokens, overlapTokens) => {
          for (const chunk of chunkText(lines.join('\n'), { maxTokens, overlapTokens, headings: true })) {
            expect(chunk.tokens).toBeLessThanOrEqual(maxTokens);
            expect(chunk.text.trim()).not.toBe('');
          }
        },
      ),
    );
  });
});
