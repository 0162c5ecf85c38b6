import { devApiRefusal, type DevApiRequest } from './dev-api';

const JSON_POST: DevApiRequest = { method: 'POST', host: '127.0.0.1:8080', contentType: 'application/json' };

describe('devApiRefusal', () => {
  it('serves loopback names with any port, in any case', () => {
    for (const host of ['127.0.0.1', '127.0.0.1:8080', 'localhost', 'LOCALHOST:3000', '[::1]', '[::1]:8080'])
      expect([host, devApiRefusal({ method: 'GET', host })]).toEqual([host, undefined]);
  });

  it('refuses any other Host, saying what it was and how to call the API instead', () => {
    for (const host of [
      'evil.example',
      'evil.example:8080',
      'localhost.',
      '127.0.0.1.nip.io',
      '0.0.0.0:8080',
      '[::1]x',
    ])
      expect([host, devApiRefusal({ method: 'GET', host })]).toEqual([
        host,
        expect.stringContaining(`this one was addressed to '${host}'`),
      ]);
    const missing = devApiRefusal({ method: 'GET' });
    expect(missing).toContain('addressed to no host');
    expect(missing).toContain('Call it at http://127.0.0.1:<port>');
    expect(missing).toContain('STARRY_API_JWT_SECRET');
  });

  it('takes a JSON POST, PUT, PATCH or DELETE with no Origin (curl, the CLI) or its own', () => {
    expect(devApiRefusal(JSON_POST)).toBeUndefined();
    expect(devApiRefusal({ ...JSON_POST, method: 'PATCH', contentType: 'application/json; charset=utf-8' })).toBe(
      undefined,
    );
    expect(devApiRefusal({ ...JSON_POST, origin: 'http://127.0.0.1:8080', secFetchSite: 'same-origin' })).toBe(
      undefined,
    );
    expect(devApiRefusal({ ...JSON_POST, secFetchSite: 'none' })).toBeUndefined();
  });

  it('refuses a mutating request from another origin, or one the browser calls cross-site or same-site', () => {
    const evil = devApiRefusal({ ...JSON_POST, origin: 'https://evil.example', secFetchSite: 'cross-site' });
    expect(evil).toContain("this one came from the origin 'https://evil.example' (Sec-Fetch-Site: cross-site)");
    expect(evil).toContain('its own origin (http://127.0.0.1:8080)');
    expect(evil).toContain('Call it with curl or the CLI');
    // Another port of the same machine is another origin (the browser calls it same-site).
    expect(devApiRefusal({ ...JSON_POST, origin: 'http://localhost:3000' })).toContain("'http://localhost:3000'");
    expect(devApiRefusal({ ...JSON_POST, secFetchSite: 'same-site' })).toContain(
      'came from another site (Sec-Fetch-Site: same-site)',
    );
    expect(devApiRefusal({ ...JSON_POST, origin: 'null' })).toContain("the origin 'null'");
    expect(devApiRefusal({ ...JSON_POST, method: 'DELETE', secFetchSite: 'cross-site' })).toContain('takes DELETE');
  });

  it('refuses a mutating request without a JSON body, saying how to send one', () => {
    for (const contentType of [
      undefined,
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const refusal = devApiRefusal({ ...JSON_POST, contentType });
      expect(refusal).toContain('must carry a JSON body with Content-Type: application/json');
      expect(refusal).toContain(`-H 'content-type: application/json' -d '{}'`);
    }
    expect(devApiRefusal({ ...JSON_POST, contentType: undefined })).toContain('(sent: none)');
  });

  it('lets reads through whatever their origin or body: another origin cannot read their answers', () => {
    expect(devApiRefusal({ method: 'GET', host: 'localhost:8080', origin: 'https://evil.example' })).toBeUndefined();
    expect(devApiRefusal({ method: 'head', host: 'localhost' })).toBeUndefined();
  });
});
