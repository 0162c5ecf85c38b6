import { ConfigError } from './config';
import { parseJsonText, parseScript } from './script';

describe('the scripted controller file', () => {
  it('accepts a script and returns its turns', () => {
    expect(parseScript('{"turns":[{"text":"Done."}]}', '/t.json').turns).toEqual([{ text: 'Done.' }]);
  });

  it('names the file and each bad field', () => {
    expect(() => parseScript('{"turns":[{"txet":"x"}]}', '/t.json')).toThrow(ConfigError);
    expect(() => parseScript('{"turns":[]}', '/t.json')).toThrow(
      /the scripted controller file \/t.json is invalid:\n {2}- turns: a script needs at least one turn/,
    );
  });

  it('never quotes the content of a file that is not JSON', () => {
    const secret = 'root:x:0:0:root:/root:/bin/bash';
    const err = (() => {
      try {
        parseJsonText(secret, 'the scripted controller file /etc/passwd');
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toMatch(/^the scripted controller file \/etc\/passwd is not valid JSON \(Unexpected token\)$/);
    expect(err?.message).not.toMatch(/root/);
    expect(() => parseJsonText('{"a": 1,}', 'f')).toThrow(
      /f is not valid JSON \(Expected double-quoted property name in JSON at position 8\)/,
    );
  });
});
