import { jsonLine, terminalSafe } from './format';

// What an attacker puts in a goal, a message, model text or tool output to act on the reader's terminal.
const ESC_RED = '\x1b[31mred\x1b[0m';
const BEL = 'ding\x07';
const OSC8 = '\x1b]8;;https://evil.example/\x07click me\x1b]8;;\x07';
const OSC52 = '\x1b]52;c;cm0gLXJmIH4K\x07';
const CSI_C1 = '\u009b2J';
const ALL = [ESC_RED, BEL, OSC8, OSC52, CSI_C1, 'del\x7f', 'back\x08space', 'over\rwrite', 'nul\x00'].join(' ');

/** Any character a terminal acts on, but newline and tab. */
// eslint-disable-next-line no-control-regex -- finding raw control characters is the point
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('terminalSafe', () => {
  it('escapes ESC, BEL, OSC 8 and 52, a C1 CSI, DEL, backspace, a lone CR and NUL visibly', () => {
    const safe = terminalSafe(ALL);
    expect(safe).not.toMatch(RAW_CONTROL);
    expect(safe).toBe(
      '\\x1b[31mred\\x1b[0m ding\\x07 \\x1b]8;;https://evil.example/\\x07click me\\x1b]8;;\\x07 \\x1b]52;c;cm0gLXJmIH4K\\x07 \\u009b2J del\\x7f back\\x08space over\\x0dwrite nul\\x00',
    );
  });

  it('escapes the bidirectional overrides and isolates and the line separators that make text read otherwise', () => {
    const trojan = 'access = "user\u202e \u2066// admin\u2069 \u2066"\u2028next';
    expect(terminalSafe(trojan)).toBe('access = "user\\u202e \\u2066// admin\\u2069 \\u2066"\\u2028next');
  });

  it('keeps newlines, tabs and every printable character, and prints a CRLF line end as a newline', () => {
    const text = 'line 1\n\tindented — naïve 日本語 🙂 \\x1b stays as typed\r\nline 2';
    expect(terminalSafe(text)).toBe('line 1\n\tindented — naïve 日本語 🙂 \\x1b stays as typed\nline 2');
  });
});

describe('jsonLine', () => {
  it('prints one line of JSON with no raw control character, C1 and DEL included, that reads back as the same value', () => {
    const value = { goal: ALL, nested: [{ text: CSI_C1 }] };
    const line = jsonLine(value);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(RAW_CONTROL);
    expect(line).toContain('\\u009b2J');
    expect(line).toContain('del\\u007f');
    expect(line).toContain('\\u001b[31m');
    expect(JSON.parse(line)).toEqual(value);
  });
});
